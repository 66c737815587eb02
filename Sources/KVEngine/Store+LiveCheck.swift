import CLMDB
#if canImport(Glibc)
import Glibc
#endif

extension Store {
    /// What a check beside a running writer cannot verify (`CheckReport.notVerified`).
    static let unverifiedBesideWriter = [
        "LMDB's page structure: the writer changes data.mdb while it is read, so the page verifier runs only on a closed store",
        "log records LMDB has already applied against LMDB's records: the writer retires them as it goes",
        "a torn tail past the last acknowledged commit: only the writer's next open can tell it from a commit in progress",
    ]

    /// Verifies what can be verified of a store another process has open for writing, as a
    /// read-only store beside it (`Store.Options.readOnly`): every log record the writer has
    /// acknowledged that LMDB has not applied decodes, every stored record in one consistent
    /// LMDB read transaction passes its checksum, and each table's tombstone count matches.
    /// `CheckReport.notVerified` lists the rest. Changes nothing, blocks nothing.
    static func checkBesideWriter(directory: String, writer: Int32, fileSystem: any FileSystem) throws(KVError) -> CheckReport {
        var report = CheckReport()
        report.besideWriter = writer
        report.notVerified = unverifiedBesideWriter
        var options = Store.Options()
        options.readOnly = true
        options.verifyDataFile = false
        let store: Store
        do throws(KVError) {
            store = try Store(directory: directory, options: options, fileSystem: fileSystem)
        } catch .corruptLog(let file, let offset, let reason) {
            report.problems.append("\(KVError.corruptLog(file: file, offset: offset, reason: reason))")
            return report
        }
        defer { store.close() }
        let core = store.core
        let transaction = try core.env.beginTransaction(readOnly: true)
        defer { transaction.abort() }
        report.appliedVersion = try StoreCore.appliedVersion(in: transaction, meta: core.metaHandle)
        var tables: [String: MDB_dbi] = [:]
        for name in try transaction.tableNames() where !name.hasPrefix(StoreCore.reservedPrefix) {
            tables[name] = try transaction.openTable(name, create: false)
        }
        let latest: UInt64
        do throws(KVError) {
            latest = try store.latestCommitVersion()
        } catch .corruptLog(let file, let offset, let reason) {
            report.problems.append("\(KVError.corruptLog(file: file, offset: offset, reason: reason))")
            latest = report.appliedVersion
        }
        report.lastLogVersion = latest > report.appliedVersion ? latest : nil
        report.pendingCommits = Int(latest > report.appliedVersion ? latest - report.appliedVersion : 0)
        report.logCommits = report.pendingCommits
        report.lmdbAloneComplete = report.pendingCommits == 0
        try checkRecords(tables, in: transaction, meta: core.metaHandle, into: &report)
        return report
    }
}
