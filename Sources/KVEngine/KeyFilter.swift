import CLMDB

/// A counting filter over the overlay's keys: a point read whose key it rules out skips the
/// overlay's probe, and so the keyed hash (SipHash) the probe needs, about 430 instructions
/// of a read that costs LMDB 1,150. A reader beside a busy writer holds a few hundred
/// unapplied keys among many more it reads, so nearly every probe is such a miss.
///
/// Invariant: for every key the overlay table holds, the count at its slot (CRC32C of the key
/// bytes, the table ignored) is at least 1; a count that reached 255 stays there. So a zero
/// count means the table holds no key of that slot in any table. Eight slots per bucket of
/// the table (at most 3/32 of them taken). Owned and used by `OverlayTable`, under the
/// overlay lock.
struct KeyFilter {
    private let counts: UnsafeMutablePointer<UInt8>
    private let mask: Int
    /// The size of `counts` as `LargeBuffers` handed it out.
    private let byteCount: Int

    /// Slots for a table of `buckets` buckets.
    static func slots(forBuckets buckets: Int) -> Int { buckets * 8 }

    /// Every count zero, the storage from `buffers`.
    init(slots: Int, buffers: LargeBuffers) {
        (counts, _, byteCount) = buffers.allocate(UInt8.self, capacity: slots)
        counts.initialize(repeating: 0, count: slots)
        mask = slots - 1
    }

    /// Gives the storage back to `buffers`, the one it came from.
    func deallocate(to buffers: LargeBuffers) { buffers.deallocate(counts, byteCount: byteCount) }

    /// The number of slots.
    var slotCount: Int { mask + 1 }

    /// Copies the counts to `destination`, which has room for `slotCount` of them (a
    /// snapshot's copy, `SnapshotKeyFilter`).
    func copyCounts(to destination: UnsafeMutablePointer<UInt8>) {
        destination.update(from: counts, count: slotCount)
    }

    /// The hash a key's slot is taken from, whatever the filter's size: a write's is taken
    /// while its key is at hand (`OverlayInserts`). The key's CRC-32C, which a point read
    /// also extends into its record's checksum (`RecordCodec.decode(key:keyCRC:stored:table:)`).
    @inline(__always)
    static func hash(of key: UnsafeRawBufferPointer) -> UInt32 { crc32c(key) }

    @inline(__always)
    private func slot(_ key: UnsafeRawBufferPointer) -> Int { Int(KeyFilter.hash(of: key)) & mask }

    /// False when the table holds no key with these bytes.
    @inline(__always)
    func mayHold(_ key: UnsafeRawBufferPointer) -> Bool { counts[slot(key)] != 0 }

    /// `mayHold` of the key whose `hash(of:)` is `hash`.
    @inline(__always)
    func mayHold(hash: UInt32) -> Bool { counts[Int(hash) & mask] != 0 }

    func add(_ key: UnsafeRawBufferPointer) { add(hash: KeyFilter.hash(of: key)) }

    /// Starts loading the count of the key whose `hash(of:)` is `hash`.
    @inline(__always)
    func prefetch(hash: UInt32) { cairn_prefetch_for_write(counts + (Int(hash) & mask)) }

    /// Counts the key whose `hash(of:)` is `hash`.
    func add(hash: UInt32) {
        let index = Int(hash) & mask
        if counts[index] < .max { counts[index] += 1 }
    }

    func remove(_ key: UnsafeRawBufferPointer) {
        let index = slot(key)
        precondition(counts[index] > 0, "KeyFilter: removing a key it does not count")
        if counts[index] < .max { counts[index] -= 1 }
    }
}
