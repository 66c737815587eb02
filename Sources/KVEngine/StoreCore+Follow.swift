import CLMDB
import Locking

// A read-only store in another process than the writer's (`Store.Options.readOnly`).
//
// LMDB serves its reads (opened MDB_RDONLY with the shared lock file, so each read
// transaction holds a reader slot the writer respects). What LMDB does not hold yet lives
// only in the writer's memory and its log, so the reader follows the log: it replays the
// records after LMDB's applied version into an overlay of its own, and each refresh reads
// only the records appended since the last one, up to the version the writer has published
// as acknowledged (`PublishedProgress`), never past it.
//
// A snapshot is then what the writer's are: an LMDB read transaction, whose applied version
// (read inside it) is the floor, and the overlay above it. Records at or below LMDB's
// applied version are stepped over, never decoded; overlay entries at or below it are pruned
// as for the writer. When the segment the follower needs was retired, LMDB holds what it
// held, and the follower restarts after LMDB's applied version. When a new writer opens (a
// new generation), the same: and if this reader saw commits that reopening lost (a power
// loss, a recovery cut), its open snapshots expire and its overlay is dropped.

extension StoreCore {
    /// Opens LMDB for shared reading and reads the log tail LMDB lacks.
    static func openForFollowing(directory: String, options: Store.Options, fileSystem: any FileSystem) throws(KVError)
        -> (env: LMDBEnvironment, opened: OpenedParts,
            published: PublishedProgress?, follower: LogFollower)
    {
        // The data file is verified only while no writer changes it under the verifier.
        if options.verifyDataFile && ProcessLock.holder(directory: directory) == nil {
            _ = try LMDBVerifier.verify(path: directory + "/data.mdb")
        }
        let env = try LMDBEnvironment(directory: directory, mapSize: options.mapSize, maxReaders: options.maxReaders,
                                      maxTables: options.maxTables, access: .readShared)
        do throws(KVError) {
            // Slots of dead readers, so that they pin no pages for the writer either.
            _ = try env.clearStaleReaders()
            if !options.verifyDataFile { try env.checkFileLength() }
            let published = try PublishedProgress.openForReading(directory: directory)
            let tables = try openTables(env, readOnly: true)
            let cause = KVError.readOnly(path: directory)
            var state = OverlayState()
            state.appliedVersion = tables.applied
            state.watermark = tables.applied
            state.latestVersion = tables.applied
            state.tableHandles = tables.tables
            state.applyError = cause
            let writer = LogWriter(unavailable: cause, fileSystem: fileSystem, directory: directory + "/wal",
                                   segmentLimit: options.segmentSize, lastVersion: tables.applied, retained: [])
            var report = RecoveryReport()
            report.lastVersion = tables.applied
            report.openedReadOnly = cause
            let follower = LogFollower(fileSystem: fileSystem, directory: directory + "/wal", after: tables.applied,
                                       generation: published?.read().generation ?? 0, marks: published)
            return (env, (tables.meta, report, writer, state), published, follower)
        } catch {
            env.close()
            throw error
        }
    }

    /// Brings a reader's overlay up to the writer's published acknowledged version, reading
    /// only the log records appended since the last refresh. A no-op for the writer.
    func refresh() throws(KVError) {
        guard let follower else { return }
        try follower.withLock { (position) throws(KVError) in
            let (generation, acknowledged) = published?.read() ?? (0, 0)
            if generation != position.generation {
                try rejoin(&position, generation: generation)
            }
            // Generation 0: no writer ever published; every intact record counts.
            let limit = generation == 0 ? UInt64.max : acknowledged
            if position.nextVersion > limit { return }
            // Commits LMDB holds already are stepped over, not decoded: with more than a few
            // waiting, learning LMDB's applied version first (about two commits' decoding)
            // spares a paced reader most of the writer's commits.
            if limit - position.nextVersion >= StoreCore.commitsWorthAnAppliedCheck { try adoptApplied() }
            for _ in 0..<8 {
                // Sized once for the commits acknowledged since (grown by doubling, the buffer
                // was reallocated about log2(n) times); not when no writer published a limit.
                var inserts = OverlayInserts(capacity: limit != .max && limit >= position.nextVersion
                                                 ? Int(min(limit - position.nextVersion, 1023) + 1) : 0)
                let applied = overlay.withLock { $0.appliedVersion }
                // A reader's pool is made with its follower.
                let outcome = try arrayPool!.withLock { (arrays) throws(KVError) in
                    try position.read(through: limit, skipping: applied, into: &inserts, arrays: arrays)
                }
                let reached = position.nextVersion - 1
                let replaced = overlay.withLock { state -> [OverlayEntry] in
                    let replaced = state.publish([], inserts: &inserts)
                    state.latestVersion = max(state.latestVersion, reached)
                    return replaced
                }
                _ = consume replaced
                guard case .retired = outcome else { return }
                // LMDB holds the retired segment: continue after what it has applied.
                let lmdbApplied = try readAppliedVersion()
                position.restart(after: max(lmdbApplied, reached), generation: generation)
                overlay.withLock { $0.latestVersion = max($0.latestVersion, lmdbApplied) }
            }
            throw KVError.corruptLog(file: walDirectory, offset: 0,
                                     reason: "the log segment holding commit \(position.nextVersion) kept disappearing while LMDB had not applied it")
        }
    }

    /// A new writer generation: continue after what LMDB holds now. Commits this reader saw
    /// beyond the version the new writer opened at were lost by the reopening: snapshots
    /// that may show them expire, and the overlay is dropped.
    private func rejoin(_ position: inout LogFollower, generation: UInt64) throws(KVError) {
        let start = published?.startVersion ?? 0
        let lmdbApplied = try readAppliedVersion()
        let lost = overlay.withLock { state -> [(id: Int, holder: SnapshotTransaction)] in
            guard state.latestVersion > start else { return [] }
            state.discardEntries()
            state.latestVersion = lmdbApplied
            return state.liveSnapshots.map { (id: $0.key, holder: $0.value.transaction) }
        }
        for snapshot in lost {
            _ = snapshot.holder.expire(
                snapshotID: snapshot.id, reason: "the writer reopened without commits this snapshot showed (a power loss or a recovery cut)")
        }
        position.restart(after: lmdbApplied, generation: generation)
        overlay.withLock { $0.latestVersion = max($0.latestVersion, lmdbApplied) }
    }

    /// LMDB's applied version now, from a read transaction of its own.
    func readAppliedVersion() throws(KVError) -> UInt64 {
        let transaction = try overlay.withLock { (state) throws(KVError) in try beginReadTransaction(&state) }
        defer { transaction.abort() }
        return try StoreCore.appliedVersion(in: transaction, meta: metaHandle)
    }

    static func appliedVersion(in transaction: LMDBTransaction, meta: MDB_dbi) throws(KVError) -> UInt64 {
        try transaction.value(for: appliedKey, in: meta).map { bytes in
            bytes.count == 8 ? bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) } : 0
        } ?? 0
    }

    /// LMDB's applied version as the data file's newest meta page holds it, read without the
    /// lock file (`MDB_NOLOCK`). A writer killed after writing its meta page (a synchronous
    /// write, milliseconds long) but before recording the transaction in lock.mdb leaves every
    /// process sharing the lock file one LMDB transaction behind until the next writer
    /// commits; the next writer, and this, see the meta page.
    package static func appliedVersionOnDisk(directory: String, options: Store.Options = Store.Options()) throws(KVError) -> UInt64 {
        let env = try LMDBEnvironment(directory: directory, mapSize: options.mapSize, maxReaders: options.maxReaders,
                                      maxTables: options.maxTables, access: .readUnlocked)
        defer { env.close() }
        return try openTables(env, readOnly: true).applied
    }

    /// How many commits waiting (less one) make `refresh` read LMDB's applied version first.
    static let commitsWorthAnAppliedCheck: UInt64 = 3

    /// Raises the reader's applied version (the floor of its next snapshots) to LMDB's now,
    /// pruning what that makes unneeded, as a new snapshot does: a transaction begun under the
    /// overlay lock sees at most what every snapshot begun later does.
    private func adoptApplied() throws(KVError) {
        let dropped = try overlay.withLock { (state) throws(KVError) in
            let transaction = try renewedReader(&state)
            defer {
                transaction.reset()
                state.idleReaders.keep(transaction)
            }
            return try adoptApplied(in: transaction, &state)
        }
        recycle(dropped)
    }

    /// Frees a reader's dropped overlay table, after the overlay lock, keeping its arrays for
    /// the next refreshes (a refresh waits for the pool's lock meanwhile, not a snapshot's reads).
    func recycle(_ dropped: consuming OverlayTable?) {
        guard let dropped = consume dropped, let arrayPool else { return }
        arrayPool.withLock { $0.recycle(dropped) }
    }

    /// For a reader's new snapshot, under the overlay lock: LMDB's applied version in
    /// `transaction` becomes the floor (pruning what it makes unneeded), and the latest
    /// version is at least it. Returns what pruning dropped, to free after the lock.
    func adoptApplied(in transaction: LMDBTransaction, _ state: inout OverlayState) throws(KVError) -> OverlayTable? {
        let applied = try StoreCore.appliedVersion(in: transaction, meta: metaHandle)
        state.latestVersion = max(state.latestVersion, applied)
        guard applied > state.appliedVersion else { return nil }
        return state.didApplyFollowed(through: applied)
    }

    /// Opens, for a reader, the LMDB tables that overlay commits created and LMDB now has;
    /// under the overlay lock, before the snapshot's transaction begins (a table opened in a
    /// transaction is usable only in transactions begun after it committed). Returns LMDB's
    /// applied version as of the tables opened.
    func openPendingTables(_ state: inout OverlayState) throws(KVError) -> UInt64 {
        let transaction = try beginReadTransaction(&state)
        var opened: [String: MDB_dbi] = [:]
        let applied: UInt64
        do throws(KVError) {
            applied = try StoreCore.appliedVersion(in: transaction, meta: metaHandle)
            for name in state.pendingTables {
                if let handle = try transaction.openTable(name, create: false) { opened[name] = handle }
            }
        } catch {
            transaction.abort()
            throw error
        }
        // Committed, not aborted: the table handles it opened stay valid.
        try transaction.commitRead()
        state.tableHandles.merge(opened) { old, _ in old }
        state.pendingTables.subtract(opened.keys)
        return applied
    }
}
