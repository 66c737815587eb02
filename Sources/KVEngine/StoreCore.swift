import CLMDB
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// The store's machinery, shared by `Store` and its snapshots.
///
/// Locks, always taken in this order when nested: `commitQueue`, then `log`, then
/// `overlay`. Who guards what is said at each field.
///
/// `@unchecked Sendable`: mutable state lives behind the locks named below; `applier`
/// and `processLock` are touched only by `init` and by `close` under `closing`.
package final class StoreCore: @unchecked Sendable {
    static let reservedPrefix = "__cairn"
    static let metaTable = "__cairn_meta"
    static let appliedKey: [UInt8] = Array("applied".utf8)
    static let formatKey: [UInt8] = Array("format".utf8)
    /// Present once the store's first log segment exists durably.
    static let logStartedKey: [UInt8] = Array("log-started".utf8)
    static let storeFormat: UInt32 = 1

    let directory: String
    let walDirectory: String
    let options: Store.Options
    let fileSystem: any FileSystem
    let env: LMDBEnvironment
    let maxKeySize: Int
    let metaHandle: MDB_dbi
    let recoveryReport: RecoveryReport

    /// Commits waiting for the leader, oldest first; the first is the leader.
    let commitQueue = ConditionLock(CommitQueue())
    /// The log writer: appends (leader), syncs (applier), rotation and retirement.
    let log: ConditionLock<LogWriter>
    /// Unapplied commits, snapshots, versions, applier signals.
    package let overlay: ConditionLock<OverlayState>
    /// Whether `close` ran; guards the teardown below.
    private let closing = ConditionLock(false)
    private var applier: pthread_t?
    private var processLock: ProcessLock?
    /// The writer's acknowledged version for reader processes: the writer publishes through
    /// it (under the commit leader's turn), a reader reads it. nil on a full disk's read-only
    /// open, and for a reader on a file system where it cannot exist.
    let published: PublishedProgress?
    /// A reader's position in the writer's log (`Options.readOnly`); nil for the writer.
    /// Taken before `overlay` when nested.
    let follower: ConditionLock<LogFollower>?
    /// A reader's arrays of dropped overlay tables, for its refreshes to fill (`ByteArrayPool`);
    /// nil for the writer. Taken alone, or last (under the follower's lock, by a refresh).
    let arrayPool: ConditionLock<ByteArrayPool>?

    /// What opening made, before the core holds it: LMDB's meta table, the report, the log
    /// writer and the overlay's first state.
    typealias OpenedParts = (meta: MDB_dbi, report: RecoveryReport, writer: LogWriter, state: OverlayState)

    init(directory: String, options: Store.Options, fileSystem: any FileSystem) throws(KVError) {
        self.directory = directory
        self.walDirectory = directory + "/wal"
        self.options = options
        self.fileSystem = fileSystem
        let lock: ProcessLock
        var env: LMDBEnvironment
        var opened: OpenedParts
        var published: PublishedProgress? = nil
        var follower: LogFollower? = nil
        if options.readOnly {
            // A reader beside (or without) the writer process: it changes nothing of the store
            // (only the shared pages, lock.mdb and `published`, are made when no writer made them).
            guard PosixFileSystem().exists(directory + "/data.mdb") else { throw KVError.noStore(path: directory) }
            lock = try ProcessLock(directory: directory, reading: true)
            let following = try StoreCore.openForFollowing(directory: directory, options: options, fileSystem: fileSystem)
            (env, opened, published, follower) = (following.env, following.opened, following.published, following.follower)
        } else {
            (lock, env, opened, published) = try StoreCore.openForWriting(directory: directory, options: options,
                                                                          fileSystem: fileSystem)
        }
        self.env = env
        self.published = published
        self.follower = follower.map { ConditionLock($0) }
        arrayPool = follower == nil ? nil : ConditionLock(ByteArrayPool())
        maxKeySize = env.maxKeySize
        metaHandle = opened.meta
        recoveryReport = opened.report
        log = ConditionLock(opened.writer)
        var state = opened.state
        do throws(KVError) {
            // A reader never commits: no reader slot kept for commit views.
            if !options.readOnly {
                let reserved = try env.beginTransaction(readOnly: true)
                reserved.reset()
                state.reservedReader = reserved
            }
        } catch {
            env.close()
            throw error
        }
        let readOnly = state.applyError != nil
        overlay = ConditionLock(state)
        processLock = lock
        let core = self
        // Read-only (a reader, or a full disk): no applier, nothing may be written.
        applier = readOnly ? nil : startThread { core.applierLoop() }
        // Last: readers of the previous writer rebuild their views from what LMDB holds now.
        if !readOnly { published?.begin(acknowledged: opened.report.lastVersion) }
    }

    /// The writer's open: takes the process lock, creates the store if needed (or again, after
    /// an interrupted creation), verifies LMDB's data file, recovers, and opens the published
    /// page. On a full disk, opens for reading only instead, writing nothing.
    private static func openForWriting(directory: String, options: Store.Options, fileSystem: any FileSystem) throws(KVError)
        -> (lock: ProcessLock, env: LMDBEnvironment,
            opened: OpenedParts, published: PublishedProgress?)
    {
        var env: LMDBEnvironment
        var opened: OpenedParts
        var published: PublishedProgress? = nil
        if !options.createIfMissing && !PosixFileSystem().exists(directory + "/data.mdb") {
            throw KVError.noStore(path: directory)
        }
        try PosixFileSystem().createDirectory(directory)
        let lock = try ProcessLock(directory: directory)
        var created = !PosixFileSystem().exists(directory + "/data.mdb")
        var creationRedone: String? = nil
        if !created, let found = try StoreCore.interruptedCreation(directory: directory, fileSystem: fileSystem) {
            // Nothing was ever stored: do the creation again, from the start.
            guard options.createIfMissing else { throw KVError.noStore(path: directory) }
            try StoreCore.discardInterruptedCreation(directory: directory, fileSystem: fileSystem)
            created = true
            creationRedone = found
        }
        try fileSystem.createDirectory(directory + "/wal")
        if created {
            // A new store's directories must survive power loss before its first commit
            // can be acknowledged: sync the parent's entry for the store, and the store's
            // entry for wal/.
            let parent = directory.contains("/") ? String(directory[..<directory.lastIndex(of: "/")!]) : "."
            try PosixFileSystem().syncDirectory(parent.isEmpty ? "/" : parent)
            try fileSystem.syncDirectory(directory)
        }
        if !created && options.verifyDataFile {
            // Before LMDB maps the file: LMDB trusts every page and crashes on a damaged one.
            _ = try LMDBVerifier.verify(path: directory + "/data.mdb")
        }
        do throws(KVError) {
            env = try LMDBEnvironment(directory: directory, mapSize: options.mapSize, maxReaders: options.maxReaders,
                                      maxTables: options.maxTables, faults: options.lmdbFaults)
            do throws(KVError) {
                opened = try StoreCore.recover(env: env, options: options, fileSystem: fileSystem, walDirectory: directory + "/wal")
            } catch {
                env.close()
                throw error
            }
            do throws(KVError) {
                published = try PublishedProgress.openForWriting(directory: directory)
            } catch {
                opened.writer.close()
                env.close()
                throw error
            }
        } catch let error where error.isDiskFull && !created {
            // Reading must not need free space: open for reading only, with what LMDB lacks
            // read from the log into memory, writing nothing anywhere.
            env = try LMDBEnvironment(directory: directory, mapSize: options.mapSize, maxReaders: options.maxReaders,
                                      maxTables: options.maxTables, access: .readUnlocked)
            do throws(KVError) {
                opened = try StoreCore.recoverForReading(env: env, options: options, fileSystem: fileSystem,
                                                         walDirectory: directory + "/wal", cause: error)
            } catch {
                env.close()
                throw error
            }
        }
        opened.report.creationRedone = creationRedone
        return (lock, env, opened, published)
    }

    /// What an interrupted creation left, when the store directory holds one: a data file
    /// shorter than LMDB's two meta pages (LMDB writes both in one write, before anything
    /// else, and never shrinks the file) and no log record. Such a store never stored
    /// anything. nil when the store was created, or when the log holds records (then the
    /// data file is damage, which the verifier reports).
    static func interruptedCreation(directory: String, fileSystem: any FileSystem) throws(KVError) -> String? {
        let path = directory + "/data.mdb"
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let pageSize = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        let found: String
        if Int(info.st_size) < 2 * pageSize {
            found = "data.mdb is \(info.st_size) bytes, shorter than LMDB's two meta pages"
        } else if StoreCore.hasNoCommittedTransaction(path) {
            found = "data.mdb holds no committed LMDB transaction (both meta pages at transaction 0)"
        } else {
            return nil
        }
        let wal = directory + "/wal"
        if fileSystem.exists(wal) {
            for name in try fileSystem.contentsOfDirectory(wal) {
                guard let first = LogFormat.firstVersion(ofSegmentNamed: name) else { continue }
                // A store that committed anything has a segment after the first.
                guard first == 1 else { return nil }
                let file = try fileSystem.open(wal + "/" + name, create: false)
                defer { file.close() }
                let bytes = try file.read(at: 0, count: min(try file.size(), try file.dataEnd()))
                if bytes.withUnsafeBytes({ LogScanner.mayHoldRecords($0, firstVersion: 1) }) { return nil }
            }
        }
        return found + ", and the log holds no record: the store's creation was interrupted (a full disk, a crash); it was created again"
    }

    /// Whether both of LMDB's meta pages say transaction 0: LMDB wrote them when it created
    /// the file, and no transaction (not even the one writing the store's format) committed.
    private static func hasNoCommittedTransaction(_ path: String) -> Bool {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { Glibc.close(descriptor) }
        func u64(_ offset: Int) -> UInt64? {
            var value: UInt64 = 0
            return pread(descriptor, &value, 8, off_t(offset)) == 8 ? UInt64(littleEndian: value) : nil
        }
        // The meta page (LMDBVerifier's layout): magic at 16, the page size in the free
        // tree's md_pad at 40, the transaction at 144.
        var magic: UInt32 = 0, pageSize: UInt32 = 0
        guard pread(descriptor, &magic, 4, 16) == 4, UInt32(littleEndian: magic) == 0xBEEF_C0DE,
              pread(descriptor, &pageSize, 4, 40) == 4 else { return false }
        let size = Int(UInt32(littleEndian: pageSize))
        guard size >= 512, size <= 1 << 16, let first = u64(144), let second = u64(size + 144) else { return false }
        return first == 0 && second == 0
    }

    /// Removes what an interrupted creation left, so that the creation starts again.
    private static func discardInterruptedCreation(directory: String, fileSystem: any FileSystem) throws(KVError) {
        let wal = directory + "/wal"
        if fileSystem.exists(wal) {
            for name in try fileSystem.contentsOfDirectory(wal) where LogFormat.firstVersion(ofSegmentNamed: name) != nil {
                try fileSystem.remove(wal + "/" + name)
            }
        }
        for name in ["data.mdb", "lock.mdb"] where PosixFileSystem().exists(directory + "/" + name) {
            try PosixFileSystem().remove(directory + "/" + name)
        }
    }

    /// Opens the tables, replays what LMDB has not applied (in large transactions), cuts a
    /// torn tail, starts a fresh log segment and retires the replayed ones.
    private static func recover(env: LMDBEnvironment, options: Store.Options, fileSystem: any FileSystem,
                                walDirectory: String) throws(KVError)
        -> OpenedParts
    {
        _ = try env.clearStaleReaders()
        // The verifier checks the length with everything else; without it, this is the one
        // guard against SIGBUS.
        if !options.verifyDataFile { try env.checkFileLength() }
        let opened = try openTables(env)
        var tables = opened.tables
        var applied = opened.applied
        var pending: [LoggedCommit] = []
        var pendingBytes = 0
        var replayedCommits = 0, replayedBytes = 0
        func applyPending() throws(KVError) {
            guard let last = pending.last else { return }
            let created = try applyGrowingMap(env: env, meta: opened.meta, commits: pending[...], through: last.version,
                                              known: tables, tryGrow: { () throws(KVError) -> Bool in
                                                  // Opening: no snapshot exists yet.
                                                  try env.setMapSize(env.info.mapSize * 2)
                                                  return true
                                              }, timeout: options.mapFullTimeout)
            tables.merge(created) { old, _ in old }
            applied = last.version
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
        }
        let scanner = LogScanner(fileSystem: fileSystem, directory: walDirectory,
                                 appliedVersion: applied, mode: options.recovery, repair: true,
                                 logStarted: opened.logStarted)
        var (report, segments, lastLogVersion, interrupted) = try scanner.scan { (version, payload) throws(KVError) in
            guard version > applied else { return }
            guard let commit = LogRecordCodec.decodePayload(payload, version: version) else {
                throw KVError.corruptLog(file: walDirectory, offset: 0,
                                         reason: "record of version \(version) passed its checksum but does not decode")
            }
            pending.append(commit)
            pendingBytes += payload.count
            replayedCommits += 1
            replayedBytes += payload.count + LogFormat.recordHeaderSize
            if pendingBytes >= 64 << 20 { try applyPending() }
        }
        try applyPending()
        let lastVersion = max(lastLogVersion ?? 0, applied)
        report.replayedCommits = replayedCommits
        report.replayedBytes = replayedBytes
        report.lastVersion = lastVersion

        var writer = try LogWriter(
            fileSystem: fileSystem, directory: walDirectory, segmentLimit: options.segmentSize,
            nextVersion: lastVersion + 1, retained: segments, interrupted: interrupted)
        _ = try writer.retire(appliedThrough: applied)
        segments.removeAll()
        if !opened.logStarted {
            // The first segment is durable now; from here on an empty log is damage.
            do throws(KVError) {
                try env.write { (transaction) throws(KVError) in
                    try transaction.put(logStartedKey, size: 1, in: opened.meta) { $0.storeBytes(of: 1, as: UInt8.self) }
                }
            } catch {
                writer.close()
                throw error
            }
        }

        var state = OverlayState()
        state.appliedVersion = lastVersion
        state.watermark = lastVersion
        state.latestVersion = lastVersion
        state.tableHandles = tables
        return (opened.meta, report, writer, state)
    }

    /// Reads a read-only store's log into memory: the commits LMDB lacks become the
    /// overlay's, and the store is poisoned by `cause` (every commit fails with it). Changes
    /// nothing on disk: no cut, no new segment, no LMDB write.
    private static func recoverForReading(env: LMDBEnvironment, options: Store.Options, fileSystem: any FileSystem,
                                          walDirectory: String, cause: KVError) throws(KVError)
        -> OpenedParts
    {
        let opened = try openTables(env, readOnly: true)
        var commits: [LoggedCommit] = []
        let scanner = LogScanner(fileSystem: fileSystem, directory: walDirectory,
                                 appliedVersion: opened.applied, mode: options.recovery, repair: false,
                                 logStarted: opened.logStarted)
        var (report, segments, lastLogVersion, _) = try scanner.scan { (version, payload) throws(KVError) in
            guard version > opened.applied else { return }
            guard let commit = LogRecordCodec.decodePayload(payload, version: version) else {
                throw KVError.corruptLog(file: walDirectory, offset: 0,
                                         reason: "record of version \(version) passed its checksum but does not decode")
            }
            commits.append(commit)
        }
        let lastVersion = max(lastLogVersion ?? 0, opened.applied)
        report.lastVersion = lastVersion
        report.commitsHeldInMemory = commits.count
        report.openedReadOnly = cause
        let writer = LogWriter(unavailable: cause, fileSystem: fileSystem, directory: walDirectory,
                               segmentLimit: options.segmentSize, lastVersion: lastVersion, retained: segments)
        segments.removeAll()
        var state = OverlayState()
        state.appliedVersion = opened.applied
        state.watermark = opened.applied
        state.latestVersion = opened.applied
        state.tableHandles = opened.tables
        _ = state.publish(commits)
        state.latestVersion = lastVersion
        state.applyError = cause
        return (opened.meta, report, writer, state)
    }

    /// Opens the meta table and every user table; reads the applied version. `readOnly`:
    /// in a read transaction, for an environment opened read-only (nothing is written; a
    /// store without its format key is refused).
    static func openTables(_ env: LMDBEnvironment, readOnly: Bool = false) throws(KVError)
        -> (meta: MDB_dbi, tables: [String: MDB_dbi], applied: UInt64, logStarted: Bool)
    {
        func read(_ transaction: LMDBTransaction) throws(KVError)
            -> (meta: MDB_dbi, tables: [String: MDB_dbi], applied: UInt64, logStarted: Bool)
        {
            guard let meta = try transaction.openTable(metaTable, create: !readOnly) else {
                throw KVError.wrongFormat(file: env.path + "/data.mdb", reason: "LMDB's data file has no \(metaTable) table")
            }
            let format = try transaction.value(for: formatKey, in: meta).map { bytes in
                bytes.count == 4 ? bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) } : UInt32.max
            }
            if let format, format != storeFormat {
                throw KVError.wrongFormat(file: env.path + "/data.mdb", reason: "unknown store format \(format)")
            }
            if format == nil {
                try transaction.put(formatKey, size: 4, in: meta) { $0.storeBytes(of: storeFormat.littleEndian, as: UInt32.self) }
            }
            let applied = try transaction.value(for: appliedKey, in: meta).map { bytes in
                bytes.count == 8 ? bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) } : 0
            } ?? 0
            let logStarted = try transaction.value(for: logStartedKey, in: meta) != nil
            var tables: [String: MDB_dbi] = [:]
            for name in try transaction.tableNames() where !name.hasPrefix(reservedPrefix) {
                tables[name] = try transaction.openTable(name, create: false)
            }
            return (meta, tables, applied, logStarted)
        }
        guard readOnly else { return try env.write(read) }
        let transaction = try env.beginTransaction(readOnly: true)
        let result: (meta: MDB_dbi, tables: [String: MDB_dbi], applied: UInt64, logStarted: Bool)
        do throws(KVError) {
            result = try read(transaction)
        } catch {
            transaction.abort()
            throw error
        }
        // Committed, not aborted: the table handles it opened stay valid.
        try transaction.commitRead()
        return result
    }

    // MARK: Snapshots

    /// A snapshot of the latest commit. `reserved`: the commit leader's view, which uses the
    /// engine's own reader slot and hands it back when closed.
    func makeSnapshot(reserved: Bool = false) throws(KVError) -> Snapshot {
        // Everything under the overlay lock, the LMDB read transaction included:
        // - LMDB then holds exactly the applied state at this moment, which lies between
        //   the watermark (floor) and the latest commit (version). Begun after the lock
        //   was released, it could see a commit newer than `version` that the applier
        //   applied in between, and answer from it.
        // - The map cannot be resized under it (the applier resizes under this lock, only
        //   with no snapshot registered).
        // - `close` sees every snapshot, so none outlives the environment.
        if follower != nil { try refresh() }
        // A reader retries when the writer's LMDB created a table between the opening of the
        // new tables and the snapshot's transaction (the table would read as absent).
        for _ in 0..<64 {
            // What a reader's pruning dropped, recycled after the lock.
            var dropped: OverlayTable? = nil
            let made = try overlay.withLock { (state) throws(KVError) -> Snapshot? in
                if state.closing { throw KVError.closed }
                let tablesApplied = follower != nil && !state.pendingTables.isEmpty ? try openPendingTables(&state) : nil
                let transaction: LMDBTransaction
                let recycles: Bool
                if reserved, let kept = state.reservedReader {
                    try kept.renew()
                    state.reservedReader = nil
                    transaction = kept
                    recycles = true
                } else {
                    transaction = try renewedReader(&state)
                    recycles = false
                }
                if follower != nil {
                    do throws(KVError) {
                        dropped = try adoptApplied(in: transaction, &state)
                    } catch {
                        transaction.abort()
                        throw error
                    }
                    if let tablesApplied, state.appliedVersion != tablesApplied, !state.pendingTables.isEmpty {
                        transaction.reset()
                        state.idleReaders.keep(transaction)
                        return nil
                    }
                }
                let id = state.nextSnapshotID
                state.nextSnapshotID += 1
                let held = state.snapshotHolders.take()
                held.install(transaction, snapshotID: id, tables: state.tableHandles)
                let snapshot = Snapshot(core: self, id: id, floor: state.watermark, version: state.latestVersion,
                                        transaction: held, recycles: recycles)
                state.liveSnapshots[id] = LiveSnapshot(floor: state.watermark, version: state.latestVersion,
                                                       openedAt: monotonicSeconds(), transaction: held, recycles: recycles)
                return snapshot
            }
            recycle(dropped)
            if let made { return made }
        }
        throw KVError.lmdb(code: MDB_BAD_DBI, operation: "opening the tables the writer keeps creating")
    }

    /// A kept reader renewed (`IdleReaders`), or a new read transaction; under the overlay lock.
    func renewedReader(_ state: inout OverlayState) throws(KVError) -> LMDBTransaction {
        guard let idle = state.idleReaders.take() else { return try beginReadTransaction(&state) }
        do throws(KVError) {
            try idle.renew()
            return idle
        } catch {
            idle.abort()
            return try beginReadTransaction(&state)
        }
    }

    /// A new read transaction, under the overlay lock.
    func beginReadTransaction(_ state: inout OverlayState) throws(KVError) -> LMDBTransaction {
        do throws(KVError) {
            return try env.beginTransaction(readOnly: true)
        } catch KVError.lmdb(let code, _) where code == lmdbReadersFull {
            // Slots of dead processes may be what fills the table; reclaim and try once more.
            _ = try env.clearStaleReaders()
            return try env.beginTransaction(readOnly: true)
        } catch KVError.lmdb(let code, let operation) where code == MDB_MAP_RESIZED && follower != nil {
            // The writer grew the map past this reader's. Adopting its size needs every
            // transaction of this process ended; with snapshots open, the reader must wait.
            guard state.liveSnapshots.isEmpty else { throw KVError.lmdb(code: code, operation: operation) }
            state.idleReaders.abortAll()
            state.reservedReader?.abort()
            state.reservedReader = nil
            try env.setMapSize(0)
            return try env.beginTransaction(readOnly: true)
        }
    }

    /// `reader`: the snapshot's transaction, reset: the reserved reader (`reserved`), kept for
    /// the next commit group, or one kept for later snapshots (`IdleReaders`). `holder`: the
    /// snapshot's, serving none now, kept for later snapshots (`SnapshotHolders`).
    func snapshotDidClose(id: Int, reader: LMDBTransaction? = nil, reserved: Bool = false, holder: SnapshotTransaction? = nil) {
        // Wake waiters only when one can be waiting for this: the applier waits for open
        // snapshots to end before it grows the map, and a sweep may free overlay space.
        // Waking the applier after every commit's view snapshot cost a context switch each.
        let wake = overlay.withLock { state -> Bool in
            if let reader {
                if state.closing {
                    reader.abort()
                } else if reserved {
                    state.reservedReader = reader
                } else {
                    state.idleReaders.keep(reader)
                }
            }
            if let holder, !state.closing { state.snapshotHolders.keep(holder) }
            guard let closed = state.liveSnapshots.removeValue(forKey: id) else { return false }
            var freed = false
            if state.keptForSnapshots && closed.floor < closed.version {
                state.sweep()
                freed = true
            }
            return freed || state.mapGrowthPending || state.closing
        }
        if wake { overlay.broadcast() }
    }

    // MARK: Flush, checkpoint, close

    func flush() throws(KVError) {
        if options.readOnly { throw KVError.readOnly(path: directory) }
        let target = overlay.withLock { state in
            state.flushRequested = true
            return state.latestVersion
        }
        overlay.broadcast()
        while true {
            let done = try overlay.wait(
                until: { $0.appliedVersion >= target || $0.applyError != nil || $0.stopping },
                timeout: options.mapFullTimeout
            ) { (state, ready) throws(KVError) -> Bool in
                if let error = state.applyError { throw error }
                if state.appliedVersion >= target { return true }
                if state.stopping { throw KVError.closed }
                // Never wait forever on a map that cannot grow while snapshots stay open.
                if !ready && state.mapGrowthPending {
                    throw KVError.mapFull(mapSize: env.info.mapSize, openSnapshots: state.liveSnapshots.count)
                }
                return false
            }
            if done { return }
        }
    }

    func checkpoint() throws(KVError) -> CheckpointReport {
        try flush()
        let applied = overlay.withLock { $0.appliedVersion }
        let removed = try log.withLock { (log) throws(KVError) in
            if log.activeHasRecords && log.writtenVersion <= applied {
                try log.rotate(nextVersion: log.writtenVersion + 1)
            }
            return try log.retire(appliedThrough: applied)
        }
        return CheckpointReport(appliedVersion: applied, segmentsRemoved: removed.segments, bytesRemoved: removed.bytes)
    }

    /// Closes the store; with `crash`, the way a crash would (nothing flushed or synced).
    /// Throws what the final flush or log retirement could not do; the store is closed
    /// either way, and only the first call reports.
    func close(crash: Bool = false) throws(KVError) {
        let first = closing.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        // Wait for the commit in flight, and make later ones fail with `closed`.
        commitQueue.withLock { $0.closed = true }
        commitQueue.wait(until: { $0.waiters.isEmpty }) { _, _ in }
        // End the snapshots first: map growth may be waiting for them, and the flush
        // below for the map to grow.
        let snapshots = overlay.withLock { state in
            state.closing = true
            state.reservedReader?.abort()
            state.reservedReader = nil
            state.idleReaders.abortAll()
            state.snapshotHolders.dropAll()
            defer { state.liveSnapshots.removeAll() }
            return state.liveSnapshots.map { (id: $0.key, holder: $0.value.transaction) }
        }
        for snapshot in snapshots { snapshot.holder.invalidate(snapshotID: snapshot.id) }
        overlay.broadcast()
        var failure: KVError? = nil
        // A reader has nothing to flush or retire: it closes as a crash would.
        let crash = crash || options.readOnly
        if !crash {
            do { try flush() } catch { failure = error }
        }
        overlay.withLock { $0.stopping = true }
        overlay.broadcast()
        if let applier { pthread_join(applier, nil) }
        applier = nil
        if !crash && failure == nil {
            let applied = overlay.withLock { $0.appliedVersion }
            do {
                _ = try log.withLock { (log) throws(KVError) in try log.retire(appliedThrough: applied) }
            } catch {
                failure = error
            }
        }
        log.withLock { $0.close() }
        follower?.withLock { $0.close() }
        env.close()
        processLock = nil
        if let failure { throw failure }
    }
}

/// Starts a joinable POSIX thread running `body`.
package func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let code = pthread_create(&thread, nil, { argument in
        let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    precondition(code == 0, "pthread_create failed with \(code)")
    return thread
}
