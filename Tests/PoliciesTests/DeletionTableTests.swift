import Policies
import Testing

/// The contract's deletion table, for the three rows that reach a policy.
///
/// The fourth row (deleted on both sides: every save succeeds) never reaches a policy: the
/// context recognises it before asking, and the context's tests cover it. Here we check the
/// policy side of that promise: such a conflict cannot even be built.
@Suite("Deletion table")
struct DeletionTableTests {
    enum Row: String, CaseIterable, CustomTestStringConvertible {
        case updatedLocallyDeletedInStore = "updated locally, deleted in store"
        case deletedLocallyUpdatedInStore = "deleted locally, updated in store"
        case markedUnchangedStoreChanged = "unchanged locally, detectConflicts marked, store changed"

        var testDescription: String { rawValue }

        var conflict: MergeConflict {
            switch self {
            case .updatedLocallyDeletedInStore: Fixture.updateDelete()
            case .deletedLocallyUpdatedInStore: Fixture.deleteUpdate()
            case .markedUnchangedStoreChanged: Fixture.markedUnchanged()
            }
        }
    }

    /// The contract's wording, one case per distinct cell.
    enum Cell {
        case saveFails
        case deletedInContext
        case reinsertedWithOurs
        case deleteCancelledHoldsTheirs
        case deleteWins
        case refreshedToTheirs
        case oursWrittenAncestorValues
    }

    /// Copied from the contract; columns: error, storeTrump, objectTrump, overwrite, rollback.
    static let table: [Row: [Cell]] = [
        .updatedLocallyDeletedInStore:
            [.saveFails, .deletedInContext, .reinsertedWithOurs, .reinsertedWithOurs, .deletedInContext],
        .deletedLocallyUpdatedInStore:
            [.saveFails, .deleteCancelledHoldsTheirs, .deleteWins, .deleteWins, .deleteCancelledHoldsTheirs],
        .markedUnchangedStoreChanged:
            [.saveFails, .refreshedToTheirs, .refreshedToTheirs, .oursWrittenAncestorValues, .refreshedToTheirs],
    ]

    /// What each cell means as a resolution, for the row's fixture.
    static func expectedResolution(_ cell: Cell, for conflict: MergeConflict) -> Resolution? {
        switch cell {
        case .saveFails: nil
        // Take the store's state: it is gone, so the context deletes its object.
        case .deletedInContext: .takeStore
        case .reinsertedWithOurs: .write(Fixture.person(age: 40))
        case .deleteCancelledHoldsTheirs: .takeStore
        case .deleteWins: .delete
        case .refreshedToTheirs: .takeStore
        case .oursWrittenAncestorValues: .write(Fixture.ancestor)
        }
    }

    @Test("each cell of the table", arguments: policyColumns, Row.allCases)
    func cell(policyName: String, row: Row) throws {
        let policy = try #require(builtInPolicies[policyName])
        let column = try #require(policyColumns.firstIndex(of: policyName))
        let cell = try #require(Self.table[row]?[column])
        let conflict = row.conflict

        if let expected = Self.expectedResolution(cell, for: conflict) {
            #expect(try policy.resolve([conflict]) == [expected])
        } else {
            let error = #expect(throws: MergeError.self) { try policy.resolve([conflict]) }
            #expect(error?.conflicts == [conflict])
        }
    }

    @Test("the three deletion-table kinds and constraint are exactly the policy-consulted cases; both-deleted is none of them")
    func kinds() {
        #expect(ConflictKind.allCases == [.updateUpdate, .updateDelete, .deleteUpdate, .constraint])
    }

    @Test("a both-deleted conflict cannot be built")
    func bothDeletedIsRejected() async {
        await #expect(processExitsWith: .failure) {
            _ = MergeConflict(
                objectID: "cairn://Person/p1", kind: .updateDelete,
                ancestorValues: ["age": .int(30)], ancestorVersion: 1,
                ourValues: nil, storeValues: nil, storeVersion: 0)
        }
        await #expect(processExitsWith: .failure) {
            _ = MergeConflict(
                objectID: "cairn://Person/p1", kind: .deleteUpdate,
                ancestorValues: ["age": .int(30)], ancestorVersion: 1,
                ourValues: nil, storeValues: nil, storeVersion: 0)
        }
    }
}
