import CLMDB
#if canImport(Glibc)
import Glibc
#endif

// The overlay holds commits that are durable in the log but not yet applied to LMDB, so
// that readers see a commit the moment it is acknowledged. The background applier moves
// them into LMDB and then prunes them here.
//
// Visibility rule. A snapshot is (floor F, version V) plus an LMDB read transaction begun
// after F was applied. For a key it reads the newest overlay entry with commit version
// <= V; if that entry's version is > F it is the answer, otherwise LMDB's is. Pruning
// keeps every entry that a live snapshot may still answer from: those inside some
// snapshot's (F, V]. The watermark F of new snapshots advances only after the LMDB
// transaction that applied through F has committed.

/// One version of one key in the overlay.
struct OverlayEntry {
    let commitVersion: UInt64
    let recordVersion: UInt64
    /// nil: deleted at this version.
    let value: [UInt8]?

    var byteCount: Int { 48 + (value?.count ?? 0) }
}

/// A live snapshot, as the overlay and the stats see it.
struct LiveSnapshot {
    let floor: UInt64
    let version: UInt64
    let openedAt: Double
    weak var snapshot: Snapshot?
}

/// Everything the overlay lock guards.
struct OverlayState {
    /// Per table, per key: entries in ascending commit version.
    var tables: [String: [[UInt8]: [OverlayEntry]]] = [:]
    /// Committed but not applied, in commit order, from `unappliedHead` on.
    var unapplied: [LoggedCommit] = []
    var unappliedHead = 0
    /// Key bytes held by entries (the overlay's memory, bounded by `Options.overlayLimit`).
    var bytes = 0
    /// The highest commit version applied to LMDB (durably: LMDB's commits are synced).
    var appliedVersion: UInt64 = 0
    /// The floor of new snapshots: entries at or below it are in LMDB for them.
    var watermark: UInt64 = 0
    /// The newest acknowledged commit version.
    var latestVersion: UInt64 = 0
    /// LMDB table handles known to be committed, by name.
    var tableHandles: [String: MDB_dbi] = [:]
    var liveSnapshots: [Int: LiveSnapshot] = [:]
    var nextSnapshotID = 0
    /// Set when applied entries were kept for a live snapshot; a full sweep drops them later.
    var keptForSnapshots = false
    /// Applier wake-up reasons.
    var flushRequested = false
    /// Set when `close` begins: no new snapshots.
    var closing = false
    /// Set when the applier must exit.
    var stopping = false
    var mapGrowthPending = false
    /// The applier's failure, if any: the store is poisoned by it.
    var applyError: KVError?

    var unappliedCount: Int { unapplied.count - unappliedHead }

    /// The overlay's answer for `key` in a snapshot (floor, version), or nil to ask LMDB.
    @inline(__always)
    func entry(table: String, key: [UInt8], floor: UInt64, version: UInt64) -> OverlayEntry? {
        guard let entries = tables[table]?[key] else { return nil }
        for entry in entries.reversed() where entry.commitVersion <= version {
            return entry.commitVersion > floor ? entry : nil
        }
        return nil
    }

    /// Adds acknowledged commits.
    mutating func publish(_ commits: [LoggedCommit]) {
        for commit in commits {
            for operation in commit.operations {
                let entry = OverlayEntry(
                    commitVersion: commit.version, recordVersion: operation.recordVersion, value: operation.value)
                tables[operation.table, default: [:]][operation.key, default: []].append(entry)
                bytes += entry.byteCount + operation.key.count
            }
            unapplied.append(commit)
        }
        if let last = commits.last { latestVersion = last.version }
    }

    /// Whether a live snapshot may still read an entry of this commit version.
    func neededBySnapshot(_ commitVersion: UInt64) -> Bool {
        liveSnapshots.values.contains { $0.floor < commitVersion && commitVersion <= $0.version }
    }

    /// Records that LMDB now holds everything through `version`, and prunes.
    mutating func didApply(through version: UInt64, count: Int, newTables: [String: MDB_dbi]) {
        tableHandles.merge(newTables) { old, _ in old }
        let applied = unapplied[unappliedHead..<(unappliedHead + count)]
        appliedVersion = version
        watermark = version
        for commit in applied {
            for operation in commit.operations {
                prune(table: operation.table, key: operation.key)
            }
        }
        unappliedHead += count
        if unappliedHead > 1024 && unappliedHead * 2 > unapplied.count {
            unapplied.removeFirst(unappliedHead)
            unappliedHead = 0
        }
    }

    /// Drops the applied entries of one key that no live snapshot needs.
    mutating func prune(table: String, key: [UInt8]) {
        guard var entries = tables[table]?[key] else { return }
        var freed = 0
        entries.removeAll { entry in
            guard entry.commitVersion <= appliedVersion else { return false }
            if neededBySnapshot(entry.commitVersion) {
                keptForSnapshots = true
                return false
            }
            freed += entry.byteCount + key.count
            return true
        }
        bytes -= freed
        tables[table]![key] = entries.isEmpty ? nil : entries
    }

    /// Prunes every key; used when a snapshot that kept entries alive closes.
    mutating func sweep() {
        keptForSnapshots = false
        for (table, keys) in tables {
            for key in keys.keys { prune(table: table, key: key) }
        }
    }

    /// Every overlay key of `table` in [lower, upper) with its visible entry, sorted.
    func visibleKeys(table: String, lower: [UInt8]?, upper: [UInt8]?, floor: UInt64, version: UInt64)
        -> [(key: [UInt8], entry: OverlayEntry)]
    {
        guard let keys = tables[table] else { return [] }
        var result: [(key: [UInt8], entry: OverlayEntry)] = []
        for (key, _) in keys {
            if let lower, key.lexicographicallyPrecedes(lower) { continue }
            if let upper, !key.lexicographicallyPrecedes(upper) { continue }
            if let entry = entry(table: table, key: key, floor: floor, version: version) {
                result.append((key, entry))
            }
        }
        result.sort { $0.key.lexicographicallyPrecedes($1.key) }
        return result
    }
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
