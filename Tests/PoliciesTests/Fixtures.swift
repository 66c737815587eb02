import Foundation
import Policies

/// The conflicts of the shared scenarios (the shared scenario files, copied to Tests/CairnToolTests/Scenarios/), built by hand.
///
/// Every fixture starts from the same stored person, Ann (30, Oslo), record version 1. Ours and
/// theirs are chosen so that the two sides never hold the same value for the property a test
/// looks at, so an answer from the wrong side always fails the test.
enum Fixture {
    static func person(name: String = "Ann", age: Int64 = 30, city: String = "Oslo") -> PropertyValues {
        ["name": .string(name), "age": .int(age), "city": .string(city)]
    }

    static let ancestor = person()

    /// A changes city to Rome; B changed age to 31 and saved first.
    static func differentProperties(_ id: String = "cairn://Person/p1") -> MergeConflict {
        MergeConflict(
            objectID: id, kind: .updateUpdate, ancestorValues: ancestor, ancestorVersion: 1,
            ourValues: person(city: "Rome"), storeValues: person(age: 31), storeVersion: 2)
    }

    /// A changes age to 40; B changed age to 31 and saved first.
    static func sameProperty(_ id: String = "cairn://Person/p1") -> MergeConflict {
        MergeConflict(
            objectID: id, kind: .updateUpdate, ancestorValues: ancestor, ancestorVersion: 1,
            ourValues: person(age: 40), storeValues: person(age: 31), storeVersion: 2)
    }

    /// A changes age to 40; B deleted the person and saved first.
    static func updateDelete(_ id: String = "cairn://Person/p1") -> MergeConflict {
        MergeConflict(
            objectID: id, kind: .updateDelete, ancestorValues: ancestor, ancestorVersion: 1,
            ourValues: person(age: 40), storeValues: nil, storeVersion: 0)
    }

    /// A deletes the person; B changed age to 31 and saved first.
    static func deleteUpdate(_ id: String = "cairn://Person/p1") -> MergeConflict {
        MergeConflict(
            objectID: id, kind: .deleteUpdate, ancestorValues: ancestor, ancestorVersion: 1,
            ourValues: nil, storeValues: person(age: 31), storeVersion: 2)
    }

    /// A only marks the person with detectConflicts; B changed age to 31 and saved first.
    static func markedUnchanged(_ id: String = "cairn://Person/p1") -> MergeConflict {
        MergeConflict(
            objectID: id, kind: .updateUpdate, ancestorValues: ancestor, ancestorVersion: 1,
            ourValues: ancestor, storeValues: person(age: 31), storeVersion: 2)
    }
}

/// The five built-ins, made directly from their types (not through BuiltInPolicies, which has
/// its own tests), keyed by the names the contract's tables use as column headers.
let builtInPolicies: [String: any MergePolicy] = [
    "error": ErrorMergePolicy(),
    "storeTrump": MergeByPropertyStoreTrumpPolicy(),
    "objectTrump": MergeByPropertyObjectTrumpPolicy(),
    "overwrite": OverwriteMergePolicy(),
    "rollback": RollbackMergePolicy(),
]

/// The contract's column order.
let policyColumns = ["error", "storeTrump", "objectTrump", "overwrite", "rollback"]

/// The values the object ends up committed with / holding after `resolution`, nil when deleted.
func outcome(of resolution: Resolution, for conflict: MergeConflict) -> PropertyValues? {
    switch resolution {
    case .write(let values): values
    case .takeStore: conflict.storeValues
    case .delete: nil
    }
}
