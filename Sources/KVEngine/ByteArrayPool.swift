// A reader following the log (`StoreCore.refresh`) makes a key array and a value array per
// write it decodes, and freed thousands of them at once when LMDB's applied version passed
// them (`OverlayState.didApplyFollowed` drops the old table). Such a bulk free overflows
// glibc's per-size caches into its bins, and every malloc of the next refresh then took
// glibc's slow path: about 40% of a followed commit's instructions. The dropped table's
// arrays are kept here instead, and the next refresh copies its keys and values into them.

/// Byte arrays kept for reuse, by capacity; at most `limit` of them.
///
/// A kept array keeps its old bytes until reused: `copy` overwrites every one it leaves
/// visible, through `withUnsafeMutableBytes`/`append`, which copy a shared array's storage
/// (one a snapshot's read still holds) rather than write into it.
///
/// A class over raw stacks, not arrays of arrays: each push and pop of a nested array went
/// through two uniqueness checks and the runtime's generic append, about as many instructions
/// as the malloc it saved. Used only under its owner's lock (`StoreCore.arrayPool`).
final class ByteArrayPool {
    /// One capacity class's kept arrays: `count` initialized from `slots` on.
    private struct Stack {
        var slots: UnsafeMutablePointer<[UInt8]>? = nil
        var count = 0
        var room = 0
    }

    /// Class `k` holds the arrays whose capacity is in `classWidth * k ..< classWidth * (k + 1)`.
    private let stacks: UnsafeMutablePointer<Stack>
    /// How many arrays the pool holds. Unchecked: only used under the owner's lock.
    @exclusivity(unchecked) private(set) var count = 0
    /// At most this many arrays are kept, each under `classWidth * classCount` bytes; the
    /// others are freed as before.
    let limit: Int

    static let classWidth = 16
    /// Capacities below 512 bytes are kept: a larger value's copy costs more than its malloc.
    static let classCount = 32

    init(limit: Int = 8192) {
        self.limit = limit
        stacks = .allocate(capacity: ByteArrayPool.classCount)
        stacks.initialize(repeating: Stack(), count: ByteArrayPool.classCount)
    }

    deinit {
        for index in 0..<ByteArrayPool.classCount {
            guard let slots = stacks[index].slots else { continue }
            slots.deinitialize(count: stacks[index].count)
            slots.deallocate()
        }
        stacks.deallocate()
    }

    /// Keeps `array`, unless the pool is full or its capacity is not kept. Consumed: each
    /// caller hands over its last reference, so that the kept array is not shared.
    func recycle(_ array: consuming [UInt8]?) {
        guard let array = consume array else { return }
        let index = array.capacity / ByteArrayPool.classWidth
        guard count < limit, array.capacity > 0, index < ByteArrayPool.classCount else { return }
        let stack = stacks + index
        if stack.pointee.count == stack.pointee.room {
            let room = max(64, stack.pointee.room * 2)
            let slots = UnsafeMutablePointer<[UInt8]>.allocate(capacity: room)
            if let old = stack.pointee.slots {
                slots.moveInitialize(from: old, count: stack.pointee.count)
                old.deallocate()
            }
            stack.pointee.slots = slots
            stack.pointee.room = room
        }
        (stack.pointee.slots! + stack.pointee.count).initialize(to: array)
        stack.pointee.count += 1
        count += 1
    }

    /// Keeps the arrays of every key and version `table` holds, and empties it.
    func recycle(_ table: OverlayTable) {
        table.moveOut(where: { _ in true }) { key, versions in
            recycle((consume key).key)
            var versions = consume versions
            while let entry = versions.older.popLast() { recycle((consume entry).value) }
            recycle((consume versions).newest.value)
        }
    }

    /// An array holding a copy of `bytes`: a kept one when one is large enough.
    func copy(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let typed = UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        let index = bytes.count / ByteArrayPool.classWidth
        guard count > 0, bytes.count > 0, index < ByteArrayPool.classCount,
              var array = take(index, fitting: bytes.count) ?? take(index + 1, fitting: bytes.count)
        else { return Array(typed) }
        if array.count == bytes.count {
            // Every byte overwritten: keys and values of one size, the common case.
            array.withUnsafeMutableBytes { $0.copyMemory(from: bytes) }
        } else {
            array.removeAll(keepingCapacity: true)
            array.append(contentsOf: typed)
        }
        return array
    }

    /// The last array of class `index` when its capacity is at least `size`.
    private func take(_ index: Int, fitting size: Int) -> [UInt8]? {
        guard index < ByteArrayPool.classCount else { return nil }
        let stack = stacks + index
        guard stack.pointee.count > 0, let slots = stack.pointee.slots,
              slots[stack.pointee.count - 1].capacity >= size
        else { return nil }
        stack.pointee.count -= 1
        count -= 1
        return (slots + stack.pointee.count).move()
    }
}
