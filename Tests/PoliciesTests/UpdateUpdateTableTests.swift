import Policies
import Testing

/// The contract's "update in the context, update in the store" table, cell by cell.
@Suite("Update/update table")
struct UpdateUpdateTableTests {
    enum Row: String, CaseIterable, CustomTestStringConvertible {
        case locallyOnly = "locally only"
        case inStoreOnly = "in store only"
        case onBothSides = "on both sides"
        case onNeither = "on neither"

        var testDescription: String { rawValue }
    }

    enum Cell {
        case saveFails
        case ours
        case theirs
        case same
        /// "—": no per-property decision; the object still fails as a whole.
        case dash
    }

    /// Copied from the contract, row for row; columns: error, storeTrump, objectTrump,
    /// overwrite, rollback.
    static let table: [Row: [Cell]] = [
        .locallyOnly: [.saveFails, .ours, .ours, .ours, .theirs],
        .inStoreOnly: [.saveFails, .theirs, .theirs, .ours, .theirs],
        .onBothSides: [.saveFails, .theirs, .ours, .ours, .theirs],
        .onNeither: [.dash, .same, .same, .same, .same],
    ]

    /// Which scenario fixture shows the row, and on which property.
    static func example(for row: Row) -> (conflict: MergeConflict, property: String) {
        switch row {
        case .locallyOnly: (Fixture.differentProperties(), "city")
        case .inStoreOnly: (Fixture.differentProperties(), "age")
        case .onBothSides: (Fixture.sameProperty(), "age")
        case .onNeither: (Fixture.differentProperties(), "name")
        }
    }

    @Test("each cell of the table", arguments: policyColumns, Row.allCases)
    func cell(policyName: String, row: Row) throws {
        let policy = try #require(builtInPolicies[policyName])
        let column = try #require(policyColumns.firstIndex(of: policyName))
        let cell = try #require(Self.table[row]?[column])
        let (conflict, property) = Self.example(for: row)
        let ancestor = conflict.ancestorValues.value(of: property)
        let ours = try #require(conflict.ourValues).value(of: property)
        let theirs = try #require(conflict.storeValues).value(of: property)

        switch cell {
        case .saveFails, .dash:
            let error = #expect(throws: MergeError.self) { try policy.resolve([conflict]) }
            #expect(error?.conflicts == [conflict])
        case .ours, .theirs, .same:
            let resolutions = try policy.resolve([conflict])
            try #require(resolutions.count == 1)
            let values = try #require(outcome(of: resolutions[0], for: conflict))
            switch cell {
            case .ours:
                #expect(ours != theirs, "fixture must tell the sides apart")
                #expect(values.value(of: property) == ours)
            case .theirs:
                #expect(ours != theirs, "fixture must tell the sides apart")
                #expect(values.value(of: property) == theirs)
            default:
                #expect(ours == ancestor && theirs == ancestor)
                #expect(values.value(of: property) == ancestor)
            }
        }
    }

    /// The whole resolution for the two update/update scenarios, as the scenario files expect
    /// the store to end up.
    @Test(
        "whole resolutions of the update/update scenarios",
        arguments: [
            ("storeTrump", Fixture.differentProperties(), Resolution.write(Fixture.person(age: 31, city: "Rome"))),
            ("objectTrump", Fixture.differentProperties(), .write(Fixture.person(age: 31, city: "Rome"))),
            ("overwrite", Fixture.differentProperties(), .write(Fixture.person(age: 30, city: "Rome"))),
            ("rollback", Fixture.differentProperties(), .takeStore),
            // storeTrump's merge of the same-property scenario is exactly the store: take it.
            ("storeTrump", Fixture.sameProperty(), .takeStore),
            ("objectTrump", Fixture.sameProperty(), .write(Fixture.person(age: 40))),
            ("overwrite", Fixture.sameProperty(), .write(Fixture.person(age: 40))),
            ("rollback", Fixture.sameProperty(), .takeStore),
        ]
    )
    func wholeResolution(policyName: String, conflict: MergeConflict, expected: Resolution) throws {
        let policy = try #require(builtInPolicies[policyName])
        #expect(try policy.resolve([conflict]) == [expected])
    }

    @Test("overwrite writes properties it never touched with the ancestor's values")
    func overwriteIsWholeObject() throws {
        // Only city changed here; the store's age 31 must be overwritten back to 30.
        let resolution = OverwriteMergePolicy().resolve([Fixture.differentProperties()])
        #expect(resolution == [.write(["name": .string("Ann"), "age": .int(30), "city": .string("Rome")])])
    }
}
