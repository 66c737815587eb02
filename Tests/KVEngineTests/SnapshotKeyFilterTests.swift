import CairnTestSupport
import Testing
import KVEngine

/// A snapshot's point reads rule keys out with their own copy of the overlay's key filter
/// (`SnapshotKeyFilter`): a copy that ruled out a key the snapshot sees in the overlay would
/// answer from LMDB's older record.
@Suite struct SnapshotKeyFilterTests {
    private func key(_ number: Int) -> [UInt8] { Array("key-\(number)".utf8) }

    private func value(_ snapshot: Snapshot, _ number: Int) throws -> String? {
        try snapshot.withValue(forKey: key(number)) { value, _ in value.map { String(decoding: $0, as: UTF8.self) } }
    }

    @Test func readsThroughTheCopySeeTheOverlayAndAHeldOverSnapshotTakesAFreshCopy() throws {
        try withStore(lazyOptions()) { store, _ in
            var batch = WriteBatch()
            for number in 0..<2_000 { batch.put(Array("lmdb".utf8), forKey: key(number)) }
            try store.commit(batch)
            try store.flush()  // in LMDB now
            // Every 40th key rewritten in the overlay (the applier is lazy).
            batch = WriteBatch()
            for number in stride(from: 0, to: 2_000, by: 40) { batch.put(Array("first".utf8), forKey: key(number)) }
            try store.commit(batch)

            let first = try store.snapshot()
            #expect(!first.copiedOverlayKeyFilter, "no read yet")
            for number in 0..<2_000 {
                #expect(try value(first, number) == (number % 40 == 0 ? "first" : "lmdb"), "key \(number)")
            }
            #expect(first.copiedOverlayKeyFilter, "2,000 reads beside an overlay copy its filter")
            // Still right once the copy rules keys out, for a second pass.
            for number in stride(from: 0, to: 2_000, by: 7) {
                #expect(try value(first, number) == (number % 40 == 0 ? "first" : "lmdb"), "key \(number), again")
            }
            first.close()

            // Other keys rewritten: the holder serves the next snapshot, which must not rule
            // them out with the first snapshot's copy.
            batch = WriteBatch()
            for number in stride(from: 20, to: 2_000, by: 40) { batch.put(Array("second".utf8), forKey: key(number)) }
            try store.commit(batch)
            #expect(store.snapshotHolderCount == 1)
            let second = try store.snapshot()
            defer { second.close() }
            #expect(store.snapshotHolderCount == 0, "the first snapshot's holder serves the second")
            for number in 0..<2_000 {
                let expected = number % 40 == 0 ? "first" : number % 40 == 20 ? "second" : "lmdb"
                #expect(try value(second, number) == expected, "key \(number)")
            }
            #expect(second.copiedOverlayKeyFilter)
        }
    }

    @Test func aSnapshotWithNothingInTheOverlayCopiesNoFilter() throws {
        try withStore(lazyOptions()) { store, _ in
            var batch = WriteBatch()
            for number in 0..<100 { batch.put(Array("lmdb".utf8), forKey: key(number)) }
            try store.commit(batch)
            try store.flush()
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for number in 0..<100 { #expect(try value(snapshot, number) == "lmdb") }
            #expect(!snapshot.copiedOverlayKeyFilter, "its window (floor, version] is empty: no overlay to ask")
        }
    }

    @Test func aDeletionInTheOverlayReadsAsAbsentThroughTheCopy() throws {
        try withStore(lazyOptions()) { store, _ in
            var batch = WriteBatch()
            for number in 0..<500 { batch.put(Array("lmdb".utf8), forKey: key(number)) }
            try store.commit(batch)
            try store.flush()
            batch = WriteBatch()
            for number in stride(from: 0, to: 500, by: 10) { batch.delete(key(number)) }
            try store.commit(batch)
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for pass in 0..<2 {
                for number in 0..<500 {
                    #expect(try value(snapshot, number) == (number % 10 == 0 ? nil : "lmdb"), "key \(number), pass \(pass)")
                }
            }
            #expect(snapshot.copiedOverlayKeyFilter)
        }
    }
}
