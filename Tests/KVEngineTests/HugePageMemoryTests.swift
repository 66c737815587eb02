import Testing
import KVEngine

/// `HugePageMemory` hands out two kinds of memory by size, and takes each back by the same
/// rule: a pointer freed the wrong way corrupts the heap.
@Suite struct HugePageMemoryTests {
    @Test(arguments: [1, 1_000, (2 << 20) / 80 - 1, (2 << 20) / 80, 40_000, 100_001])
    func memoryOfEverySizeIsWritableAndFreedTheWayItCame(capacity: Int) {
        let bytes = MemoryLayout<(UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)>.stride
        #expect(bytes == 80)
        let pointer = HugePageMemory.allocate((UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64).self,
                                              capacity: capacity)
        if capacity * bytes >= HugePageMemory.hugePageSize {
            #expect(Int(bitPattern: pointer) % HugePageMemory.hugePageSize == 0, "large memory is huge-page aligned")
        }
        pointer.initialize(repeating: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10), count: capacity)
        #expect(pointer[capacity - 1].9 == 10)
        pointer.deinitialize(count: capacity)
        HugePageMemory.deallocate(pointer, capacity: capacity)
    }
}
