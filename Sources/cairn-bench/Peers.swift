import CLMDB
import CSQLite
import Foundation

struct BenchError: Error, CustomStringConvertible {
    let description: String
}

/// Raw LMDB through its C API, with its default fully synced commits: the peer a user
/// would otherwise pick.
///
/// `@unchecked Sendable`: LMDB environments are thread-safe; each write transaction is
/// begun and committed on one thread.
final class RawLMDB: @unchecked Sendable {
    let environment: OpaquePointer
    var dbi: MDB_dbi = 0

    init(directory: String) throws {
        var environment: OpaquePointer?
        mdb_env_create(&environment)
        self.environment = environment!
        mdb_env_set_mapsize(environment, benchMapSize)
        mdb_env_set_maxreaders(environment, 256)
        let code = mdb_env_open(environment, directory, UInt32(MDB_NOTLS), 0o600)
        guard code == 0 else { throw BenchError(description: "mdb_env_open: \(code)") }
        var transaction: OpaquePointer?
        mdb_txn_begin(environment, nil, 0, &transaction)
        mdb_dbi_open(transaction, nil, 0, &dbi)
        mdb_txn_commit(transaction)
    }

    deinit { mdb_env_close(environment) }

    /// Puts every (key, value) in one write transaction and commits it (synced).
    func putAll(_ pairs: some Sequence<([UInt8], [UInt8])>) throws {
        var transaction: OpaquePointer?
        try check(mdb_txn_begin(environment, nil, 0, &transaction), "mdb_txn_begin")
        for (key, value) in pairs {
            var code: Int32 = 0
            key.withUnsafeBytes { keyBytes in
                value.withUnsafeBytes { valueBytes in
                    var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                    var data = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                    code = mdb_put(transaction, dbi, &keyValue, &data, 0)
                }
            }
            if code != 0 { mdb_txn_abort(transaction); try check(code, "mdb_put") }
        }
        try check(mdb_txn_commit(transaction), "mdb_txn_commit")
    }

    /// Calls `body` inside one read transaction.
    func read<Result>(_ body: (OpaquePointer) throws -> Result) throws -> Result {
        var transaction: OpaquePointer?
        try check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction), "mdb_txn_begin(read)")
        defer { mdb_txn_abort(transaction) }
        return try body(transaction!)
    }

    private func check(_ code: Int32, _ operation: String) throws {
        if code != 0 { throw BenchError(description: "\(operation): \(String(cString: mdb_strerror(code)))") }
    }
}

/// SQLite in WAL mode, one connection per thread, with `synchronous` FULL or NORMAL.
///
/// `@unchecked Sendable`: a connection is used by one thread at a time (the benchmark
/// gives each writer thread its own).
final class SQLitePeer: @unchecked Sendable {
    let database: OpaquePointer
    let path: String

    init(path: String, synchronous: String) throws {
        self.path = path
        var database: OpaquePointer?
        guard sqlite3_open_v2(path, &database, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            throw BenchError(description: "sqlite3_open_v2 \(path)")
        }
        self.database = database!
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=\(synchronous)")
        try execute("PRAGMA busy_timeout=60000")
        try execute("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
    }

    deinit { sqlite3_close_v2(database) }

    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(database, sql, nil, nil, &message) != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "?"
            sqlite3_free(message)
            throw BenchError(description: "\(sql): \(text)")
        }
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK else {
            throw BenchError(description: "prepare \(sql): \(String(cString: sqlite3_errmsg(database)))")
        }
        return statement!
    }

    /// Binds blobs to a prepared statement and steps it once.
    func step(_ statement: OpaquePointer, _ blobs: [UInt8]...) throws -> Int32 {
        sqlite3_reset(statement)
        for (index, blob) in blobs.enumerated() {
            blob.withUnsafeBytes { raw in
                _ = sqlite3_bind_blob(statement, Int32(index + 1), raw.baseAddress, Int32(raw.count), sqliteTransient)
            }
        }
        let code = sqlite3_step(statement)
        if code != SQLITE_DONE && code != SQLITE_ROW {
            throw BenchError(description: "step: \(String(cString: sqlite3_errmsg(database)))")
        }
        return code
    }
}

/// SQLITE_TRANSIENT: SQLite copies the bound bytes.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
