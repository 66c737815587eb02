import Contexts
import Foundation
import Policies

/// What a contract scenario ended with, read on context A's queue right after A's save.
struct ScenarioOutcome: Sendable {
    /// The error A's save threw, described; nil when it succeeded.
    var saveError: String?
    var mergeError: MergeError?
    /// The store's record of the object afterwards.
    var store: PropertyValues?
    var storeVersion: UInt64
    /// A's object afterwards: nil values when A no longer holds it.
    var objectValues: PropertyValues?
    var objectIsRegistered: Bool
    var objectIsDeleted: Bool
    var objectHasChanges: Bool
    var objectID: ObjectID
    var committedValues: PropertyValues?
    var committedVersion: UInt64
    /// The conflicts A's policy was asked about.
    var conflicts: [MergeConflict]
}

/// Runs: store holds `ancestor` (v1); A and B fetch it; B does `theirs` and saves; A does
/// `ours` and saves under `policy`.
func runContractScenario(
    policy: any MergePolicy,
    ancestor: PropertyValues,
    theirs: @escaping (ObjectContext, StoredObject) -> Void,
    ours: @escaping (ObjectContext, StoredObject) -> Void
) throws -> ScenarioOutcome {
    try withTestStore { store in
        let id = try store.seed("Person", ancestor)
        let a = store.context("A", policy: policy)
        let b = store.context("B")
        try a.performAndWait { _ = try a.existingObject(with: id) }
        try b.performAndWait {
            let object = try b.existingObject(with: id)
            theirs(b, object)
            try b.save()
        }
        return try a.performAndWait {
            let object = try a.existingObject(with: id)
            ours(a, object)
            var saveError: String?
            var mergeError: MergeError?
            do {
                try a.save()
            } catch let error as MergeError {
                saveError = "\(error)"
                mergeError = error
            } catch {
                saveError = "\(error)"
            }
            let registered = a.registeredObjects.contains(object)
            let committed = try store.committed(id)
            return ScenarioOutcome(
                saveError: saveError, mergeError: mergeError,
                store: committed?.values, storeVersion: committed?.version ?? 0,
                objectValues: registered ? object.values : nil,
                objectIsRegistered: registered,
                objectIsDeleted: registered && object.isDeleted,
                objectHasChanges: registered && object.hasChanges,
                objectID: object.objectID,
                committedValues: registered ? object.committedValues : nil,
                committedVersion: registered ? object.committedVersion : 0,
                conflicts: a.lastSaveConflicts)
        }
    }
}
