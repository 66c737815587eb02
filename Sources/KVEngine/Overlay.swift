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
package struct OverlayEntry {
    package let commitVersion: UInt64
    let recordVersion: UInt64
    /// nil: deleted at this version.
    package let value: [UInt8]?

    package init(commitVersion: UInt64, recordVersion: UInt64, value: [UInt8]?) {
        self.commitVersion = commitVersion
        self.recordVersion = recordVersion
        self.value = value
    }

    var byteCount: Int { 48 + (value?.count ?? 0) }

    /// Calls `body` with the value's bytes, nil for a deletion, without copying the value.
    @inline(__always)
    func withValueBytes<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        guard let value else { return try body(nil) }
        return try value.withUnsafeBytes { try body($0) }
    }

    /// The record's state after this entry.
    /// A delete at version 0 is an unversioned one (a versioned delete keeps a version ≥ 1): it
    /// leaves no tombstone, here as in LMDB.
    package var state: RecordState {
        value == nil ? (recordVersion == 0 ? .absent : .deleted(recordVersion)) : .live(recordVersion)
    }
}

/// A live snapshot, as the overlay and the stats see it.
struct LiveSnapshot {
    let floor: UInt64
    let version: UInt64
    let openedAt: Double
    /// What the engine ends when it expires the snapshot or closes the store: held strongly,
    /// the snapshot itself not at all (see `SnapshotTransaction`).
    let transaction: SnapshotTransaction
    /// The snapshot reads through the engine's reserved reader (a commit's view).
    let recycles: Bool
}

/// The overlay's versions of one key: the newest inline (most keys have just one, so
/// they cost no array), older ones kept only while a snapshot may read them.
package struct OverlayVersions {
    package var newest: OverlayEntry
    /// Older entries, ascending by commit version.
    package var older: [OverlayEntry] = []

    var byteCount: Int { older.reduce(newest.byteCount) { $0 + $1.byteCount } }

    package init(newest: OverlayEntry, older: [OverlayEntry] = []) {
        self.newest = newest
        self.older = older
    }

    /// Makes `entry` the newest version. The previous newest is kept for the live snapshots
    /// that may read it (`intervals`); when none may, it is dropped here and returned, for
    /// the caller's byte count and to free (nil when kept). A key rewritten before it is
    /// applied then costs no array of older versions, and the applier has no copy to prune.
    @inline(__always)
    mutating func push(_ entry: consuming OverlayEntry, intervals: [(floor: UInt64, version: UInt64)]) -> OverlayEntry? {
        let previous = newest
        newest = entry
        if intervals.contains(where: { $0.floor < previous.commitVersion && previous.commitVersion <= $0.version }) {
            older.append(previous)
            return nil
        }
        return previous
    }

    /// Where the newest entry at or below `version` is, if it is above `floor`:
    /// `older.count` for `newest`, else its index in `older`.
    @inline(__always)
    private func visiblePosition(floor: UInt64, version: UInt64) -> Int? {
        if newest.commitVersion <= version { return newest.commitVersion > floor ? older.count : nil }
        for index in older.indices.reversed() where older[index].commitVersion <= version {
            return older[index].commitVersion > floor ? index : nil
        }
        return nil
    }

    /// The record state of the visible entry (see `visible`), read in place: copying the
    /// entry would retain its value, touching its memory, for a check that needs the
    /// version only.
    @inline(__always)
    package func visibleState(floor: UInt64, version: UInt64) -> RecordState? {
        visiblePosition(floor: floor, version: version).map { $0 == older.count ? newest.state : older[$0].state }
    }

    /// The newest entry at or below `version`, if it is above `floor`.
    @inline(__always)
    package func visible(floor: UInt64, version: UInt64) -> OverlayEntry? {
        visiblePosition(floor: floor, version: version).map { $0 == older.count ? newest : older[$0] }
    }
}

/// Everything the overlay lock guards.
package struct OverlayState {
    /// Per table and key: the versions not yet pruned.
    package var entries = OverlayTable()
    /// Where each table after the first takes its large buffers: the one the applier dropped
    /// serves the next (`LargeBuffers`). Tests give their own.
    var buffers = LargeBuffers.shared
    /// How many keys of each table `entries` holds (tables with none are absent). A scan of
    /// a table the overlay holds nothing of skips it, instead of walking every other table's
    /// keys: a context fetching one entity while another's large import is not yet applied.
    package var keysPerTable: [String: Int] = [:]
    /// Committed but not applied, in commit order, from `unappliedHead` on.
    var unapplied: [LoggedCommit] = []
    var unappliedHead = 0
    /// Bytes held by entries (the overlay's memory, bounded by `Options.overlayLimit`).
    package var bytes = 0
    /// The most `bytes` has been since the store opened, and the most one publish added.
    var peakBytes = 0
    var largestPublishBytes = 0
    /// The highest commit version applied to LMDB (durably: LMDB's commits are synced).
    var appliedVersion: UInt64 = 0
    /// The floor of new snapshots: entries at or below it are in LMDB for them.
    var watermark: UInt64 = 0
    /// The newest acknowledged commit version.
    var latestVersion: UInt64 = 0
    /// LMDB table handles known to be committed, by name.
    var tableHandles: [String: MDB_dbi] = [:]
    /// Tables that unapplied commits write to and LMDB does not have yet.
    var pendingTables: Set<String> = []
    var liveSnapshots: [Int: LiveSnapshot] = [:]
    /// Snapshots the applier expired (`Options.maxSnapshotAge`/`maxSnapshotLag`).
    var expiredSnapshots = 0
    /// LMDB reader slots of dead processes the applier reclaimed.
    var staleReadersCleared = 0
    /// A reset read transaction kept for the commit leader's views, so commits never need a
    /// reader slot that open snapshots may all hold. nil while a view has it.
    var reservedReader: LMDBTransaction?
    /// Reset read transactions of closed snapshots, renewed by the next ones.
    var idleReaders = IdleReaders()
    /// The holders of closed snapshots' transactions, for the next ones.
    var snapshotHolders = SnapshotHolders()
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
    package var applyError: KVError?

    var unappliedCount: Int { unapplied.count - unappliedHead }

    /// The overlay's answer for `key` in a snapshot (floor, version), or nil to ask LMDB.
    @inline(__always)
    func entry(_ tableKey: TableKey, floor: UInt64, version: UInt64) -> OverlayEntry? {
        entries.withVersions(of: tableKey) { $0.visible(floor: floor, version: version) } ?? nil
    }

    /// The overlay's record state for `key` in a snapshot (floor, version), or nil to ask
    /// LMDB. The versions are read in place: a copy would retain (and touch) their value
    /// arrays.
    @inline(__always)
    func recordState(_ tableKey: TableKey, floor: UInt64, version: UInt64) -> RecordState? {
        entries.withVersions(of: tableKey) { $0.visibleState(floor: floor, version: version) } ?? nil
    }

    /// Adds acknowledged commits read from the log (recovery); returns what
    /// `publish(_:inserts:)` returns.
    mutating func publish(_ commits: [LoggedCommit]) -> [OverlayEntry] {
        var inserts = OverlayInserts(of: commits)
        return publish(commits, inserts: &inserts)
    }

    /// Adds acknowledged commits, whose writes `inserts` holds in order (taken, leaving it
    /// empty); `commits` is empty for a reader, which keeps no list of them
    /// (`didApplyFollowed`). Returns the versions it replaced and no snapshot can read, for the caller to
    /// free outside the lock: freeing ten thousand values (most long out of cache) is a good
    /// part of a large publish.
    mutating func publish(_ commits: [LoggedCommit], inserts: inout OverlayInserts) -> [OverlayEntry] {
        var replaced: [OverlayEntry] = []
        let added = inserts.count
        // Room for a large batch of new keys at once, not by repeated doubling. Not
        // `count + added`: a batch that rewrites keys already here (a save of fetched
        // objects) would rehash the whole table into room it never uses.
        if added > 1024 { entries.reserveCapacity(max(entries.count, added)) }
        var lastTable: String? = nil
        var newKeysInRun = 0
        let bytesBefore = bytes
        // No snapshot opened later can read a version this publish replaces: it sees these
        // commits. So a replaced version is kept only for the snapshots open now.
        let intervals = neededIntervals
        while let (key, entry, filterHash, byteCount) = inserts.takeNext() {
            if added > OverlayState.prefetchFrom, let (digest, hash) = inserts.upcoming(OverlayState.prefetchDistance) {
                entries.prefetch(digest: digest, filterHash: hash)
            }
            // Batches write runs of one table: look the table up once per run.
            if key.table != lastTable {
                if let lastTable, newKeysInRun > 0 { keysPerTable[lastTable, default: 0] += newKeysInRun }
                newKeysInRun = 0
                if tableHandles[key.table] == nil { pendingTables.insert(key.table) }
                lastTable = key.table
            }
            let keyBytes = key.count
            bytes += byteCount
            // One probe per write: a new key's versions are made from the entry, an existing
            // key's take it as their newest.
            let (dropped, fresh) = entries.insertNewest(entry, for: key, filterHash: filterHash, keepingFor: intervals)
            if fresh { newKeysInRun += 1 }
            if let dropped {
                bytes -= dropped.byteCount + keyBytes
                // Sized once, at the first: a batch that replaces one record usually
                // replaces many (a save of fetched objects).
                if replaced.isEmpty { replaced.reserveCapacity(added) }
                replaced.append(dropped)
            }
        }
        if let lastTable, newKeysInRun > 0 { keysPerTable[lastTable, default: 0] += newKeysInRun }
        unapplied.append(contentsOf: commits)
        if let last = commits.last { latestVersion = last.version }
        peakBytes = max(peakBytes, bytes)
        largestPublishBytes = max(largestPublishBytes, bytes - bytesBefore)
        return replaced
    }

    /// A publish of more writes than this prefetches each one's bucket `prefetchDistance`
    /// writes ahead (`OverlayTable.prefetch`): enough misses in flight to hide their latency.
    static let prefetchFrom = 1024
    static let prefetchDistance = 8

    /// Drops every entry and unapplied commit: a reader's overlay whose commits reopening
    /// the writer lost (`StoreCore.rejoin`), after its snapshots that could read them expired.
    mutating func discardEntries() {
        entries = OverlayTable(buffers: buffers)
        keysPerTable = [:]
        bytes = 0
        unapplied = []
        unappliedHead = 0
        keptForSnapshots = false
    }

    /// The (floor, version] intervals live snapshots may still read from the overlay.
    var neededIntervals: [(floor: UInt64, version: UInt64)] {
        liveSnapshots.values.filter { $0.floor < $0.version }.map { ($0.floor, $0.version) }
    }

    /// Records that LMDB now holds everything through `version`, and prunes.
    ///
    /// Returns what it dropped whole, for the caller to free after it has released the lock
    /// and woken the waiters: freeing a million entries takes a noticeable fraction of a
    /// second, which no flush needs to wait for.
    ///
    /// A reader's overlay holds no unapplied commits: see `didApplyFollowed`.
    mutating func didApply(through version: UInt64, count: Int, newTables: [String: MDB_dbi])
        -> (entries: OverlayTable, commits: [LoggedCommit])?
    {
        tableHandles.merge(newTables) { old, _ in old }
        pendingTables.subtract(newTables.keys)
        appliedVersion = version
        watermark = version
        let intervals = neededIntervals
        if intervals.isEmpty && unapplied.count - unappliedHead == count {
            // Everything is in LMDB and no snapshot reads the overlay: drop it whole.
            let dropped = (entries, unapplied)
            entries = OverlayTable(buffers: buffers)
            keysPerTable = [:]
            bytes = 0
            unapplied = []
            unappliedHead = 0
            return dropped
        }
        // The operations are read in place through a pointer: iterating them copied each one
        // out, retaining and releasing its table, key and value.
        var run = PruneRun()
        for position in unappliedHead..<(unappliedHead + count) {
            unapplied[position].operations.withUnsafeBufferPointer { operations in
                for index in operations.indices {
                    let operation = operations.baseAddress! + index
                    prune(TableKey(table: operation.pointee.table, key: operation.pointee.key, digest: operation.pointee.digest),
                          intervals: intervals, run: &run)
                }
            }
        }
        finish(run)
        unappliedHead += count
        if unappliedHead > 1024 && unappliedHead * 2 > unapplied.count {
            unapplied.removeFirst(unappliedHead)
            unappliedHead = 0
        }
        return nil
    }

    /// Prunes each key of `tableKeys` (see `prune(_:intervals:)`) and lowers `keysPerTable`
    /// by the keys that left `entries`, once per run of one table's keys.
    mutating func prune<Keys: Sequence<TableKey>>(_ tableKeys: Keys, intervals: [(floor: UInt64, version: UInt64)]) {
        var run = PruneRun()
        for tableKey in tableKeys { prune(tableKey, intervals: intervals, run: &run) }
        finish(run)
    }

    /// The run of one table's keys a prune is in, and how many of them left `entries`.
    struct PruneRun {
        var table: String? = nil
        var gone = 0
    }

    /// Prunes `tableKey`, counting it in `run` (a new run when its table differs).
    private mutating func prune(_ tableKey: TableKey, intervals: [(floor: UInt64, version: UInt64)], run: inout PruneRun) {
        if tableKey.table != run.table {
            finish(run)
            run = PruneRun(table: tableKey.table, gone: 0)
        }
        if prune(tableKey, intervals: intervals) { run.gone += 1 }
    }

    /// Lowers `keysPerTable` by the keys of `run` that left `entries`.
    private mutating func finish(_ run: PruneRun) {
        if let table = run.table { forget(run.gone, keysOf: table) }
    }

    /// Lowers `table`'s count in `keysPerTable` by `count` keys that left `entries`.
    private mutating func forget(_ count: Int, keysOf table: String) {
        guard count > 0 else { return }
        let left = keysPerTable[table, default: 0] - count
        precondition(left >= 0, "overlay key count of table \(table) went below zero")
        keysPerTable[table] = left == 0 ? nil : left
    }

    /// Drops the applied entries of one key that no live snapshot needs. Returns whether the
    /// key left `entries`; the caller lowers `keysPerTable` (the sequence form does).
    private mutating func prune(_ tableKey: TableKey, intervals: [(floor: UInt64, version: UInt64)]) -> Bool {
        guard let index = entries.bucket(of: tableKey) else { return false }
        let versions = entries.withVersions(at: index) { $0 }
        func needed(_ entry: OverlayEntry) -> Bool {
            intervals.contains { $0.floor < entry.commitVersion && entry.commitVersion <= $0.version }
        }
        // The common case: one applied entry nobody needs.
        if versions.older.isEmpty && versions.newest.commitVersion <= appliedVersion && !needed(versions.newest) {
            bytes -= versions.newest.byteCount + tableKey.key.count
            entries.remove(at: index)
            return true
        }
        var kept: [OverlayEntry] = []
        for entry in versions.older + [versions.newest] {
            if entry.commitVersion > appliedVersion || needed(entry) {
                if entry.commitVersion <= appliedVersion { keptForSnapshots = true }
                kept.append(entry)
            } else {
                bytes -= entry.byteCount + tableKey.key.count
            }
        }
        if let newest = kept.popLast() {
            entries.withVersions(at: index) { $0 = OverlayVersions(newest: newest, older: kept) }
            return false
        }
        entries.remove(at: index)
        return true
    }

    /// Prunes every key; used when a snapshot that kept entries alive closes.
    mutating func sweep() {
        keptForSnapshots = false
        let intervals = neededIntervals
        prune(entries.keys, intervals: intervals)
    }

    /// Every overlay key of `table` in [lower, upper) with its visible entry, sorted.
    func visibleKeys(table: String, lower: [UInt8]?, upper: [UInt8]?, floor: UInt64, version: UInt64)
        -> [KeyedEntry<OverlayEntry>]
    {
        var result: [KeyedEntry<OverlayEntry>] = []
        guard let keyCount = keysPerTable[table] else { return result }
        result.reserveCapacity(keyCount)
        entries.forEach { tableKey, versions in
            guard tableKey.table == table else { return }
            let key = tableKey.key
            if let lower, key.lexicographicallyPrecedes(lower) { return }
            if let upper, !key.lexicographicallyPrecedes(upper) { return }
            if let entry = versions.visible(floor: floor, version: version) {
                result.append(KeyedEntry(key: key, entry: entry))
            }
        }
        return KeyOrder.sortedByKey(result)
    }
}

package func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
