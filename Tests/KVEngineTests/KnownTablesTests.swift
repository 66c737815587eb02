@testable import KVEngine
import Testing

/// `KnownTables` answers what the union of LMDB's tables, the pending ones and a group's new
/// ones would: the commit check refuses a put past the table limit by its count, so a table
/// counted twice would refuse a commit LMDB could take.
@Suite struct KnownTablesTests {
    @Test func itCountsAndFindsTheUnionOfItsTables() {
        // "b" both has a handle and is pending (the applier made it; the overlay's list of
        // pending tables may not have dropped it yet).
        var known = KnownTables(handles: ["a": 1, "b": 2], pending: ["b", "c"])
        #expect(known.count == 3)
        #expect(["a", "b", "c"].allSatisfy { known.contains($0) })
        #expect(!known.contains("d"))
        known.insert("d")
        #expect(known.contains("d"))
        #expect(known.count == 4)
    }
}
