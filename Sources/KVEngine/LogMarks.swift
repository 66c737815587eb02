import CLMDB

// Where records sit in the log, published by the writer in the published page (after its
// header, see `PublishedProgress`) so that a reader process entering a segment starts near the
// commit it needs: without them, a follower entering a segment (a reader's open, a restart
// after a retirement or a new writer) stepped over, checksum by checksum, every record from the
// segment's start up to LMDB's applied version: up to a whole segment (64 MiB, some 400,000
// small commits) on a new reader's first snapshot.
//
//    64 + 40 × slot
//   +------------------+------------------+------------------+------------------+------------------+
//   | sequence         | generation       | commit version   | segment          | offset           |
//   | u64, odd: busy   | u64              | u64              | u64, its first v.| u64              |
//   +------------------+------------------+------------------+------------------+------------------+
//
// `markSlots` slots, filled in turn. The writer takes a mark at the first record of an append
// once `markStride` bytes of its segment passed since the last one, under the log lock. A slot
// is written as a sequence lock: the sequence made odd, the four words, the sequence made even
// again. A reader takes a slot whose sequence is even and unchanged around its reads, of its
// own generation (a segment of an older generation's log may hold other records at the same
// place), and checks the record there before it trusts the mark (`LogFollower.locate`).

/// A record's place in the log: the record of `version` starts at `offset` of the segment
/// whose first version is `segment`.
package struct LogMark: Equatable, Sendable {
    package let version: UInt64
    package let segment: UInt64
    package let offset: Int

    package init(version: UInt64, segment: UInt64, offset: Int) {
        self.version = version
        self.segment = segment
        self.offset = offset
    }

    /// Bytes of a segment between two marks: a follower steps over at most about this much.
    static let stride = 256 << 10
}

extension PublishedProgress {
    static let marksOffset = 64
    static let markSlots = 64
    static let markSize = 40

    private func markWord(slot: Int, _ index: Int) -> UnsafeMutablePointer<UInt64> {
        word(PublishedProgress.marksOffset + slot * PublishedProgress.markSize + index * 8)
    }

    /// Publishes `mark` of this writer's generation in slot `count % markSlots`; `count`: the
    /// marks published before, so slots are reused oldest first. Writer only, one at a time.
    package func publishMark(_ mark: LogMark, count: Int) {
        precondition(writable, "PublishedProgress.publishMark on a reader's mapping")
        let slot = count % PublishedProgress.markSlots
        let generation = read().generation
        let sequence = cairn_load_acquire_u64(markWord(slot: slot, 0))
        cairn_store_release_u64(markWord(slot: slot, 0), sequence | 1)
        cairn_store_release_u64(markWord(slot: slot, 1), generation)
        cairn_store_release_u64(markWord(slot: slot, 2), mark.version)
        cairn_store_release_u64(markWord(slot: slot, 3), mark.segment)
        cairn_store_release_u64(markWord(slot: slot, 4), UInt64(mark.offset))
        cairn_store_release_u64(markWord(slot: slot, 0), (sequence | 1) &+ 1)
    }

    /// The mark of `generation` in `segment` with the highest version at or below `version`:
    /// where a follower that needs `version` may start. nil when there is none.
    package func bestMark(generation: UInt64, segment: UInt64, atOrBelow version: UInt64) -> LogMark? {
        guard generation != 0 else { return nil }
        var best: LogMark? = nil
        for slot in 0..<PublishedProgress.markSlots {
            let sequence = cairn_load_acquire_u64(markWord(slot: slot, 0))
            guard sequence != 0 && sequence & 1 == 0 else { continue }
            let markGeneration = cairn_load_acquire_u64(markWord(slot: slot, 1))
            let markVersion = cairn_load_acquire_u64(markWord(slot: slot, 2))
            let markSegment = cairn_load_acquire_u64(markWord(slot: slot, 3))
            let markOffset = cairn_load_acquire_u64(markWord(slot: slot, 4))
            guard cairn_load_acquire_u64(markWord(slot: slot, 0)) == sequence,
                  markGeneration == generation, markSegment == segment, markVersion <= version,
                  markVersion > best?.version ?? 0, markOffset <= UInt64(Int.max)
            else { continue }
            best = LogMark(version: markVersion, segment: markSegment, offset: Int(markOffset))
        }
        return best
    }
}
