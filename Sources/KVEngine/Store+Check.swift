import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// What `Store.check(directory:)` found.
public struct CheckReport: Sendable, Hashable {
    /// The commit version LMDB holds.
    public var appliedVersion: UInt64 = 0
    /// The newest commit version in the log, if it has any record.
    public var lastLogVersion: UInt64?
    /// Records in the log, and how many of them LMDB has not applied yet.
    public var logCommits = 0
    public var pendingCommits = 0
    /// Stored records whose checksum was verified, per table.
    public var recordsPerTable: [String: Int] = [:]
    /// Every problem found; empty when the store is sound.
    public var problems: [String] = []
    /// A torn tail that the next open will cut (not a problem: unacknowledged commits).
    public var tornTail: LogCut?

    /// When the log is damaged: the cut that opening with `.recoverToLastGoodRecord` would
    /// make, with what it drops (`LogCut.loss`, `LogCut.lostVersions`).
    public var recoveryCut: LogCut?
    /// Whether LMDB's data file alone holds every commit: true when the log holds none it
    /// lacks (so a damaged or lost log loses nothing), false when the log shows commits it
    /// lacks, nil when the damage hides whether it does (a lost or emptied newest segment,
    /// a deleted `wal/`, damage with nothing intact past it).
    public var lmdbAloneComplete: Bool?

    /// The pid of the process that had the store open for writing while it was checked
    /// (`Store.check` then checks beside it, read-only), nil when none had.
    public var besideWriter: Int32?
    /// What a check beside a writer could not verify, in words; empty for a closed store.
    public var notVerified: [String] = []

    /// Whether nothing is wrong.
    public var isSound: Bool { problems.isEmpty }
}

extension Store {
    /// Verifies a closed store without changing it: LMDB's data file is structurally sound
    /// (see `Store.Options.verifyDataFile`; when it is not, that is the one problem reported
    /// and nothing else is read), every log record decodes, the log's latest operation on
    /// each key that LMDB has applied matches LMDB's record, and every stored record passes
    /// its checksum.
    ///
    /// While another process has the store open for writing, checks beside it instead,
    /// changing nothing and never blocking it (`checkBesideWriter(directory:)`); throws
    /// `KVError.locked` only when this process has the store open.
    ///
    /// ```swift
    /// let report = try Store.check(directory: path)
    /// if !report.isSound { report.problems.forEach { print($0) } }
    /// ```
    public static func check(directory: String) throws(KVError) -> CheckReport {
        try check(directory: directory, fileSystem: PosixFileSystem())
    }

    package static func check(directory: String, fileSystem: any FileSystem) throws(KVError) -> CheckReport {
        // Only a missing data file is "no store": permission denied is the system's error.
        var info = stat()
        if stat(directory + "/data.mdb", &info) == -1 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw KVError.noStore(path: directory) }
            throw KVError.io(errno: code, operation: "stat", path: directory + "/data.mdb")
        }
        // A FIFO or device there cannot be checked: that is the error, not a "damaged" file.
        try StoreFiles.requireRegularIfPresent(directory + "/data.mdb")
        let lock: ProcessLock
        do throws(KVError) {
            lock = try ProcessLock(directory: directory)
        } catch .locked(_, let pid?) where pid != getpid() {
            return try checkBesideWriter(directory: directory, writer: pid, fileSystem: fileSystem)
        }
        defer { _ = lock }
        var report = CheckReport()
        // LMDB's structures first, without LMDB: walking a damaged tree could crash it. A
        // damaged structure is the problem to report; nothing below could read past it.
        // (The verifier also subsumes LMDBEnvironment.checkFileLength here.)
        do {
            _ = try LMDBVerifier.verify(path: directory + "/data.mdb")
        } catch .wrongFormat(let file, let reason) {
            report.problems.append("\(file): LMDB's structure is damaged: \(reason)")
            return report
        }
        // maxTables only limits the handles this environment opens: allow any count.
        let env = try LMDBEnvironment(directory: directory, mapSize: Store.Options().mapSize, maxReaders: 16,
                                      maxTables: 32_767)
        defer { env.close() }
        let transaction = try env.beginTransaction(readOnly: true)
        defer { transaction.abort() }
        guard let meta = try transaction.openTable(StoreCore.metaTable, create: false) else {
            report.problems.append("LMDB has no \(StoreCore.metaTable) table")
            return report
        }
        let appliedBytes = try transaction.value(for: StoreCore.appliedKey, in: meta)
        if let appliedBytes, appliedBytes.count != 8 {
            report.problems.append("the applied version in \(StoreCore.metaTable) is \(appliedBytes.count) bytes, not 8")
        }
        let applied = appliedBytes.map { bytes in
            bytes.count == 8 ? bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) } : 0
        } ?? 0
        report.appliedVersion = applied
        var tables: [String: MDB_dbi] = [:]
        for name in try transaction.tableNames() where !name.hasPrefix(StoreCore.reservedPrefix) {
            tables[name] = try transaction.openTable(name, create: false)
        }

        // The log: every record decodes; remember the last applied operation per key.
        var expected: [TableKey: LoggedOperation] = [:]
        var logCommits = 0, pending = 0
        let logStarted = try transaction.value(for: StoreCore.logStartedKey, in: meta) != nil
        let scanner = LogScanner(fileSystem: fileSystem, directory: directory + "/wal",
                                 appliedVersion: applied, mode: .strict, repair: false, logStarted: logStarted)
        do {
            var previous: UInt64? = nil
            let scan = try scanner.scan { (version, payload) throws(KVError) in
                logCommits += 1
                // Across a gap (versions only LMDB holds, their segment gone) later commits
                // may have changed any key: only what follows the gap is comparable.
                if let previous, version != previous + 1 { expected.removeAll() }
                previous = version
                guard let commit = LogRecordCodec.decodePayload(payload, version: version) else {
                    throw KVError.corruptLog(file: "wal", offset: 0, reason: "record \(version) does not decode")
                }
                if version > applied { pending += 1; return }
                for operation in commit.operations {
                    expected[TableKey(table: operation.table, key: operation.key)] = operation
                }
            }
            // A log that ends before LMDB's applied version (its tail lost, LMDB had applied
            // it) says nothing about what those later commits changed.
            if let last = previous, last < applied { expected.removeAll() }
            report.lastLogVersion = scan.lastLogVersion
            report.tornTail = scan.report.tornTail
            report.problems += scan.report.harmlessDamage.map { "log damage that lost no commit: \($0)" }
            report.lmdbAloneComplete = pending == 0
        } catch {
            report.problems.append("\(error)")
            // What recovery would drop: the same scan, as `.recoverToLastGoodRecord` makes it.
            let recovering = LogScanner(fileSystem: fileSystem, directory: directory + "/wal", appliedVersion: applied,
                                        mode: .recoverToLastGoodRecord, repair: false, logStarted: logStarted)
            var keptPending = false
            if let scan = try? recovering.scan({ (version, _) throws(KVError) in if version > applied { keptPending = true } }),
               let cut = scan.report.corruptionCut {
                report.recoveryCut = cut
                report.lmdbAloneComplete = keptPending ? false : cut.lmdbHoldsEveryDroppedCommit
            }
        }
        report.logCommits = logCommits
        report.pendingCommits = pending

        for (tableKey, operation) in expected.sorted(by: { $0.key.key.lexicographicallyPrecedes($1.key.key) }) {
            let where_ = "\(tableKey.table)/\(KVError.printable(tableKey.key))"
            let stored = try tables[tableKey.table].flatMap { (dbi) throws(KVError) in try transaction.value(for: tableKey.key, in: dbi) }
            let decoded = stored.flatMap { bytes in
                try? bytes.withBytes { (raw) throws(KVError) in
                    try tableKey.key.withBytes { (key) throws(KVError) in
                        let record = try RecordCodec.decode(key: key, stored: raw, table: tableKey.table)
                        return (version: record.version, value: Array(record.value), isTombstone: record.isTombstone)
                    }
                }
            }
            if stored != nil && decoded == nil { continue }  // reported by the checksum pass below
            if let value = operation.value {
                guard let decoded, !decoded.isTombstone else {
                    report.problems.append("\(where_): in the log but missing from LMDB")
                    continue
                }
                if decoded.version != operation.recordVersion || decoded.value != value {
                    report.problems.append("\(where_): LMDB has version \(decoded.version), the log says \(operation.recordVersion) with another value")
                }
            } else if operation.isUnversioned {
                // Removed outright: LMDB holds nothing for the key.
                if let decoded {
                    report.problems.append("\(where_): removed in the log, but LMDB holds \(decoded.isTombstone ? "a tombstone" : "a record")")
                }
            } else if let decoded, !decoded.isTombstone || decoded.version != operation.recordVersion {
                report.problems.append("\(where_): deleted at version \(operation.recordVersion) in the log, but LMDB holds \(decoded.isTombstone ? "a tombstone" : "a record") at version \(decoded.version)")
            }
        }

        try checkRecords(tables, in: transaction, meta: meta, into: &report)
        return report
    }

    /// Every stored record of `tables` passes its checksum, and each table's tombstone count
    /// matches the meta table's.
    static func checkRecords(_ tables: [String: MDB_dbi], in transaction: LMDBTransaction, meta: MDB_dbi,
                             into report: inout CheckReport) throws(KVError) {
        for (name, dbi) in tables.sorted(by: { $0.key < $1.key }) {
            let cursor = try transaction.openCursor(dbi)
            defer { cursor.close() }
            var count = 0, tombstones: UInt64 = 0
            var position = try cursor.move(.first)
            while let current = position {
                do {
                    let record = try RecordCodec.decode(key: current.key, stored: current.data, table: name)
                    if record.isTombstone { tombstones += 1 } else { count += 1 }
                } catch {
                    if report.problems.count < 1000 { report.problems.append("\(error)") }
                }
                position = try cursor.move(.next)
            }
            report.recordsPerTable[name] = count
            let counted = try StoreCore.tombstoneCount(of: name, in: transaction, meta: meta)
            if counted != tombstones {
                report.problems.append("table \(name): \(tombstones) tombstones, but the meta table counts \(counted)")
            }
        }
    }
}
