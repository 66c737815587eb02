#if canImport(Glibc)
import Glibc
#endif

/// Memory for a large array that one commit fills at once (an overlay table's buckets): from
/// 2 MiB up it is 2 MiB-aligned, rounded up to whole 2 MiB pages and advised as huge pages
/// (`MADV_HUGEPAGE`), so the kernel backs it with one page fault per 2 MiB instead of one per
/// 4 KiB. Fresh memory took a fault per 4 KiB page on first touch: about 1 ms for the 2.6 MB
/// table of a commit of 20,000 new keys, 8% of a `relationship-cascade` round.
///
/// Smaller arrays are ordinary allocations (a huge page would mostly hold nothing). Where
/// huge pages are off, the advice does nothing and the memory is ordinary. A pointer goes
/// back through `deallocate(_:capacity:)` with the capacity it was allocated with, which
/// decides the same way which of the two it is. Pinned by `HugePageMemoryTests` and
/// `OverlayTableTests.aTableOfHugePagesKeepsEveryKey`.
package enum HugePageMemory {
    /// The size of a huge page on x86-64 and of the usual one on arm64 with 4 KiB pages.
    package static let hugePageSize = 2 << 20

    /// Room for `capacity` values of `T`, uninitialized.
    package static func allocate<T>(_ type: T.Type, capacity: Int) -> UnsafeMutablePointer<T> {
        guard let bytes = hugeBytes(of: T.self, capacity: capacity) else { return .allocate(capacity: capacity) }
        var memory: UnsafeMutableRawPointer? = nil
        // As the runtime's own allocation does, a failure traps: it is out of memory.
        guard posix_memalign(&memory, hugePageSize, bytes) == 0, let memory else {
            fatalError("HugePageMemory: no memory for \(bytes) bytes")
        }
        // Advice only: a kernel without huge pages, or with none free, keeps small pages.
        _ = madvise(memory, bytes, MADV_HUGEPAGE)
        return memory.bindMemory(to: T.self, capacity: capacity)
    }

    /// Frees what `allocate(_:capacity:)` returned for the same capacity.
    package static func deallocate<T>(_ pointer: UnsafeMutablePointer<T>, capacity: Int) {
        if hugeBytes(of: T.self, capacity: capacity) != nil {
            free(UnsafeMutableRawPointer(pointer))
        } else {
            pointer.deallocate()
        }
    }

    /// The bytes to allocate as huge pages for `capacity` values of `T`; nil when that is
    /// less than one huge page (an ordinary allocation).
    private static func hugeBytes<T>(of type: T.Type, capacity: Int) -> Int? {
        precondition(MemoryLayout<T>.alignment <= hugePageSize, "HugePageMemory: alignment beyond a huge page")
        let bytes = MemoryLayout<T>.stride * capacity
        guard bytes >= hugePageSize else { return nil }
        return (bytes + hugePageSize - 1) / hugePageSize * hugePageSize
    }
}
