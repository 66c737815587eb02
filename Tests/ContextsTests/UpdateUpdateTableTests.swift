import Contexts
import Policies
import Testing

/// The contract's "update in the context, update in the store" table, row by row, for every
/// built-in policy, through contexts and a real store.
///
/// One scenario exercises all four rows at once, one property per row (the example of
/// Docs/MergePolicies.md plus an untouched `note`): the store holds
/// {name: Ann, age: 30, city: Oslo, note: keep} at v1; B sets name Anna and age 31 and saves
/// (v2); A, still at v1, sets age 40 and city Rome and saves.
@Suite("Contract: update here, update in the store")
struct UpdateUpdateTableTests {
    enum Row: String, CaseIterable, Sendable {
        case locallyOnly, inStoreOnly, onBothSides, onNeither
    }

    enum Expected: Sendable, Equatable {
        case saveFails, ours, theirs, same
    }

    /// The contract's table, transcribed by hand. Column order: error, storeTrump,
    /// objectTrump, overwrite, rollback. (For "on neither" the contract's error column is "—";
    /// the save fails because of the other rows, which is what we check.)
    static let table: [Row: [String: Expected]] = [
        .locallyOnly: ["error": .saveFails, "storeTrump": .ours, "objectTrump": .ours, "overwrite": .ours, "rollback": .theirs],
        .inStoreOnly: ["error": .saveFails, "storeTrump": .theirs, "objectTrump": .theirs, "overwrite": .ours, "rollback": .theirs],
        .onBothSides: ["error": .saveFails, "storeTrump": .theirs, "objectTrump": .ours, "overwrite": .ours, "rollback": .theirs],
        .onNeither: ["error": .saveFails, "storeTrump": .same, "objectTrump": .same, "overwrite": .same, "rollback": .same],
    ]

    /// Which property plays which row, and its ancestor / ours / theirs values.
    static let property: [Row: String] = [.locallyOnly: "city", .inStoreOnly: "name", .onBothSides: "age", .onNeither: "note"]
    static let ancestorValues: PropertyValues = ["name": .string("Ann"), "age": .int(30), "city": .string("Oslo"), "note": .string("keep")]
    static let ourValues: PropertyValues = ["name": .string("Ann"), "age": .int(40), "city": .string("Rome"), "note": .string("keep")]
    static let theirValues: PropertyValues = ["name": .string("Anna"), "age": .int(31), "city": .string("Oslo"), "note": .string("keep")]

    static func run(_ policyName: String) throws -> ScenarioOutcome {
        try runContractScenario(
            policy: policiesByName[policyName]!, ancestor: ancestorValues,
            theirs: { _, object in
                object["name"] = .string("Anna")
                object["age"] = .int(31)
            },
            ours: { _, object in
                object["age"] = .int(40)
                object["city"] = .string("Rome")
            })
    }

    @Test("each row under each policy", arguments: policyNames, Row.allCases)
    func row(policyName: String, row: Row) throws {
        let expected = try #require(Self.table[row]?[policyName])
        let property = Self.property[row]!
        let outcome = try Self.run(policyName)
        if expected == .saveFails {
            #expect(outcome.mergeError != nil, "the save must fail with a MergeError, got \(outcome.saveError ?? "success")")
            // Nothing written: the store still holds B's save.
            #expect(outcome.store == Self.theirValues)
            #expect(outcome.storeVersion == 2)
            // The context keeps its changes.
            #expect(outcome.objectValues == Self.ourValues)
            #expect(outcome.objectHasChanges)
            return
        }
        #expect(outcome.saveError == nil)
        let want: AttributeValue
        switch expected {
        case .ours: want = Self.ourValues.value(of: property)
        case .theirs: want = Self.theirValues.value(of: property)
        case .same: want = Self.ancestorValues.value(of: property)
        case .saveFails: return
        }
        #expect(outcome.store?.value(of: property) == want, "store's \(property)")
        #expect(outcome.objectValues?.value(of: property) == want, "A's in-memory \(property)")
        // After any successful save the ancestor is what the store holds, with its version.
        #expect(outcome.committedValues == outcome.store)
        #expect(outcome.committedVersion == outcome.storeVersion)
        #expect(!outcome.objectHasChanges)
        // The policy saw exactly one update/update conflict at A's ancestor and B's version.
        #expect(outcome.conflicts.map(\.kind) == [.updateUpdate])
        #expect(outcome.conflicts.first?.ancestorVersion == 1)
        #expect(outcome.conflicts.first?.storeVersion == 2)
    }

    /// Docs/MergePolicies.md "The built-in policies by example": the store afterwards,
    /// transcribed (the `note` column added by this test stays "keep" everywhere).
    @Test("the docs' example, whole store afterwards", arguments: [
        ("error", "Anna", Int64(31), "Oslo", UInt64(2)),
        ("storeTrump", "Anna", 31, "Rome", 3),
        ("objectTrump", "Anna", 40, "Rome", 3),
        ("overwrite", "Ann", 40, "Rome", 3),
        ("rollback", "Anna", 31, "Oslo", 2),
    ])
    func docsExample(policyName: String, name: String, age: Int64, city: String, version: UInt64) throws {
        let outcome = try Self.run(policyName)
        #expect(outcome.store == ["name": .string(name), "age": .int(age), "city": .string(city), "note": .string("keep")])
        #expect(outcome.storeVersion == version)
        #expect((outcome.saveError == nil) == (policyName != "error"))
    }

    @Test("rollback leaves the conflicting object holding theirs, clean, and writes nothing for it")
    func rollbackHoldsTheirs() throws {
        let outcome = try Self.run("rollback")
        #expect(outcome.objectValues == Self.theirValues)
        #expect(!outcome.objectHasChanges)
        #expect(outcome.committedVersion == 2)
        #expect(outcome.storeVersion == 2)
    }
}
