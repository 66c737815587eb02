import Testing
@testable import KVEngine

/// `OverlayInserts` moves a group's writes in and out of memory it manages itself: a write
/// taken twice, or one never taken and never released, would be a double free or a leak of
/// every value of a failed group.
@Suite struct OverlayInsertsTests {
    /// Whether `array` is referenced from nowhere else: a write to a shared array copies it.
    private func isUnique(_ array: inout [UInt8]) -> Bool {
        let before = array.withUnsafeBufferPointer { $0.baseAddress }
        array[0] ^= 0
        return array.withUnsafeBufferPointer { $0.baseAddress } == before
    }

    @Test func writesComeOutInOrderAndThoseNotTakenAreReleased() {
        var values = (0..<40).map { [UInt8(truncatingIfNeeded: $0)] + Array(repeating: 7, count: 40) }
        do {
            var inserts = OverlayInserts(capacity: 3)   // grows past its first room
            for (number, value) in values.enumerated() {
                inserts.append(key: TableKey(table: "t", key: [UInt8(number)]),
                               entry: OverlayEntry(commitVersion: UInt64(number), recordVersion: 1, value: value))
            }
            #expect(!isUnique(&values[39]))
            inserts.removeLast(from: 30)                // a failed member's writes
            #expect(inserts.count == 30)
            #expect(isUnique(&values[35]))
            for number in 0..<20 {
                let write = inserts.takeNext()
                #expect(write?.key.key == [UInt8(number)])
                #expect(write?.entry.commitVersion == UInt64(number))
            }
            #expect(!isUnique(&values[25]))             // not taken yet: still held
        }
        // Dropped with ten writes never taken: each value is referenced by `values` alone.
        for index in values.indices { #expect(isUnique(&values[index]), "value \(index)") }
    }

    /// A publish prefetches the bucket of the write `upcoming` names: it must be the write that
    /// many places after the next one, and none past the last (a stale one only wastes a load).
    @Test func upcomingNamesTheWriteThatManyPlacesAheadAndNoneBeyond() {
        var inserts = OverlayInserts(capacity: 4)
        let keys = (0..<10).map { TableKey(table: "t", key: [UInt8($0), 1, 2]) }
        for (number, key) in keys.enumerated() {
            inserts.append(key: key, entry: OverlayEntry(commitVersion: UInt64(number), recordVersion: 1, value: nil))
        }
        let hashes = keys.map { key in key.key.withUnsafeBytes { KeyFilter.hash(of: $0) } }
        #expect(inserts.upcoming(0)?.digest == keys[0].digest)
        for taken in 0..<10 {
            for distance in 0..<4 {
                let ahead = inserts.upcoming(distance)
                if taken + distance < 10 {
                    #expect(ahead?.digest == keys[taken + distance].digest, "taken \(taken), distance \(distance)")
                    #expect(ahead?.filterHash == hashes[taken + distance])
                } else {
                    #expect(ahead == nil, "taken \(taken), distance \(distance): past the last write")
                }
            }
            #expect(inserts.takeNext()?.key == keys[taken])
        }
    }
}
