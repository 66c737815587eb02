import Synchronization

/// Large engine buffers kept for reuse: the overlay table's buckets and key filter, and a
/// commit group's writes for the overlay (`OverlayInserts`).
///
/// glibc serves a block this large with a fresh `mmap` and unmaps it on `free` (or trims it
/// off its heap), so a large commit would fault its table and write buffers in page by page:
/// a fifth of a 20,000-write commit's time. A freed buffer is kept here instead, and the next
/// request it fits takes it, still mapped. That serves a long-lived store as much as a new
/// one: the overlay drops its whole table once the applier has moved it into LMDB
/// (`OverlayState.didApply`) and the next large publish sizes a new one, a table doubling
/// frees the old buckets as it takes larger ones, and every commit group frees its writes.
///
/// Bounded: at most `maximumCount` buffers and `maximumBytes` in all, so an idle process
/// holds at most that much more than it would. The oldest kept buffer goes first to make
/// room. Buffers below `minimumBytes` come from malloc's own free lists and are not kept.
/// Process-wide (`shared`), so one store's dropped table serves the next store's commit.
/// Thread-safe: tables are freed outside the overlay lock, on the applier's thread.
///
/// A buffer is handed out uninitialized (its last user's bytes, or fresh memory): whoever
/// takes it initializes what it reads.
package final class LargeBuffers: Sendable {
    /// Sendable: a buffer has one owner at a time, the pool while kept, its taker after.
    private struct Kept: @unchecked Sendable {
        let address: UnsafeMutableRawPointer
        let byteCount: Int
    }

    private struct State: ~Copyable {
        var kept: [Kept] = []
        var bytes = 0
        var reuses = 0
    }

    /// Requests and buffers below this size are not kept: glibc's mmap threshold starts at
    /// 128 KiB, and below it a freed block stays in malloc's heap.
    let minimumBytes: Int
    /// 64 MiB: the table (buckets and filter) and the writes of a group of about 200,000
    /// keys, or of two smaller ones at once (the old table freed while the next fills).
    let maximumBytes: Int
    /// A table's buckets and filter and a group's writes, for the table in use and the next.
    let maximumCount: Int
    private let state = Mutex(State())

    /// The engine's buffers, shared by every store of the process.
    package static let shared = LargeBuffers()

    /// Buffers are aligned to this, enough for every element type the engine keeps in one.
    static let alignment = 16

    package init(minimumBytes: Int = 128 << 10, maximumBytes: Int = 64 << 20, maximumCount: Int = 8) {
        self.minimumBytes = minimumBytes
        self.maximumBytes = maximumBytes
        self.maximumCount = maximumCount
    }

    deinit {
        state.withLock { state in
            for kept in state.kept { kept.address.deallocate() }
        }
    }

    /// A buffer of at least `byteCount` bytes, uninitialized, and its size: a kept one, the
    /// smallest that holds `byteCount` and is at most twice that (a larger one would stay
    /// tied up in a small table), or a new one.
    func allocate(byteCount: Int) -> (address: UnsafeMutableRawPointer, byteCount: Int) {
        if byteCount >= minimumBytes {
            let taken = state.withLock { state -> Kept? in
                var best: Int? = nil
                for index in state.kept.indices {
                    let size = state.kept[index].byteCount
                    guard size >= byteCount, size / 2 <= byteCount else { continue }
                    if best.map({ size < state.kept[$0].byteCount }) ?? true { best = index }
                }
                guard let best else { return nil }
                state.reuses += 1
                state.bytes -= state.kept[best].byteCount
                return state.kept.remove(at: best)
            }
            if let taken { return (taken.address, taken.byteCount) }
        }
        return (UnsafeMutableRawPointer.allocate(byteCount: max(byteCount, 1), alignment: LargeBuffers.alignment), byteCount)
    }

    /// Takes back a buffer from `allocate(byteCount:)` (its returned size), deinitialized:
    /// keeps it, or frees it when it is too small or too large to keep.
    func deallocate(_ address: UnsafeMutableRawPointer, byteCount: Int) {
        guard byteCount >= minimumBytes, byteCount <= maximumBytes else {
            address.deallocate()
            return
        }
        let evicted = state.withLock { state -> [Kept] in
            var evicted: [Kept] = []
            while !state.kept.isEmpty && (state.kept.count >= maximumCount || state.bytes + byteCount > maximumBytes) {
                let oldest = state.kept.removeFirst()
                state.bytes -= oldest.byteCount
                evicted.append(oldest)
            }
            state.kept.append(Kept(address: address, byteCount: byteCount))
            state.bytes += byteCount
            return evicted
        }
        // Freed outside the lock: unmapping a large block takes a while.
        for kept in evicted { kept.address.deallocate() }
    }

    /// `allocate(byteCount:)` for `capacity` elements, bound to their type; `capacity` is how
    /// many the buffer holds (at least those asked for).
    func allocate<Element>(_: Element.Type, capacity: Int) -> (pointer: UnsafeMutablePointer<Element>, capacity: Int, byteCount: Int) {
        precondition(MemoryLayout<Element>.alignment <= LargeBuffers.alignment, "LargeBuffers: over-aligned element")
        let stride = MemoryLayout<Element>.stride
        let (address, byteCount) = allocate(byteCount: stride * capacity)
        let room = byteCount / stride
        return (address.bindMemory(to: Element.self, capacity: room), room, byteCount)
    }

    /// Takes back `pointer`, from `allocate(_:capacity:)` (its `byteCount`), deinitialized.
    func deallocate<Element>(_ pointer: UnsafeMutablePointer<Element>, byteCount: Int) {
        deallocate(UnsafeMutableRawPointer(pointer), byteCount: byteCount)
    }

    /// How many buffers and bytes are kept, and how many requests a kept buffer served.
    package var counts: (buffers: Int, bytes: Int, reuses: Int) {
        state.withLock { ($0.kept.count, $0.bytes, $0.reuses) }
    }
}
