import CairnTestSupport
import KVEngine
import Locking
import Testing

/// A scan skips the overlay for a table of which the overlay holds no key
/// (`OverlayState.keysPerTable`). These check that the count always equals the keys the
/// overlay holds per table, through publish, prune, sweep and a whole drop, and that scans
/// of tables with and without overlay keys see exactly the committed records.
@Suite struct OverlayKeyCountTests {
    /// The overlay's keys per table, counted from its entries, against its bookkeeping.
    private func expectCountsMatch(_ store: Store, _ comment: Comment) {
        store.core.overlay.withLock { state in
            var counted: [String: Int] = [:]
            for tableKey in state.entries.keys { counted[tableKey.table, default: 0] += 1 }
            #expect(state.keysPerTable == counted, comment)
        }
    }

    private func keys(_ store: Store, in table: String) throws -> [String?] {
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        return try snapshot.scan(in: table).map { text($0.key) }
    }

    @Test func theCountFollowsPublishPruneSweepAndDrop() throws {
        try withStore(lazyOptions()) { store, _ in
            var batch = WriteBatch()
            for index in 0..<5 { batch.put("v", forKey: "a\(index)", in: "alpha") }
            for index in 0..<3 { batch.put("v", forKey: "b\(index)", in: "beta") }
            batch.put("v", forKey: "a9", in: "alpha")
            try store.commit(batch)
            expectCountsMatch(store, "after the first publish")
            // Rewrites and a delete of keys already there add no key; a new table does.
            try store.put("a0", "again", in: "alpha")
            var delete = WriteBatch()
            delete.delete("b1", in: "beta")
            try store.commit(delete)
            try store.put("g0", "v", in: "gamma")
            expectCountsMatch(store, "after rewrites, a delete and a new table")
            #expect(store.core.overlay.withLock { $0.keysPerTable } == ["alpha": 6, "beta": 3, "gamma": 1])

            // A snapshot keeps the entries it may read; the apply prunes the rest.
            let pinned = try store.snapshot()
            try store.put("a0", "third", in: "alpha")
            try store.flush()
            expectCountsMatch(store, "after an apply with a snapshot open")
            #expect(try keys(store, in: "alpha") == ["a0", "a1", "a2", "a3", "a4", "a9"])
            #expect(try keys(store, in: "beta") == ["b0", "b2"])
            #expect(try keys(store, in: "delta") == [])
            pinned.close()  // the sweep drops what only it needed
            expectCountsMatch(store, "after the pinning snapshot closed")

            // New writes to one table, nothing in the others: their scans skip the overlay
            // and read LMDB alone, and still see every record.
            try store.put("b7", "v", in: "beta")
            expectCountsMatch(store, "after a write to one table")
            #expect(store.core.overlay.withLock { $0.keysPerTable["alpha"] } == nil)
            #expect(try keys(store, in: "alpha") == ["a0", "a1", "a2", "a3", "a4", "a9"])
            #expect(try keys(store, in: "beta") == ["b0", "b2", "b7"])
            #expect(try keys(store, in: "gamma") == ["g0"])
            #expect(try store.string("a0", in: "alpha") == "third")

            try store.flush()  // nothing pinned: the overlay is dropped whole
            expectCountsMatch(store, "after the whole overlay was dropped")
            #expect(store.core.overlay.withLock { $0.keysPerTable.isEmpty })
            #expect(try keys(store, in: "beta") == ["b0", "b2", "b7"])
        }
    }

    @Test func theCountStaysExactUnderConcurrentWritersAndTheApplier() throws {
        try withStore(busyOptions()) { store, _ in
            let tables = ["t0", "t1", "t2"]
            let pinned = ConditionLock<Snapshot?>(nil)
            DispatchApply.run(4) { thread in
                for round in 0..<150 {
                    var batch = WriteBatch()
                    for index in 0..<3 {
                        batch.put("v\(round)", forKey: "k\(thread)-\((round * 3 + index) % 40)", in: tables[(round + index) % 3])
                    }
                    if round % 7 == 0 { batch.delete("k\(thread)-\(round % 40)", in: tables[round % 3]) }
                    _ = try? store.commit(batch)
                    if thread == 0, round % 25 == 0 {
                        // Snapshots opening and closing make the applier keep and sweep.
                        let old = pinned.withLock { slot in defer { slot = try? store.snapshot() }; return slot }
                        old?.close()
                    }
                }
            }
            pinned.withLock { $0?.close() }
            expectCountsMatch(store, "after the writers")
            try store.flush()
            expectCountsMatch(store, "after the final apply")
        }
    }
    /// `Snapshot.estimatedRecordCount(in:)` sizes a fetch's arrays: it must never be below what a
    /// scan visits (or a fetch would regrow), and is exact when LMDB and the overlay hold
    /// different keys.
    @Test func theEstimateIsNeverBelowWhatAScanVisits() throws {
        try withStore(lazyOptions()) { store, _ in
            func check(_ table: String, exact: Bool, _ comment: Comment) throws {
                let snapshot = try store.snapshot()
                defer { snapshot.close() }
                let visited = try snapshot.scan(in: table).count
                let estimate = try snapshot.estimatedRecordCount(in: table)
                #expect(estimate >= visited, comment)
                if exact { #expect(estimate == visited, comment) }
            }
            try check("t", exact: true, "an empty table")
            var batch = WriteBatch()
            for index in 0..<40 { batch.put("v", forKey: "k\(index)", in: "t") }
            try store.commit(batch)
            try check("t", exact: true, "keys in the overlay only")
            try store.flush()
            try check("t", exact: true, "keys in LMDB only")
            batch = WriteBatch()
            for index in 40..<50 { batch.put("v", forKey: "k\(index)", in: "t") }
            try store.commit(batch)
            try check("t", exact: true, "new keys in the overlay over LMDB's")
            batch = WriteBatch()
            for index in 0..<10 { batch.put("w", forKey: "k\(index)", in: "t") }
            for index in 10..<15 { batch.delete("k\(index)", in: "t") }
            try store.commit(batch)
            try check("t", exact: false, "rewrites and deletes of LMDB's keys in the overlay")
            try store.flush()
            try check("t", exact: true, "after the apply, deletes counted as tombstones")
            try check("other", exact: true, "a table never written")
        }
    }
}
