import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// How a commit is made durable before it is acknowledged.
///
/// | option | promise | price |
/// |---|---|---|
/// | `full` | survives a process crash, an OS crash and power loss | one fdatasync per group of concurrent commits |
/// | `normal` | survives a process crash; after power loss or an OS crash the newest commits may be lost, never a partial one, never corruption | none on the commit path |
///
/// Both can be set per store (`Store.Options.durability`) and overridden per commit.
public enum Durability: Sendable, Hashable {
    /// The commit's log record is fdatasync'd before `commit` returns. The default.
    case full
    /// The commit's log record is written (in the page cache) before `commit` returns.
    case normal
}

/// What a successful commit tells its caller.
public struct CommitInfo: Sendable, Hashable {
    /// The commit's version; every later commit has a higher one. When the batch wrote
    /// nothing (only checks, or deletes of absent keys) it is the version it was checked at.
    public let version: UInt64
    /// Per operation of the batch, in order: the record's version after it (puts), 0
    /// (deletes), or the version the check saw (checks).
    public let recordVersions: [UInt64]
}

/// What a checkpoint retired.
public struct CheckpointReport: Sendable, Hashable {
    /// The applied version every retired segment was at or below.
    public let appliedVersion: UInt64
    /// Log segments deleted.
    public let segmentsRemoved: Int
    /// Log bytes deleted.
    public let bytesRemoved: Int
}

/// A key-value store: LMDB holds the data, a write-ahead log in front of it makes each
/// commit durable with one append and one fdatasync shared by concurrent commits.
///
/// Every commit gets the next commit version; every record carries its own record
/// version. Reads go through snapshots. One process (and one `Store` in it) writes a
/// directory at a time; other processes may read it beside the writer (`Options.readOnly`).
///
/// ```swift
/// let store = try Store(directory: "/var/lib/mytool/store")
/// var batch = WriteBatch()
/// batch.put("Ann", forKey: "person/1", if: .absent)
/// let committed = try store.commit(batch)       // durable when it returns
/// let snapshot = try store.snapshot()
/// print(try snapshot.get("person/1")?.version ?? 0, committed.version)
/// ```
public final class Store: Sendable {
    /// Options fixed when the store is opened.
    public struct Options: Sendable {
        /// The durability of commits that do not say otherwise. Default `.full`.
        public var durability: Durability = .full
        /// LMDB's initial map size. The map doubles when it fills (while no snapshot is
        /// open); a large default means it rarely needs to. Costs only address space.
        public var mapSize: Int = 64 << 30
        /// LMDB reader slots. The engine keeps one for its commits, so at most
        /// `maxReaders - 1` snapshots can be open at once. Default 1024. Fixed when the
        /// store's lock file is created: reopening with a smaller value has no effect.
        public var maxReaders: Int = 1024
        /// The most tables. Default 256.
        public var maxTables: Int = 256
        /// The size of a log segment file (rounded up to a KiB; larger when one append needs
        /// more). Each segment is created at this size as a sparse file: only what has been
        /// written, plus up to 1 MiB of zeros ahead, takes disk space. When an append does
        /// not fit, a new segment is started and the old one sealed. Default 64 MiB.
        public var segmentSize: Int = 64 << 20
        /// The overlay's soft bound: once this many bytes are committed but not yet applied
        /// to LMDB, new commits wait for the applier. Default 256 MiB. A group already past
        /// the check may take it over the bound, and a single larger commit is accepted.
        public var overlayLimit: Int = 256 << 20
        /// The applier starts once this many bytes are pending, or after `applyInterval`.
        public var applyThreshold: Int = 8 << 20
        /// The longest a commit waits in the overlay before the applier picks it up (s).
        public var applyInterval: Double = 0.05
        /// The most commits one group append may carry.
        public var maxGroupCommits: Int = 512
        /// The longest a durable group's leader waits for more concurrent writers to join
        /// before it appends and syncs (s), while they keep arriving; only when the previous
        /// group held more than one commit, and no longer once as many commits are queued as
        /// writers were recently seen committing at once. Default 100 µs; 0 turns it off.
        public var groupCommitWait: Double = 100e-6
        /// The longest a writer waiting for its group's sync (or for its turn to lead)
        /// yields the processor in a loop, checking for its result, before it goes to sleep
        /// (s). Waking a sleeping thread costs its waker a system call and, on a virtual
        /// machine, an exit to the hypervisor: waking seven writers one by one took a group's
        /// leader longer than a quarter of a fast fdatasync. A yielding writer sees its result
        /// as soon as the leader stores it. No writer yields while the recent syncs averaged
        /// more than half of this (a slow disk: one wake-up is small next to one sync), so the
        /// processor time it costs stays bounded by the disk's speed. Default 1 ms; 0 always
        /// sleeps.
        public var commitSpinWait: Double = 1e-3
        /// How a damaged log record that is not a torn tail is treated on open.
        public var recovery: RecoveryMode = .strict
        /// Whether opening creates the store when the directory holds none. When false,
        /// opening a directory without a store throws `KVError.noStore`. Default true.
        public var createIfMissing = true
        /// How long a writer waits for a full overlay to drain while the map cannot grow
        /// because snapshots are open, before failing with `KVError.mapFull` (s).
        public var mapFullTimeout: Double = 10
        /// Bounds the data-file growth a forgotten snapshot can cause. LMDB cannot reuse a
        /// page that an open snapshot may still read, so while one stays open every commit
        /// applied after it takes new pages. A snapshot is **expired** (its LMDB read
        /// transaction ended, its reads throw `KVError.snapshotExpired`) when the applier is
        /// about to write to LMDB and the snapshot is either older than `maxSnapshotAge`
        /// seconds or more than `maxSnapshotLag` commits behind the latest. Default nil for
        /// both: snapshots live until closed, and `StoreStats.oldestSnapshotAge` reports them.
        ///
        /// ```swift
        /// var options = Store.Options()
        /// options.maxSnapshotAge = 600          // no snapshot pins pages for more than 10 min
        /// options.maxSnapshotLag = 1_000_000    // nor for more than a million commits
        /// ```
        public var maxSnapshotAge: Double? = nil
        /// See ``maxSnapshotAge``: the most commits a snapshot may fall behind the latest
        /// before the applier expires it. Default nil (no limit).
        public var maxSnapshotLag: UInt64? = nil
        /// Whether opening an existing store first verifies LMDB's data file: both meta
        /// pages, and every page reachable from the newer one (page numbers, page types,
        /// node bounds, key order, tree depth and counts, no cycles, the free-page list).
        /// LMDB keeps no page checksums and trusts every page it maps, so a damaged page
        /// header, branch page or page number can crash the process inside LMDB (an
        /// assertion, or SIGBUS past the end of the file); with verification such damage is
        /// `KVError.wrongFormat` naming the page. Default true.
        ///
        /// Price: one read of the live part of the file, page by page, before LMDB opens it:
        /// about 25 ms per 100 MB of data file from the page cache (75 ms for the 289 MB file
        /// of a 1M-record store with 100-byte values; from a cold disk, the disk's read time
        /// for the live pages). Overflow pages of large values are not read, only their
        /// headers. Memory: one page per tree level and one bit per page of the file. Turning it off opens in constant time, and a
        /// damaged page may then crash the process instead of throwing. Damage inside a key
        /// or value is caught by record checksums either way. `Store.check` always verifies.
        public var verifyDataFile = true
        /// Opens the store for reading only, beside the process that writes it (or while no
        /// process does). Takes no lock another process could see: the writer is never
        /// blocked or refused because of it, and any number of processes may read at once.
        /// Snapshots see every commit the writer acknowledged before they began (including
        /// commits still only in its log, read from the log), never one it has not
        /// acknowledged. `commit`, `flush` and `checkpoint` throw `KVError.readOnly`.
        ///
        /// Price: a snapshot first reads the log records appended since the last one (none
        /// when nothing changed: one load from a shared page), and the reader keeps those
        /// LMDB has not applied yet in memory. Never creates a store (`KVError.noStore`).
        /// A second `Store` of the same directory in one process is refused
        /// (`KVError.locked`), whatever its options. Default false.
        ///
        /// ```swift
        /// var options = Store.Options()
        /// options.readOnly = true
        /// let store = try Store(directory: "/var/lib/mytool/store", options: options)
        /// ```
        public var readOnly = false
        /// Failures to inject into LMDB's commits (tests).
        package var lmdbFaults: LMDBFaults? = nil

        public init() {}
    }

    package let core: StoreCore

    /// Opens (creating if needed) the store in `directory`, replaying its log.
    ///
    /// Throws `KVError.locked` when another process has it open, `KVError.corruptLog` when
    /// the log is damaged before its tail (see `Options.recovery`), `KVError.wrongFormat`
    /// for files that are not Cairn's.
    public convenience init(directory: String, options: Options = Options()) throws(KVError) {
        try self.init(directory: directory, options: options, fileSystem: PosixFileSystem())
    }

    /// Opens the store with a substitute file system for the log (tests).
    package init(directory: String, options: Options, fileSystem: any FileSystem) throws(KVError) {
        core = try StoreCore(directory: directory, options: options, fileSystem: fileSystem)
    }

    deinit { try? core.close() }

    /// Commits `batch` all-or-nothing and returns when it is durable (per `durability`).
    ///
    /// Concurrent commits are grouped: one log append and one fdatasync for the group.
    /// Throws `KVError.conditionFailed` listing every failed condition (nothing written),
    /// `KVError.keyTooLong`, `KVError.poisoned` after an earlier I/O failure.
    ///
    /// ```swift
    /// var batch = WriteBatch()
    /// batch.put("31", forKey: "age", if: .version(1))
    /// try store.commit(batch)
    /// ```
    @discardableResult
    public func commit(_ batch: consuming WriteBatch, durability: Durability? = nil) throws(KVError) -> CommitInfo {
        try core.commit(consume batch, durability: durability ?? core.options.durability)
    }

    /// A snapshot of the latest acknowledged commit.
    public func snapshot() throws(KVError) -> Snapshot {
        try core.makeSnapshot()
    }

    /// The newest commit version: what a snapshot taken now would read at, at least.
    ///
    /// Cheap enough to poll: for a read-only store (`Options.readOnly`) it is one load from
    /// the writer's shared page when nothing changed, and otherwise reads only the log
    /// records appended since the last refresh. A higher value than last time means the
    /// store changed.
    ///
    /// ```swift
    /// if try store.latestCommitVersion() > seen { reload() }
    /// ```
    public func latestCommitVersion() throws(KVError) -> UInt64 {
        try core.refresh()
        return core.overlay.withLock { $0.latestVersion }
    }

    /// How many reset read transactions the store keeps for its next snapshots (`IdleReaders`).
    package var idleReaderCount: Int { core.overlay.withLock { $0.idleReaders.count } }

    /// How many holders of closed snapshots the store keeps for its next ones (`SnapshotHolders`).
    package var snapshotHolderCount: Int { core.overlay.withLock { $0.snapshotHolders.count } }

    /// Waits until every commit acknowledged so far is applied to LMDB.
    public func flush() throws(KVError) {
        try core.flush()
    }

    /// Applies everything pending, then deletes the log segments LMDB holds durably.
    ///
    /// The applier retires sealed segments by itself, and segments are sealed when they
    /// reach `Options.segmentSize`; call this to also seal and retire the active segment
    /// now (for example before a backup of the LMDB file).
    @discardableResult
    public func checkpoint() throws(KVError) -> CheckpointReport {
        try core.checkpoint()
    }

    /// What opening replayed or cut.
    public var recoveryReport: RecoveryReport { core.recoveryReport }

    /// Counters and sizes; see `StoreStats`.
    public func stats() throws(KVError) -> StoreStats {
        try core.stats()
    }

    /// Applies what is pending, retires the log, and closes. Open snapshots are ended.
    /// Called by `deinit` too. Errors of the final flush are not reported: use
    /// `shutDown()` to learn of them.
    public func close() {
        try? core.close()
    }

    /// Closes like `close()`, then reports what the final flush could not do: for example
    /// a failed fdatasync of `.normal` commits, which may then be lost on power loss (the
    /// store is closed either way; reopening recovers what the log holds).
    ///
    /// ```swift
    /// do { try store.shutDown() } catch { log("last commits may not be durable: \(error)") }
    /// ```
    public func shutDown() throws(KVError) {
        try core.close()
    }

    /// Stops as a crash would: no flush, no sync, threads stopped, files closed (tests).
    package func simulateCrash() {
        try? core.close(crash: true)
    }

    /// The store's directory.
    public var directory: String { core.directory }

    static func validate(key: [UInt8], maxKeySize: Int) throws(KVError) {
        if key.isEmpty { throw KVError.emptyKey }
        if key.count > maxKeySize { throw KVError.keyTooLong(length: key.count, limit: maxKeySize) }
    }

    static func validate(table: String) throws(KVError) {
        if !isValid(table: table) { throw KVError.invalidTableName(table) }
    }

    package static func isValid(table: String) -> Bool {
        let count = table.utf8.count
        return count > 0 && count <= 200 && !table.hasPrefix(StoreCore.reservedPrefix)
    }
}
