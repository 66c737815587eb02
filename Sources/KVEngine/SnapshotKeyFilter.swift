/// A snapshot's own copy of the overlay's `KeyFilter`: its point reads rule a key out without
/// taking the overlay lock (beside a busy writer, that lock's take and release were about 55
/// instructions of a 2,500-instruction read, and most keys are ruled out).
///
/// Sound whenever it is taken, under the overlay lock, while the snapshot is live: every key
/// the snapshot can see in the overlay (an entry in its (floor, version]) was published before
/// the snapshot was made and stays in the overlay's table while the snapshot is live (pruning
/// and rebuilds keep what live snapshots may read), so its slot in the copy is not zero. Keys
/// published after the copy are newer than the snapshot, which cannot see them; keys removed
/// after it only make the copy rule out fewer keys than the live filter.
///
/// Taken once the locked reads have cost about what copying costs (`didLock`): at the first
/// for a small overlay, later for a large one, so a snapshot used for a read or two never
/// copies a large filter. Kept by a snapshot holder across its snapshots
/// (`SnapshotTransaction.State`), under the holder's lock; `reset` for each snapshot.
struct SnapshotKeyFilter {
    private var counts: UnsafeMutablePointer<UInt8>? = nil
    private var capacity = 0
    /// The copy's slots less one; -1 while no copy is taken (every key may be held).
    private var mask = -1
    /// Reads of this snapshot that took the overlay lock.
    private var lockedReads = 0

    /// Larger filters are not copied (an overlay of a large batch): a holder keeps its copy.
    static let maxSlots = 1 << 16
    /// Bytes of filter copied for about the cost of one locked read (the lock, the filter's
    /// check, a false positive's keyed hash now and then); `memcpy` moves 32 bytes an instruction.
    static let bytesPerLock = 2048

    /// False when the copy rules out the key whose `KeyFilter.hash(of:)` is `hash`; true (ask
    /// the overlay, under its lock) otherwise.
    @inline(__always)
    func mayHold(hash: UInt32) -> Bool {
        guard mask >= 0 else { return true }
        return counts.unsafelyUnwrapped[Int(hash) & mask] != 0
    }

    /// Whether a copy is taken (for tests).
    var isTaken: Bool { mask >= 0 }

    /// Called by a read under the overlay lock, `filter` being the overlay table's: copies it
    /// once the reads that took the lock have cost about as much as copying it.
    mutating func didLock(_ filter: KeyFilter) {
        guard mask < 0 else { return }
        lockedReads += 1
        let slots = filter.slotCount
        guard slots <= Self.maxSlots, lockedReads * Self.bytesPerLock >= slots else { return }
        if capacity < slots {
            counts?.deallocate()
            counts = .allocate(capacity: slots)
            capacity = slots
        }
        filter.copyCounts(to: counts.unsafelyUnwrapped)
        mask = slots - 1
    }

    /// Forgets the copy: the holder serves another snapshot.
    mutating func reset() {
        mask = -1
        lockedReads = 0
    }

    /// Frees the copy's memory (the holder's deinit).
    mutating func deallocate() {
        counts?.deallocate()
        counts = nil
        capacity = 0
        mask = -1
    }
}
