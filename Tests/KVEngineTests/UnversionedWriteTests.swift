import CairnTestSupport
import KVEngine
import Testing

/// Unversioned writes (`WriteBatch.putUnversioned`/`deleteUnversioned`, the index tables' kind):
/// a put stores version 0, a delete removes the LMDB entry outright, and both are as atomic,
/// recoverable and snapshot-consistent as versioned operations.
@Suite struct UnversionedWriteTests {
    /// LMDB's entries in `table` of a closed store, tombstones included.
    func storedEntries(_ directory: TemporaryDirectory, _ table: String) throws -> Int {
        try LMDBVerifier.verify(path: directory.path + "/data.mdb").trees[table]?.entries ?? 0
    }

    func key(_ index: Int) -> [UInt8] { bytes("e\(index)") }

    @Test func anUnversionedDeleteLeavesNoEntryBehindEvenAfterChurn() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        // The same two keys come and go 200 times: only the last live one stays in LMDB.
        for round in 0..<200 {
            var batch = WriteBatch()
            batch.deleteUnversioned(key(round % 2), in: "idx")
            batch.putUnversioned([UInt8(round & 0xFF)], forKey: key((round + 1) % 2), in: "idx")
            try store.commit(batch)
            if round % 50 == 0 { try store.flush() }
        }
        let snapshot = try store.snapshot()
        #expect(try snapshot.scan(in: "idx").map(\.key) == [key(0)])
        #expect(try snapshot.get(key(0), in: "idx")?.version == 0)
        #expect(try snapshot.get(key(1), in: "idx") == nil)
        snapshot.close()
        try store.flush()
        #expect(try store.stats().recordCount == 1)
        store.close()
        #expect(try storedEntries(directory, "idx") == 1)
        let report = try Store.check(directory: directory.path)
        #expect(report.isSound, "\(report.problems)")
        #expect(report.recordsPerTable["idx"] == 1)
    }

    @Test func unversionedWritesAreReplayedFromTheLogAfterACrash() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path, options: lazyOptions())
        var batch = WriteBatch()
        for index in 0..<10 { batch.putUnversioned([UInt8(index)], forKey: key(index), in: "idx") }
        batch.put("record", forKey: "r")
        try store.commit(batch)
        batch = WriteBatch()
        for index in stride(from: 0, to: 10, by: 2) { batch.deleteUnversioned(key(index), in: "idx") }
        batch.deleteUnversioned(bytes("never-existed"), in: "idx")
        batch.deleteUnversioned(bytes("nothing"), in: "no-such-table")
        try store.commit(batch)
        store.simulateCrash()

        let reopened = try Store(directory: directory.path)
        let snapshot = try reopened.snapshot()
        #expect(try snapshot.scan(in: "idx").map(\.key) == [1, 3, 5, 7, 9].map(key))
        #expect(try snapshot.scan(in: "idx").allSatisfy { $0.version == 0 })
        snapshot.close()
        try reopened.flush()
        reopened.close()
        #expect(try storedEntries(directory, "idx") == 5)
        #expect(try LMDBVerifier.verify(path: directory.path + "/data.mdb").trees["no-such-table"] == nil)
        let report = try Store.check(directory: directory.path)
        #expect(report.isSound, "\(report.problems)")
    }

    @Test func aSnapshotKeepsSeeingWhatAnUnversionedDeleteRemoved() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        defer { store.close() }
        var batch = WriteBatch()
        batch.putUnversioned([7], forKey: key(1), in: "idx")
        try store.commit(batch)
        try store.flush()
        let before = try store.snapshot()
        defer { before.close() }
        batch = WriteBatch()
        batch.deleteUnversioned(key(1), in: "idx")
        try store.commit(batch)
        for flushFirst in [false, true] {
            if flushFirst { try store.flush() }
            #expect(try before.get(key(1), in: "idx")?.value == [7])
            let after = try store.snapshot()
            #expect(try after.get(key(1), in: "idx") == nil)
            #expect(try after.scan(in: "idx").isEmpty)
            after.close()
        }
    }

    /// A table whose keys were deleted with versions (a store written before index entries
    /// were unversioned) holds tombstones: unversioned writes over them keep the count exact.
    @Test func unversionedWritesOverOldTombstonesKeepTheTombstoneCountExact() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        var batch = WriteBatch()
        for index in 0..<4 { batch.put([1], forKey: key(index), in: "idx") }
        try store.commit(batch)
        batch = WriteBatch()
        for index in 0..<4 { batch.delete(key(index), in: "idx") }
        try store.commit(batch)
        try store.flush()
        batch = WriteBatch()
        batch.putUnversioned([2], forKey: key(0), in: "idx")
        batch.deleteUnversioned(key(1), in: "idx")
        try store.commit(batch)
        try store.flush()
        #expect(try store.stats().recordCount == 1)
        store.close()
        // e0 live, e1 gone, e2 and e3 still tombstones.
        #expect(try storedEntries(directory, "idx") == 3)
        let report = try Store.check(directory: directory.path)
        #expect(report.isSound, "\(report.problems)")
        #expect(report.recordsPerTable["idx"] == 1)
    }
}
