#if canImport(Glibc)
import Glibc
#endif

/// Counters and sizes of an open store.
///
/// ```swift
/// let stats = try store.stats()
/// print(stats.commitVersion, stats.appliedVersion, stats.logBytes)
/// ```
public struct StoreStats: Sendable, Hashable {
    /// The newest acknowledged commit version.
    public var commitVersion: UInt64
    /// The newest commit version applied to LMDB.
    public var appliedVersion: UInt64
    /// The newest commit version known to be fdatasync'd in the log.
    public var durableVersion: UInt64
    /// Bytes in log segments.
    public var logBytes: Int
    /// Log segment files.
    public var logSegments: Int
    /// Size of LMDB's data file.
    public var lmdbFileBytes: Int
    /// LMDB's map size.
    public var mapSize: Int
    /// Records per table, as of the applied version.
    public var recordsPerTable: [String: Int]
    /// Bytes held in the overlay: committed, not yet applied to LMDB.
    public var overlayBytes: Int
    /// Commits held in the overlay. For a read-only store, the commits it followed above LMDB's
    /// applied version (it keeps no list of them).
    public var overlayCommits: Int
    /// The most bytes the overlay has held since the store opened. It stays at or below
    /// ``overlayLimit`` plus ``overlayLargestGroupBytes`` while no snapshot keeps applied
    /// entries alive: commits wait at the bound, and a group already past the check adds
    /// its own bytes.
    ///
    /// ```swift
    /// let stats = try store.stats()
    /// print("overlay peak \(stats.overlayPeakBytes >> 20) MiB of \(stats.overlayLimit >> 20) MiB")
    /// ```
    public var overlayPeakBytes: Int
    /// The bytes the largest single commit group added to the overlay since open.
    public var overlayLargestGroupBytes: Int
    /// The overlay's bound, `Store.Options.overlayLimit`.
    public var overlayLimit: Int
    /// Snapshots open now (pinned query generations among them).
    public var openSnapshots: Int
    /// The commit version of the oldest open snapshot; it keeps older LMDB pages alive.
    public var oldestSnapshotVersion: UInt64?
    /// How long the oldest open snapshot has been open, in seconds.
    public var oldestSnapshotAge: Double?
    /// Snapshots the engine expired since open (`Store.Options.maxSnapshotAge` and
    /// `maxSnapshotLag`).
    public var expiredSnapshots: Int
    /// fdatasync calls on the log since open.
    public var logSyncs: Int
    /// Group appends to the log since open (one per group of concurrent commits).
    public var logAppends: Int

    /// Whether the store is open for reading only (`Store.Options.readOnly`). Then the
    /// versions are the writer's as far as this reader has followed them, `durableVersion`
    /// is the newest acknowledged version it read, and the log and sync counters are zero.
    public var readOnly = false
    /// Log records a read-only store has read since open to follow the writer: each refresh
    /// reads only the records appended since the last one. 0 for the writer.
    public var followedLogRecords = 0

    /// LMDB reader slots left by dead processes (a reader killed inside a snapshot) that the
    /// writer reclaimed since open (`mdb_reader_check`, about once a second).
    public var staleReadersCleared = 0

    /// Records in all tables, as of the applied version.
    public var recordCount: Int { recordsPerTable.values.reduce(0, +) }
}

extension StoreCore {
    func stats() throws(KVError) -> StoreStats {
        try refresh()
        let logFigures = log.withLock { log in
            (log.durableVersion, log.logBytes, log.segments.count, log.syncCount, log.appendCount)
        }
        let now = monotonicSeconds()
        let overlayFigures = overlay.withLock { state in
            let oldest = state.liveSnapshots.values.min { $0.version < $1.version }
            let unapplied = follower == nil ? state.unappliedCount
                : Int(state.latestVersion - min(state.latestVersion, state.appliedVersion))
            return (state.latestVersion, state.appliedVersion, state.bytes, unapplied,
                    state.liveSnapshots.count, oldest?.version, oldest.map { now - $0.openedAt }, state.tableHandles,
                    state.expiredSnapshots, (peak: state.peakBytes, largestGroup: state.largestPublishBytes))
        }
        var counts: [String: Int] = [:]
        let snapshot = try makeSnapshot()
        defer { snapshot.close() }
        for (name, _) in overlayFigures.7 {
            counts[name] = try snapshot.entryCount(in: name)
        }
        var info = stat()
        let fileBytes = stat(directory + "/data.mdb", &info) == 0 ? Int(info.st_size) : 0
        var stats = StoreStats(
            commitVersion: overlayFigures.0, appliedVersion: overlayFigures.1,
            durableVersion: follower == nil ? logFigures.0 : overlayFigures.0,
            logBytes: logFigures.1, logSegments: logFigures.2, lmdbFileBytes: fileBytes, mapSize: env.info.mapSize,
            recordsPerTable: counts, overlayBytes: overlayFigures.2, overlayCommits: overlayFigures.3,
            overlayPeakBytes: overlayFigures.9.peak, overlayLargestGroupBytes: overlayFigures.9.largestGroup,
            overlayLimit: options.overlayLimit,
            openSnapshots: overlayFigures.4, oldestSnapshotVersion: overlayFigures.5,
            oldestSnapshotAge: overlayFigures.6, expiredSnapshots: overlayFigures.8, logSyncs: logFigures.3, logAppends: logFigures.4)
        stats.staleReadersCleared = overlay.withLock { $0.staleReadersCleared }
        if let follower {
            stats.readOnly = true
            stats.followedLogRecords = follower.withLock { $0.recordsRead }
        }
        return stats
    }
}
