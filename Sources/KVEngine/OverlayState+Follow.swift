// A reader's overlay keeps no record of the commits it holds (OverlayInserts+Log.swift): once
// LMDB applied through a version, what it applied is pruned from the overlay table itself.

extension OverlayState {
    /// Records, for a reader, that LMDB holds everything through `version`, and prunes. With no
    /// snapshot reading the overlay, the entries above `version` move to a new table and the old
    /// one is returned, for the caller to recycle after the lock (`StoreCore.recycle`: most of a
    /// reader's entries are applied by the time it learns so); otherwise each key is pruned in place.
    mutating func didApplyFollowed(through version: UInt64) -> OverlayTable? {
        appliedVersion = version
        watermark = version
        let intervals = neededIntervals
        guard intervals.isEmpty else {
            prune(entries.keys, intervals: intervals)
            return nil
        }
        let old = entries
        // Sized for as many keys as the old one held: it fills again as fast, and is then not
        // rehashed through every doubling.
        entries = OverlayTable(capacity: old.count, buffers: buffers)
        keysPerTable = [:]
        bytes = 0
        keptForSnapshots = false
        // No snapshot reads the overlay: an entry at or below `version` is LMDB's already.
        old.moveOut(where: { $0.newest.commitVersion > version }) { key, versions in
            var versions = versions
            versions.older.removeAll { $0.commitVersion <= version }
            bytes += versions.byteCount + key.count * (versions.older.count + 1)
            keysPerTable[key.table, default: 0] += 1
            entries.insertMoved(key, versions)
        }
        return old
    }
}
