@testable import KVEngine
import Testing

/// A reader's kept arrays (`ByteArrayPool`): a copy into a reused array shows exactly the new
/// bytes, and an array something else still holds (a value a snapshot read) is never written.
@Suite struct ByteArrayPoolTests {
    private func address(_ array: [UInt8]) -> UInt {
        array.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }

    private func copy(_ pool: ByteArrayPool, _ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { pool.copy($0) }
    }

    @Test func aCopyReusesAKeptArrayAndShowsOnlyTheNewBytes() {
        let pool = ByteArrayPool()
        let old = [UInt8](repeating: 0xAA, count: 100)
        let oldAddress = address(old)
        pool.recycle(consume old)
        #expect(pool.count == 1)
        // Shorter, in the same capacity class: no old byte may show past the new ones.
        let new = (0..<97).map { UInt8($0) }
        let copied = copy(pool, new)
        #expect(copied == new)
        #expect(address(copied) == oldAddress, "the kept array was not reused")
        #expect(pool.count == 0)

        let same = [UInt8](repeating: 0xBB, count: 100)
        let sameAddress = address(same)
        pool.recycle(consume same)
        let overwritten = copy(pool, [UInt8](repeating: 3, count: 100))
        #expect(overwritten == [UInt8](repeating: 3, count: 100))
        #expect(address(overwritten) == sameAddress)
    }

    @Test func aSharedArrayIsNeverWrittenThrough() {
        let pool = ByteArrayPool()
        let held = [UInt8](repeating: 7, count: 100)
        pool.recycle(held)
        let copied = copy(pool, [UInt8](repeating: 9, count: 100))
        #expect(held == [UInt8](repeating: 7, count: 100), "a held array changed under its holder")
        #expect(copied == [UInt8](repeating: 9, count: 100))
        #expect(address(copied) != address(held))
    }

    @Test func aTooSmallOrTooLargeArrayIsNotHandedOutAndTheBoundHolds() {
        let pool = ByteArrayPool(limit: 2)
        pool.recycle([UInt8](repeating: 1, count: 8))
        pool.recycle([UInt8](repeating: 2, count: 4096))
        #expect(pool.count == 1, "a 4 KiB array is not kept")
        let long = [UInt8](repeating: 5, count: 200)
        #expect(copy(pool, long) == long)
        #expect(pool.count == 1, "the 8-byte array cannot hold 200 bytes")
        pool.recycle([UInt8](repeating: 3, count: 8))
        pool.recycle([UInt8](repeating: 4, count: 8))
        #expect(pool.count == 2)
        #expect(copy(pool, []) == [])
    }

    /// A reader's dropped table: its keys and values go to the pool, and a value a snapshot
    /// read before the drop keeps its bytes while later refreshes fill the reused arrays.
    @Test func aDroppedTablesArraysAreReusedAndAHeldValueKeepsItsBytes() {
        let table = OverlayTable()
        let keys = (0..<50).map { TableKey(table: "t", key: [UInt8]("key-\($0 + 100)".utf8)) }
        for (index, key) in keys.enumerated() {
            let value = [UInt8](repeating: UInt8(index), count: 100)
            _ = table.insertNewest(OverlayEntry(commitVersion: UInt64(index + 1), recordVersion: 1, value: value),
                                   for: key, keepingFor: [])
        }
        let held = table[keys[0]]!.newest.value!
        let pool = ByteArrayPool()
        pool.recycle(table)
        #expect(table.count == 0)
        #expect(pool.count == 100, "every key and value array is kept")
        var copies: [[UInt8]] = []
        for index in 0..<50 {
            let value = [UInt8](repeating: 0xF0 | UInt8(index & 0x0F), count: 100)
            copies.append(copy(pool, value))
            #expect(copies.last == value)
        }
        #expect(held == [UInt8](repeating: 0, count: 100), "a snapshot's value changed after its table was dropped")
        #expect(pool.count == 50, "the values came from the pool")
    }
}
