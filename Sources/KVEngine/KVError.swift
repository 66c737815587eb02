import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// The one error type of the KVEngine module.
///
/// Every case keeps what a caller needs to act: the LMDB return code or `errno`, the
/// operation that failed, and the file or key involved.
///
/// ```swift
/// do {
///     try store.commit(batch)
/// } catch KVError.conditionFailed(let failures) {
///     for failure in failures { print(failure.key, failure.currentVersion) }
/// }
/// ```
public enum KVError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A key is longer than LMDB allows (`limit` bytes, 511 for LMDB's default build).
    case keyTooLong(length: Int, limit: Int)
    /// A key is empty; LMDB cannot store an empty key.
    case emptyKey
    /// A value or a whole batch is larger than the log accepts in one record.
    case tooLarge(bytes: Int, limit: Int)
    /// A table name is empty, too long, or reserved for Cairn's own use.
    case invalidTableName(String)
    /// One or more conditions of a batch did not hold; nothing of the batch was written.
    case conditionFailed([FailedCondition])
    /// Another process (or another `Store` in this process) has the store open.
    case locked(path: String, pid: Int32?)
    /// An LMDB call failed.
    case lmdb(code: Int32, operation: String)
    /// A system call failed.
    case io(errno: Int32, operation: String, path: String)
    /// A log segment is damaged before its tail: recovery refuses to guess.
    case corruptLog(file: String, offset: Int, reason: String)
    /// A stored record failed its checksum or does not decode.
    case corruptRecord(table: String, key: [UInt8], reason: String)
    /// A file is not what Cairn expects: not Cairn's (wrong magic, an unknown format
    /// version) or damaged; `reason` says what was found.
    case wrongFormat(file: String, reason: String)
    /// An earlier write or fdatasync failed; every commit fails until the store is reopened.
    indirect case poisoned(KVError)
    /// The store was closed.
    case closed
    /// The map could not grow while snapshots stayed open, and the overlay is full.
    case mapFull(mapSize: Int, openSnapshots: Int)
    /// The snapshot was closed before this read.
    case snapshotClosed
    /// The snapshot outlived `Store.Options.maxSnapshotAge` or `maxSnapshotLag`, and the
    /// engine ended it so that LMDB could reuse the pages it held. Take a new snapshot.
    case snapshotExpired(version: UInt64, reason: String)
    /// There is no store in the directory, and the caller asked not to create one.
    case noStore(path: String)
    /// A commit would create more tables than the store was opened for (`Options.maxTables`).
    case tooManyTables(limit: Int)
    /// The store was opened for reading (`Store.Options.readOnly`): commits, flushes and
    /// checkpoints are refused, and nothing is written.
    case readOnly(path: String)

    public var description: String {
        switch self {
        case let .keyTooLong(length, limit):
            return "key is \(length) bytes; the limit is \(limit) bytes (LMDB's maximum key size)"
        case .emptyKey:
            return "key is empty; LMDB cannot store an empty key"
        case let .tooLarge(bytes, limit):
            return "\(bytes) bytes is larger than the limit of \(limit) bytes for one commit"
        case let .invalidTableName(name):
            return "invalid table name \"\(name)\": 1 to 200 bytes, not starting with \"__cairn\""
        case let .conditionFailed(failures):
            let list = failures.map { $0.description }.joined(separator: "; ")
            return "commit conditions failed, nothing was written: \(list)"
        case let .locked(path, pid):
            let readers = "one process writes a store; others may read it beside the writer (Store.Options.readOnly)"
            if pid == getpid() { return "store \(path) is locked by pid \(getpid()), this process: it is open here already; share that Store" }
            if let pid { return "store \(path) is locked by pid \(pid): \(readers)" }
            return "store \(path) is locked by another process: \(readers)"
        case let .lmdb(code, operation):
            return "LMDB \(operation) failed: \(String(cString: mdb_strerror(code))) (\(code))"
        case let .io(code, operation, path):
            if code == ENOSPC || code == EDQUOT {
                return "\(operation)(\(path)) failed: the disk is full (\(String(cString: strerror(code))), errno \(code)); free space and retry"
            }
            return "\(operation)(\(path)) failed: \(String(cString: strerror(code))) (errno \(code))"
        case let .corruptLog(file, offset, reason):
            return "corrupt log \(file) at offset \(offset): \(reason)"
        case let .corruptRecord(table, key, reason):
            return "corrupt record in table \(table), key \(KVError.printable(key)): \(reason)"
        case let .wrongFormat(file, reason):
            return "\(file): \(reason)"
        case let .poisoned(underlying):
            return "store is poisoned by an earlier I/O failure (\(underlying)); reopen it"
        case .closed:
            return "store is closed"
        case let .mapFull(mapSize, openSnapshots):
            return "LMDB map of \(mapSize) bytes is full and cannot grow while \(openSnapshots) snapshots are open; close them"
        case .snapshotClosed:
            return "snapshot is closed"
        case let .snapshotExpired(version, reason):
            return "snapshot at version \(version) expired (\(reason)); take a new snapshot"
        case let .noStore(path):
            return "no Cairn store at \(path)"
        case let .tooManyTables(limit):
            return "a commit would create more than \(limit) tables; open the store with a larger Options.maxTables"
        case let .readOnly(path):
            return "store \(path) is open for reading only; only its writer process can change it"
        }
    }

    /// Whether this is a full disk (or a full quota): ENOSPC or EDQUOT from a system call or
    /// from LMDB, or a store poisoned by one. Freeing space and reopening clears it.
    public var isDiskFull: Bool {
        switch self {
        case let .io(code, _, _): return code == ENOSPC || code == EDQUOT
        case let .lmdb(code, _): return code == ENOSPC || code == EDQUOT
        case let .poisoned(underlying): return underlying.isDiskFull
        default: return false
        }
    }

    /// `error` as the reason a store is poisoned, never wrapped twice.
    static func poisoning(_ error: KVError) -> KVError {
        if case .poisoned = error { return error }
        return .poisoned(error)
    }

    package static func printable(_ key: [UInt8]) -> String {
        if let text = String(validating: key, as: UTF8.self),
           text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) {
            return "\"\(text)\""
        }
        return "0x" + key.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

/// One condition of a batch that did not hold at commit time.
public struct FailedCondition: Sendable, Hashable, CustomStringConvertible {
    /// The table of the record.
    public var table: String
    /// The record's key.
    public var key: [UInt8]
    /// What the batch expected.
    public var expected: Condition
    /// The record's version when the commit was tried; 0 when the record is absent.
    public var currentVersion: UInt64

    public init(table: String, key: [UInt8], expected: Condition, currentVersion: UInt64) {
        self.table = table
        self.key = key
        self.expected = expected
        self.currentVersion = currentVersion
    }

    public var description: String {
        "\(table)/\(KVError.printable(key)) expected \(expected), current version \(currentVersion)"
    }
}

extension String {
    package func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
