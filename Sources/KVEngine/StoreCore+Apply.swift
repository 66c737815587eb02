import CLMDB

// The background applier: moves acknowledged commits from the overlay into LMDB in large,
// fully synced transactions that also record the applied version, then prunes the overlay
// and retires log segments LMDB now holds.

extension StoreCore {
    func applierLoop() {
        var lastReaderCheck = monotonicSeconds()
        while true {
            let work = overlay.wait(
                until: { state in
                    state.stopping
                        || (state.unappliedCount > 0 && (state.flushRequested || state.bytes >= self.options.applyThreshold))
                },
                timeout: options.applyInterval
            ) { state, _ -> (commits: ArraySlice<LoggedCommit>, last: UInt64)? in
                if state.stopping || state.applyError != nil || state.unappliedCount == 0 { return nil }
                var bytes = 0
                var end = state.unappliedHead
                while end < state.unapplied.count && (end == state.unappliedHead || bytes < 64 << 20) {
                    bytes += state.unapplied[end].payloadSize
                    end += 1
                }
                return (state.unapplied[state.unappliedHead..<end], state.unapplied[end - 1].version)
            }
            if overlay.withLock({ $0.stopping }) { return }
            let now = monotonicSeconds()
            if now - lastReaderCheck >= StoreCore.readerCheckInterval {
                // A reader process killed inside a read transaction leaves its slot pinning old
                // pages, which would make every later write grow the file: reclaim such slots.
                lastReaderCheck = now
                if let dead = try? env.clearStaleReaders(), dead > 0 {
                    overlay.withLock { $0.staleReadersCleared += dead }
                }
            }
            guard let work else { continue }
            expireOldSnapshots()
            do {
                // The WAL rule: LMDB never holds a commit the log has not made durable.
                try log.withLock { (log) throws(KVError) in try log.sync(through: work.last) }
                let known = overlay.withLock { $0.tableHandles }
                let created = try StoreCore.applyGrowingMap(
                    env: env, meta: metaHandle, commits: work.commits, through: work.last, known: known,
                    tryGrow: { [self] () throws(KVError) -> Bool in
                        // Checked and done under the overlay lock: a snapshot registers
                        // under it before it begins its read transaction, so none can
                        // start between the check and the remap.
                        try overlay.withLock { (state) throws(KVError) -> Bool in
                            state.mapGrowthPending = true
                            guard state.liveSnapshots.isEmpty else { return false }
                            try env.setMapSize(env.info.mapSize * 2)
                            return true
                        }
                    },
                    timeout: options.mapFullTimeout, waitForGrowth: { [self] timeout in
                        overlay.wait(until: { $0.liveSnapshots.isEmpty || $0.stopping }, timeout: timeout) { state, _ in
                            !state.stopping
                        }
                    })
                let dropped = overlay.withLock { state in
                    state.mapGrowthPending = false
                    defer { if state.unappliedCount == 0 { state.flushRequested = false } }
                    return state.didApply(through: work.last, count: work.commits.count, newTables: created)
                }
                // Wake flushes and writers first; free what the overlay dropped after.
                withExtendedLifetime(dropped) { overlay.broadcast() }
                _ = try? log.withLock { (log) throws(KVError) in try log.retire(appliedThrough: work.last) }
            } catch {
                overlay.withLock { $0.applyError = error }
                overlay.broadcast()
                return
            }
        }
    }

    /// How often the applier reclaims the reader slots of dead processes (s).
    static let readerCheckInterval = 1.0

    /// Ends the snapshots that outlived `Options.maxSnapshotAge` or `maxSnapshotLag`, just
    /// before the applier writes to LMDB: the pages they pin are what would make the data
    /// file grow. The engine's own short-lived commit views never expire.
    func expireOldSnapshots() {
        guard options.maxSnapshotAge != nil || options.maxSnapshotLag != nil else { return }
        let now = monotonicSeconds()
        let expired = overlay.withLock { state -> [(id: Int, snapshot: SnapshotTransaction, reason: String)] in
            state.liveSnapshots.compactMap { id, live in
                let snapshot = live.transaction
                guard !live.recycles else { return nil }
                let lag = state.latestVersion - live.version
                if let limit = options.maxSnapshotLag, lag > limit {
                    return (id, snapshot, "\(lag) commits behind the latest, more than maxSnapshotLag \(limit)")
                }
                let age = now - live.openedAt
                if let limit = options.maxSnapshotAge, age > limit {
                    return (id, snapshot, "open for \(Int(age * 1000)) ms, longer than maxSnapshotAge \(limit) s")
                }
                return nil
            }
        }
        // End each transaction before the overlay forgets the snapshot: a read in progress
        // finishes first, and no later read can use overlay entries the sweep drops.
        for candidate in expired where candidate.snapshot.expire(snapshotID: candidate.id, reason: candidate.reason) {
            overlay.withLock { $0.expiredSnapshots += 1 }
            snapshotDidClose(id: candidate.id)
        }
    }

    /// Applies `commits` in one LMDB transaction; on `MDB_MAP_FULL` asks `tryGrow` to
    /// double the map (it can only while no transaction is open) and tries again.
    static func applyGrowingMap(
        env: LMDBEnvironment, meta: MDB_dbi, commits: ArraySlice<LoggedCommit>, through version: UInt64,
        known: [String: MDB_dbi], tryGrow: () throws(KVError) -> Bool, timeout: Double,
        waitForGrowth: (Double) -> Bool = { _ in true }
    ) throws(KVError) -> [String: MDB_dbi] {
        while true {
            do {
                return try apply(env: env, meta: meta, commits: commits, through: version, known: known)
            } catch KVError.lmdb(let code, _) where code == lmdbMapFull {
                // LMDB resizes only with no transaction open in this process: wait for
                // open snapshots to end. Writers keep committing into the overlay meanwhile.
                let deadline = monotonicSeconds() + timeout
                while try !tryGrow() && monotonicSeconds() < deadline {
                    if !waitForGrowth(0.05) { throw KVError.closed }
                }
            }
        }
    }

    /// The meta key holding a table's tombstone count.
    static func tombstoneKey(_ table: String) -> [UInt8] { Array("tombstones/\(table)".utf8) }

    /// How many tombstones `table` holds, from the meta table.
    static func tombstoneCount(of table: String, in transaction: LMDBTransaction, meta: MDB_dbi) throws(KVError) -> UInt64 {
        try transaction.value(for: tombstoneKey(table), in: meta).map { bytes in
            bytes.count == 8 ? bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) } : 0
        } ?? 0
    }

    private static func apply(
        env: LMDBEnvironment, meta: MDB_dbi, commits: ArraySlice<LoggedCommit>, through version: UInt64,
        known: [String: MDB_dbi]
    ) throws(KVError) -> [String: MDB_dbi] {
        var created: [String: MDB_dbi] = [:]
        var tombstoneChanges: [String: Int] = [:]
        // A failed commit is a typed error, the transaction freed by LMDB (`env.write`).
        try env.write { (transaction) throws(KVError) in
            func handle(of table: String, create: Bool = true) throws(KVError) -> MDB_dbi? {
                if let handle = known[table] ?? created[table] { return handle }
                guard let handle = try transaction.openTable(table, create: create) else {
                    if !create { return nil }
                    throw KVError.lmdb(code: MDB_NOTFOUND, operation: "mdb_dbi_open(\(table))")
                }
                created[table] = handle
                return handle
            }
            // Whether a table holds tombstones an unversioned write may replace (left by
            // versioned deletes): only then does it read the entry it overwrites, to keep the
            // tombstone count exact. Looked up once a table.
            var holdsTombstones: [String: Bool] = [:]
            func dropsTombstone(_ operation: LoggedOperation, in handle: MDB_dbi) throws(KVError) -> Bool {
                let holds: Bool
                if let known = holdsTombstones[operation.table] {
                    holds = known
                } else {
                    holds = try tombstoneCount(of: operation.table, in: transaction, meta: meta) > 0
                    holdsTombstones[operation.table] = holds
                }
                guard holds, let stored = try transaction.value(for: operation.key, in: handle),
                      stored.count >= RecordCodec.headerSize else { return false }
                let field = stored.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 4, as: UInt64.self)) }
                return field & RecordCodec.tombstoneFlag != 0
            }
            /// Writes one operation; false when it wrote nothing (an unversioned delete).
            func put(_ operation: LoggedOperation, in handle: MDB_dbi, append: Bool = false) throws(KVError) -> Bool {
                let size = RecordCodec.storedSize(valueCount: operation.value?.count ?? 0)
                if operation.isUnversioned {
                    if try dropsTombstone(operation, in: handle) { tombstoneChanges[operation.table, default: 0] -= 1 }
                    guard let value = operation.value else {
                        try transaction.delete(operation.key, in: handle)
                        return false
                    }
                    try transaction.put(operation.key, size: size, in: handle, append: append) {
                        RecordCodec.encode(key: operation.key, version: 0, value: value, into: $0)
                    }
                } else if let value = operation.value {
                    if operation.replacesTombstone { tombstoneChanges[operation.table, default: 0] -= 1 }
                    try transaction.put(operation.key, size: size, in: handle, append: append) {
                        RecordCodec.encode(key: operation.key, version: operation.recordVersion, value: value, into: $0)
                    }
                } else {
                    // A delete leaves a tombstone holding the deleted version (see RecordCodec).
                    tombstoneChanges[operation.table, default: 0] += 1
                    try transaction.put(operation.key, size: size, in: handle, append: append) {
                        RecordCodec.encodeTombstone(key: operation.key, version: operation.recordVersion, into: $0)
                    }
                }
                return true
            }
            // An unversioned delete in a table LMDB lacks removes nothing: the table is not made.
            func isDeleteInMissingTable(_ operation: LoggedOperation) -> Bool {
                operation.isUnversioned && operation.value == nil && known[operation.table] == nil
                    && created[operation.table] == nil
            }
            let operationCount = commits.reduce(0) { $0 + $1.operations.count }
            if operationCount < 4096 {
                for commit in commits {
                    for operation in commit.operations {
                        let create = !isDeleteInMissingTable(operation)
                        guard let handle = try handle(of: operation.table, create: create) else { continue }
                        _ = try put(operation, in: handle)
                    }
                }
            } else {
                // LMDB inserts in key order touch each page once instead of at random;
                // equal keys keep their commit order, so the last write still wins.
                // A key above the table's greatest goes in with MDB_APPEND: a load into an
                // empty table, or of keys that grow (time, sequence numbers), fills whole
                // pages without a search. Keys among existing ones take the normal path.
                let order = KeyOrder.sorted(commits)
                // Operations come grouped by table: look its handle and greatest key up once.
                var table: (name: String, handle: MDB_dbi)? = nil
                var greatest: [UInt8]? = nil
                for position in order {
                    let operation = commits[position.commit].operations[position.operation]
                    if operation.table != table?.name {
                        let create = !isDeleteInMissingTable(operation)
                        guard let opened = try handle(of: operation.table, create: create) else { continue }
                        table = (operation.table, opened)
                        greatest = try transaction.lastKey(in: opened)
                    }
                    let appends = greatest.map { last in
                        operation.key.withUnsafeBytes { Snapshot.compare($0, last) > 0 }
                    } ?? true
                    // An unversioned delete writes no entry, so it sets no new greatest key.
                    if try put(operation, in: table!.handle, append: appends), appends {
                        greatest = operation.key
                    }
                }
            }
            for (table, change) in tombstoneChanges where change != 0 {
                let count = Int(try tombstoneCount(of: table, in: transaction, meta: meta)) + change
                try transaction.put(tombstoneKey(table), size: 8, in: meta) {
                    $0.storeBytes(of: UInt64(max(0, count)).littleEndian, as: UInt64.self)
                }
            }
            try transaction.put(appliedKey, size: 8, in: meta) { $0.storeBytes(of: version.littleEndian, as: UInt64.self) }
        }
        return created
    }
}
