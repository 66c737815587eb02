import CairnTestSupport
@testable import KVEngine
import Testing

/// `LargeBuffers` keeps the overlay's large freed buffers for the next table and group: the next
/// one must take them (else every large commit faults its memory in again), the bound must
/// hold (else an idle process keeps what it freed), and a table on a reused buffer, which holds
/// its last user's bytes, must behave exactly as one on fresh memory. Each test has its own
/// instance: `shared` serves every store the other tests open at the same time.
@Suite struct LargeBuffersTests {
    /// A buffer of `byteCount` bytes, every one 0xFF, handed to `buffers` as if freed.
    private func keepDirty(_ buffers: LargeBuffers, byteCount: Int) {
        let address = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: LargeBuffers.alignment)
        address.initializeMemory(as: UInt8.self, repeating: 0xFF, count: byteCount)
        buffers.deallocate(address, byteCount: byteCount)
    }

    @Test func theNextTableAndGroupTakeTheBuffersTheLastOnesFreed() {
        let buffers = LargeBuffers()
        do {
            let table = OverlayTable(capacity: 20_000, buffers: buffers)
            _ = table.insertNewest(OverlayEntry(commitVersion: 1, recordVersion: 1, value: [1]),
                                   for: TableKey(table: "t", key: [1]), keepingFor: [])
        }
        // 32,768 buckets of 80 bytes and 262,144 filter counts are kept; 32 KiB of occupancy
        // bytes is below the minimum.
        let afterTable = buffers.counts
        #expect(afterTable.buffers == 2)
        #expect(afterTable.bytes == 32_768 * 80 + 262_144)
        #expect(afterTable.reuses == 0)
        do {
            let table = OverlayTable(capacity: 20_000, buffers: buffers)
            #expect(buffers.counts.reuses == 2, "the next table made its buckets and filter afresh")
            #expect(buffers.counts.buffers == 0)
            #expect(table.isEmpty)
            // A table freed after growing into kept buffers gives them back.
            let small = OverlayTable(buffers: buffers)
            for number in 0..<20_000 {
                _ = small.insertNewest(OverlayEntry(commitVersion: 1, recordVersion: 1, value: nil),
                                       for: TableKey(table: "t", key: Array("k\(number)".utf8)), keepingFor: [])
            }
        }
        #expect(buffers.counts.buffers >= 2)

        let before = buffers.counts.reuses
        do {
            var inserts = OverlayInserts(capacity: 20_000, buffers: buffers)
            inserts.append(key: TableKey(table: "t", key: [2]), entry: OverlayEntry(commitVersion: 2, recordVersion: 1, value: [2]))
        }
        let kept = buffers.counts.buffers
        do {
            let inserts = OverlayInserts(capacity: 20_000, buffers: buffers)
            #expect(inserts.count == 0)
            #expect(buffers.counts.reuses > before, "the next group's writes were not on a kept buffer")
            #expect(buffers.counts.buffers == kept - 1)
        }
    }

    /// A long-lived store: the applier drops the overlay's whole table once LMDB holds it
    /// (`didApply`), and the next large publish builds its table on that table's buffers, and
    /// holds exactly its own writes.
    @Test func aLongLivedOverlaysNextPublishTakesTheTableTheApplierDropped() {
        let buffers = LargeBuffers()
        var state = OverlayState()
        state.buffers = buffers
        state.entries = OverlayTable(buffers: buffers)
        let keys = (0..<20_000).map { TableKey(table: "items", key: Array("item-\($0)".utf8)) }
        var reusesBefore = 0
        for version in UInt64(1)...3 {
            do {
                var inserts = OverlayInserts(capacity: keys.count, buffers: buffers)
                for (number, key) in keys.enumerated() where (number + Int(version)) % 2 == 0 {
                    inserts.append(key: key, entry: OverlayEntry(commitVersion: version, recordVersion: version, value: [UInt8(version)]))
                }
                _ = state.publish([LoggedCommit(version: version, operations: [])], inserts: &inserts)
            }
            if version > 1 {
                #expect(buffers.counts.reuses >= reusesBefore + 2, "publish \(version) built its table afresh")
            }
            #expect(state.entries.count == keys.count / 2)
            for (number, key) in keys.enumerated() {
                let held = state.entries[key]?.newest
                #expect((held != nil) == ((number + Int(version)) % 2 == 0), "publish \(version), key \(number)")
                if let held { #expect(held.commitVersion == version && held.value == [UInt8(version)]) }
            }
            let dropped = state.didApply(through: version, count: 1, newTables: [:])
            #expect(dropped != nil, "the applier kept the table")
            #expect(state.entries.isEmpty)
            _ = consume dropped
            reusesBefore = buffers.counts.reuses
            #expect(buffers.counts.buffers >= 2, "the dropped table's buffers were not kept")
        }
    }

    @Test func theBoundHoldsAndTheOldestGoesFirst() {
        let buffers = LargeBuffers(minimumBytes: 100_000, maximumBytes: 1_000_000, maximumCount: 3)
        for _ in 0..<5 { keepDirty(buffers, byteCount: 300_000) }
        #expect(buffers.counts.buffers == 3)
        #expect(buffers.counts.bytes == 900_000)
        keepDirty(buffers, byteCount: 450_000)
        // Room for 450,000 more bytes: two of the 300,000 go, though the count allows three.
        #expect(buffers.counts.buffers == 2)
        #expect(buffers.counts.bytes == 750_000)
        keepDirty(buffers, byteCount: 1_000_001)
        keepDirty(buffers, byteCount: 99_999)
        #expect(buffers.counts.bytes == 750_000, "a buffer above the bound or below the minimum was kept")

        // Too large for the request (over twice it), too small, below the minimum: made afresh.
        for byteCount in [140_000, 500_000, 90_000] {
            let (address, size) = buffers.allocate(byteCount: byteCount)
            #expect(size == byteCount)
            address.deallocate()
        }
        #expect(buffers.counts.reuses == 0)
        // The smallest that fits: the 300,000 for a request of 250,000, then the 450,000.
        let first = buffers.allocate(byteCount: 250_000)
        #expect(first.byteCount == 300_000)
        let second = buffers.allocate(byteCount: 250_000)
        #expect(second.byteCount == 450_000)
        #expect(buffers.counts.reuses == 2)
        #expect(buffers.counts.buffers == 0 && buffers.counts.bytes == 0)
        first.address.deallocate()
        second.address.deallocate()
    }

    /// Tables grown, shrunk and dropped on buffers full of 0xFF (each doubling and each new
    /// table takes one) agree with a `Dictionary`: an occupancy byte left set would be a key
    /// found where none is; a filter count left set would never rule a key out.
    @Test(arguments: [UInt64(11), 12, 13])
    func tablesOnReusedBuffersAgreeWithADictionary(seed: UInt64) {
        let buffers = LargeBuffers(minimumBytes: 0, maximumBytes: 64 << 20, maximumCount: 64)
        var size = 16
        while size <= 8_192 {
            for perBucket in [80, 1, 8] { keepDirty(buffers, byteCount: size * perBucket) }
            size *= 2
        }
        var random = SeededRandom(seed: seed)
        for round in 0..<4 {
            let table = OverlayTable(capacity: round == 0 ? 0 : Int(random.next() % 3_000), buffers: buffers)
            var model: [TableKey: UInt64] = [:]
            let keys = (0..<2_000).map { TableKey(table: $0 % 3 == 0 ? "other" : "items", key: Array("key-\($0)".utf8)) }
            for step in 0..<12_000 {
                let tableKey = keys[Int(random.next() % UInt64(keys.count))]
                if random.next() % 3 != 0 {
                    let (replaced, isNew) = table.insertNewest(OverlayEntry(commitVersion: UInt64(step), recordVersion: 1, value: [1]),
                                                               for: tableKey, keepingFor: [])
                    #expect(isNew == (model[tableKey] == nil), "round \(round) step \(step)")
                    #expect(replaced?.commitVersion == model[tableKey], "round \(round) step \(step)")
                    model[tableKey] = UInt64(step)
                } else if let index = table.bucket(of: tableKey) {
                    #expect(table.remove(at: index).newest.commitVersion == model[tableKey], "round \(round) step \(step)")
                    model[tableKey] = nil
                } else {
                    #expect(model[tableKey] == nil, "round \(round) step \(step): a key was lost")
                }
            }
            #expect(table.count == model.count)
            #expect(Set(table.keys) == Set(model.keys))
            for tableKey in keys { #expect(table[tableKey]?.newest.commitVersion == model[tableKey]) }
            for tableKey in model.keys {
                if let index = table.bucket(of: tableKey) { table.remove(at: index) }
            }
            #expect(table.isEmpty)
            #expect(!keys.contains { key in key.key.withUnsafeBytes { table.mayHold($0) } }, "a filter count was left set")
        }
        #expect(buffers.counts.reuses > 4, "the tables were not made on kept buffers")
    }
}
