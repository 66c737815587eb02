import Contexts
import Policies
import Testing

/// The contract's deletions table, row by row, for every built-in policy.
///
/// The store holds Ann (30, Oslo) at v1; A and B fetch her; B acts and saves; A acts and saves.
@Suite("Contract: deletions")
struct DeletionTableTests {
    enum Row: String, CaseIterable, Sendable {
        case updatedHereDeletedInStore, deletedHereUpdatedInStore, deletedOnBothSides, markedUnchangedStoreChanged
    }

    enum Expected: Sendable, Equatable {
        case saveFails
        case deletedInContext
        case reinsertedWithOurs
        case deleteCancelledHoldsTheirs
        case deleteWins
        case saveSucceeds
        case refreshedToTheirs
        case oursWrittenAncestorValues
    }

    /// The contract's table, transcribed by hand.
    static let table: [Row: [String: Expected]] = [
        .updatedHereDeletedInStore: [
            "error": .saveFails, "storeTrump": .deletedInContext, "objectTrump": .reinsertedWithOurs,
            "overwrite": .reinsertedWithOurs, "rollback": .deletedInContext,
        ],
        .deletedHereUpdatedInStore: [
            "error": .saveFails, "storeTrump": .deleteCancelledHoldsTheirs, "objectTrump": .deleteWins,
            "overwrite": .deleteWins, "rollback": .deleteCancelledHoldsTheirs,
        ],
        .deletedOnBothSides: [
            "error": .saveSucceeds, "storeTrump": .saveSucceeds, "objectTrump": .saveSucceeds,
            "overwrite": .saveSucceeds, "rollback": .saveSucceeds,
        ],
        .markedUnchangedStoreChanged: [
            "error": .saveFails, "storeTrump": .refreshedToTheirs, "objectTrump": .refreshedToTheirs,
            "overwrite": .oursWrittenAncestorValues, "rollback": .refreshedToTheirs,
        ],
    ]

    /// The conflict kind each row must report (none for both-deleted).
    static let kind: [Row: ConflictKind?] = [
        .updatedHereDeletedInStore: .updateDelete,
        .deletedHereUpdatedInStore: .deleteUpdate,
        .deletedOnBothSides: nil,
        .markedUnchangedStoreChanged: .updateUpdate,
    ]

    static let ancestor = person("Ann", 30, "Oslo")
    static let ours = person("Ann", 40, "Oslo")
    static let theirs = person("Ann", 31, "Oslo")

    static func run(_ row: Row, _ policyName: String) throws -> ScenarioOutcome {
        let policy = policiesByName[policyName]!
        switch row {
        case .updatedHereDeletedInStore:
            return try runContractScenario(
                policy: policy, ancestor: ancestor,
                theirs: { context, object in context.delete(object) },
                ours: { _, object in object["age"] = .int(40) })
        case .deletedHereUpdatedInStore:
            return try runContractScenario(
                policy: policy, ancestor: ancestor,
                theirs: { _, object in object["age"] = .int(31) },
                ours: { context, object in context.delete(object) })
        case .deletedOnBothSides:
            return try runContractScenario(
                policy: policy, ancestor: ancestor,
                theirs: { context, object in context.delete(object) },
                ours: { context, object in context.delete(object) })
        case .markedUnchangedStoreChanged:
            return try runContractScenario(
                policy: policy, ancestor: ancestor,
                theirs: { _, object in object["age"] = .int(31) },
                ours: { context, object in context.detectConflicts(for: object) })
        }
    }

    @Test("each row under each policy", arguments: Row.allCases, policyNames)
    func row(row: Row, policyName: String) throws {
        let expected = try #require(Self.table[row]?[policyName])
        let outcome = try Self.run(row, policyName)
        let originalID = outcome.objectID
        switch expected {
        case .saveFails:
            let error = try #require(outcome.mergeError, "expected a MergeError, got \(outcome.saveError ?? "success")")
            #expect(error.conflicts.map(\.kind) == [Self.kind[row]!])
            // Nothing written, and A keeps its pending change.
            switch row {
            case .updatedHereDeletedInStore:
                #expect(outcome.store == nil)
                #expect(outcome.objectValues == Self.ours)
                #expect(outcome.objectHasChanges)
            case .deletedHereUpdatedInStore:
                #expect(outcome.store == Self.theirs)
                #expect(outcome.objectIsDeleted)
            case .markedUnchangedStoreChanged:
                #expect(outcome.store == Self.theirs)
                #expect(outcome.storeVersion == 2)
                #expect(outcome.objectValues == Self.ancestor)
            case .deletedOnBothSides:
                Issue.record("the contract says this row never fails")
            }
        case .deletedInContext:
            #expect(outcome.saveError == nil)
            #expect(outcome.store == nil)
            #expect(!outcome.objectIsRegistered, "A must no longer hold the object")
        case .reinsertedWithOurs:
            #expect(outcome.saveError == nil)
            #expect(outcome.store == Self.ours)
            // Deleted at version 1 (a tombstone keeps it), so the re-insert continues at 2:
            // a key's record version never repeats.
            #expect(outcome.storeVersion == TestBackend.current.reinsertedVersion(deletedAt: 1), "a re-inserted record continues from its deleted version")
            #expect(outcome.objectIsRegistered)
            #expect(outcome.objectID == originalID)
            #expect(outcome.objectID.primaryKey == 1, "a re-inserted object keeps its object ID")
            #expect(outcome.objectValues == Self.ours)
            #expect(!outcome.objectHasChanges)
            #expect(outcome.committedVersion == TestBackend.current.reinsertedVersion(deletedAt: 1))
        case .deleteCancelledHoldsTheirs:
            #expect(outcome.saveError == nil)
            #expect(outcome.store == Self.theirs)
            #expect(outcome.storeVersion == 2)
            #expect(outcome.objectIsRegistered)
            #expect(!outcome.objectIsDeleted)
            #expect(outcome.objectValues == Self.theirs)
            #expect(!outcome.objectHasChanges)
            #expect(outcome.committedVersion == 2)
        case .deleteWins:
            #expect(outcome.saveError == nil)
            #expect(outcome.store == nil)
            #expect(!outcome.objectIsRegistered)
        case .saveSucceeds:
            #expect(outcome.saveError == nil)
            #expect(outcome.store == nil)
            #expect(!outcome.objectIsRegistered)
            #expect(outcome.conflicts.isEmpty, "both deleted is not a conflict: the policy is not asked")
        case .refreshedToTheirs:
            #expect(outcome.saveError == nil)
            #expect(outcome.store == Self.theirs)
            #expect(outcome.storeVersion == 2, "nothing written")
            #expect(outcome.objectValues == Self.theirs)
            #expect(!outcome.objectHasChanges)
            #expect(outcome.committedVersion == 2)
        case .oursWrittenAncestorValues:
            #expect(outcome.saveError == nil)
            #expect(outcome.store == Self.ancestor)
            #expect(outcome.storeVersion == 3)
            #expect(outcome.objectValues == Self.ancestor)
            #expect(outcome.committedVersion == 3)
        }
        if let kind = Self.kind[row] ?? nil, policyName != "error" {
            #expect(outcome.conflicts.map(\.kind) == [kind])
        }
    }
}
