import CLMDB
import Locking
#if canImport(Glibc)
import Glibc
#endif

// Every call into liblmdb goes through this file, so the rest of the engine speaks in
// Swift types and typed errors, and unsafe pointers stay in small closure scopes.

/// Throws `KVError.lmdb` for a non-zero LMDB return code.
@inline(__always)
func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(KVError) {
    if code != MDB_SUCCESS { throw KVError.lmdb(code: code, operation: operation()) }
}

/// An LMDB environment: one data file and its lock file in the store's directory.
///
/// `@unchecked Sendable`: LMDB environments are thread-safe; with `MDB_NOTLS` read
/// transactions are not tied to threads. Who may use which transaction is said at each call.
package final class LMDBEnvironment: @unchecked Sendable {
    let handle: OpaquePointer
    package let path: String

    /// Faults to inject into LMDB commits (tests); nil in normal use.
    let faults: LMDBFaults?

    /// How an environment is opened.
    package enum Access {
        /// Read-write, with LMDB's lock file: the writer process.
        case write
        /// `MDB_RDONLY | MDB_NOLOCK`, writing nothing at all (no lock file, no meta page): for
        /// reading a store on a full disk. The caller's `ProcessLock` is what keeps other
        /// processes out; no write transaction can begin.
        case readUnlocked
        /// `MDB_RDONLY` with LMDB's lock file: a reader process beside a writer. Its read
        /// transactions take slots in lock.mdb's reader table, so the writer never reuses a
        /// page they can see; a dead reader's slots are reclaimed by `mdb_reader_check`.
        case readShared
    }

    /// Opens (creating if needed, for `.write`) the environment in `directory`, files mode 0600.
    package init(directory: String, mapSize: Int, maxReaders: Int, maxTables: Int, access: Access = .write,
         faults: LMDBFaults? = nil) throws(KVError) {
        let readOnly = access != .write
        // LMDB opens its files itself: check what they are first (a FIFO would hang a read or
        // the lock file's allocation, a device would be mapped).
        try StoreFiles.requireRegularIfPresent(directory + "/data.mdb")
        try StoreFiles.requireRegularIfPresent(directory + "/lock.mdb")
        if access != .readUnlocked {
            // Before LMDB maps the lock file: LMDB extends it with ftruncate, a sparse file, and
            // writes to it through the map. When the disk cannot back a page of it, that write
            // kills the process with SIGBUS; allocated here, it fails with a typed ENOSPC.
            try LMDBEnvironment.allocateLockFile(directory + "/lock.mdb", maxReaders: maxReaders)
        }
        var environment: OpaquePointer?
        try check(mdb_env_create(&environment), "mdb_env_create")
        handle = environment!
        path = directory
        self.faults = faults
        do throws(KVError) {
            try check(mdb_env_set_mapsize(handle, mapSize), "mdb_env_set_mapsize")
            try check(mdb_env_set_maxreaders(handle, UInt32(maxReaders)), "mdb_env_set_maxreaders")
            try check(mdb_env_set_maxdbs(handle, MDB_dbi(maxTables)), "mdb_env_set_maxdbs")
            // MDB_NOTLS: snapshots are objects that any thread may read from, and one
            // thread may hold many of them.
            // Keep LMDB's files off descriptors 0-2 while it opens them.
            let handle = self.handle
            try StoreFiles.withStandardDescriptorsHeld { () throws(KVError) in
                let flags = UInt32(MDB_NOTLS) | (readOnly ? UInt32(MDB_RDONLY) : 0)
                    | (access == .readUnlocked ? UInt32(MDB_NOLOCK) : 0)
                let code = mdb_env_open(handle, directory, flags, 0o600)
                if code != MDB_SUCCESS {
                    // LMDB turns a short write of the new file's meta pages into ENOSPC, others EIO.
                    let error = LMDBEnvironment.writeError(code, operation: "mdb_env_open", directory: directory)
                    throw error.isDiskFull ? error : KVError.lmdb(code: code, operation: "mdb_env_open(\(directory))")
                }
            }
        } catch {
            mdb_env_close(handle)
            throw error
        }
    }

    /// The size LMDB gives lock.mdb for `maxReaders` slots (mdb.c, `mdb_env_setup_locks`:
    /// `(maxreaders - 1) * sizeof(MDB_reader) + sizeof(MDB_txninfo)`). A reader slot and each
    /// of the two header blocks are padded to a 64-byte cache line; the header blocks hold a
    /// `pthread_mutex_t` each (the first also the magic, format, txnid and reader count).
    static func lockFileSize(maxReaders: Int) -> Int {
        func cacheLines(_ bytes: Int) -> Int { (bytes + 63) / 64 * 64 }
        let mutex = MemoryLayout<pthread_mutex_t>.size
        let body = cacheLines((8 + mutex + 7) / 8 * 8 + 8 + 4)
        let writerMutex = cacheLines(mutex)
        return (maxReaders - 1) * 64 + body + writerMutex + 64
    }

    /// Makes sure every byte of lock.mdb that LMDB will map has disk space behind it.
    static func allocateLockFile(_ path: String, maxReaders: Int) throws(KVError) {
        let descriptor = try systemCall("open", path: path) { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        defer { Glibc.close(descriptor) }
        var info = stat()
        try systemCall("fstat", path: path) { fstat(descriptor, &info) }
        // LMDB sizes an existing lock file's table from its size; never shrink it.
        let length = max(Int(info.st_size), lockFileSize(maxReaders: maxReaders))
        if Int(info.st_blocks) * 512 >= length { return }
        var code = posix_fallocate(descriptor, 0, off_t(length))
        while code == EINTR { code = posix_fallocate(descriptor, 0, off_t(length)) }
        if code != 0 { throw KVError.io(errno: code, operation: "posix_fallocate", path: path) }
    }

    /// A failed LMDB write as a typed error. LMDB reports a short write as EIO ("short
    /// write, filesystem full?" in mdb.c); when the file system holding the store has no
    /// room left, that is a full disk and is reported as ENOSPC.
    static func writeError(_ code: Int32, operation: String, directory: String) -> KVError {
        if code == ENOSPC || code == EDQUOT {
            return KVError.io(errno: code, operation: operation, path: directory + "/data.mdb")
        }
        if code == EIO, let free = freeBytes(directory), free < 1 << 20 {
            return KVError.io(errno: ENOSPC, operation: operation, path: directory + "/data.mdb")
        }
        return KVError.lmdb(code: code, operation: operation)
    }

    /// The bytes this process could still write on the file system holding `directory`.
    static func freeBytes(_ directory: String) -> Int? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let blocks = geteuid() == 0 ? info.f_bfree : info.f_bavail
        return Int(blocks) * Int(info.f_frsize)
    }

    package func close() { mdb_env_close(handle) }

    /// Clears reader slots left by dead processes; returns how many.
    func clearStaleReaders() throws(KVError) -> Int {
        var dead: Int32 = 0
        try check(mdb_reader_check(handle, &dead), "mdb_reader_check")
        return Int(dead)
    }

    var maxKeySize: Int { Int(mdb_env_get_maxkeysize(handle)) }

    package var info: (mapSize: Int, lastPage: Int, readers: Int) {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return (info.me_mapsize, info.me_last_pgno, Int(info.me_numreaders))
    }

    var pageSize: Int {
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        return Int(stat.ms_psize)
    }

    /// Throws `wrongFormat` when the data file is shorter than its own meta page says. LMDB
    /// maps the file and checks nothing, so reading a page past the end would kill the
    /// process with SIGBUS (an interrupted copy, a file system that lost the file's tail).
    func checkFileLength() throws(KVError) {
        let path = self.path + "/data.mdb"
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        let needed = (self.info.lastPage + 1) * pageSize
        if Int(info.st_size) < needed {
            throw KVError.wrongFormat(file: path, reason: "truncated: \(info.st_size) bytes, but LMDB's meta page uses \(needed)")
        }
    }

    /// Changes the map size. LMDB requires that no transaction of this process is open.
    func setMapSize(_ size: Int) throws(KVError) {
        try check(mdb_env_set_mapsize(handle, size), "mdb_env_set_mapsize")
    }

    /// Runs `body` in a write transaction and commits it; aborts it when `body` throws.
    ///
    /// The one place write transactions end: `mdb_txn_commit` frees the transaction whether
    /// or not it succeeds, so a failed commit must never be followed by `mdb_txn_abort` (a
    /// double free). A failed commit is a typed error (a full disk as ENOSPC).
    func write<Result>(_ body: (LMDBTransaction) throws(KVError) -> Result) throws(KVError) -> Result {
        let transaction = try beginTransaction(readOnly: false)
        let result: Result
        do {
            result = try body(transaction)
        } catch {
            transaction.abort()
            throw error
        }
        let code: Int32
        if let injected = faults?.nextCommitFault() {
            // What LMDB does on a failed commit: the transaction is freed, the error returned.
            transaction.abort()
            code = injected
        } else {
            code = mdb_txn_commit(transaction.handle)
        }
        if code != MDB_SUCCESS { throw LMDBEnvironment.writeError(code, operation: "mdb_txn_commit", directory: path) }
        return result
    }

    package func beginTransaction(readOnly: Bool) throws(KVError) -> LMDBTransaction {
        var transaction: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &transaction),
                  readOnly ? "mdb_txn_begin(read)" : "mdb_txn_begin(write)")
        return LMDBTransaction(handle: transaction!)
    }
}

/// An LMDB transaction handle. Used by one thread at a time, under its owner's lock.
package struct LMDBTransaction: @unchecked Sendable {
    package let handle: OpaquePointer

    /// Ends a read transaction, keeping the table handles it opened (a read transaction's
    /// commit cannot fail for want of space: it writes nothing). Write transactions end
    /// through `LMDBEnvironment.write`.
    func commitRead() throws(KVError) { try check(mdb_txn_commit(handle), "mdb_txn_commit(read)") }
    package func abort() { mdb_txn_abort(handle) }
    /// Ends a read transaction but keeps its handle and its reader slot, for `renew`.
    func reset() { mdb_txn_reset(handle) }
    /// Starts a reset read transaction again, in the slot it kept.
    func renew() throws(KVError) { try check(mdb_txn_renew(handle), "mdb_txn_renew") }

    /// Opens a named table; nil when it does not exist and `create` is false. Its keys are
    /// compared by `LMDBKeyOrder` (LMDB's own order, computed faster).
    package func openTable(_ name: String, create: Bool) throws(KVError) -> MDB_dbi? {
        var dbi: MDB_dbi = 0
        let code = mdb_dbi_open(handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_dbi_open(\(name))")
        try check(mdb_set_compare(handle, dbi, cairn_compare_keys), "mdb_set_compare(\(name))")
        return dbi
    }

    /// The names of every named table (the keys of LMDB's main database).
    package func tableNames() throws(KVError) -> [String] {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, 1, &cursor), "mdb_cursor_open(main)")
        defer { mdb_cursor_close(cursor) }
        var names: [String] = []
        var key = MDB_val(), data = MDB_val()
        var code = mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
        while code == MDB_SUCCESS {
            let bytes = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
            if let name = String(validating: bytes, as: UTF8.self) { names.append(name) }
            code = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
        }
        if code != MDB_NOTFOUND { try check(code, "mdb_cursor_get(main)") }
        return names
    }

    /// The stored bytes of `key`, or nil; they live in LMDB's map, valid until the
    /// transaction ends or (in a write transaction) the next write. Inlined: as a call, its
    /// frame and stack guard were about 45 instructions of a point read.
    @inline(__always)
    func stored(_ key: UnsafeRawBufferPointer, in dbi: MDB_dbi) throws(KVError) -> UnsafeRawBufferPointer? {
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var data = MDB_val()
        let code = mdb_get(handle, dbi, &keyValue, &data)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_get")
        return UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
    }

    /// A copy of the stored bytes of `key`, or nil.
    func value(for key: [UInt8], in dbi: MDB_dbi) throws(KVError) -> [UInt8]? {
        try key.withBytes { (raw) throws(KVError) -> [UInt8]? in try stored(raw, in: dbi).map { Array($0) } }
    }

    /// Reserves `size` bytes for `key` and lets `fill` write them in place.
    ///
    /// `append`: the caller knows `key` sorts after every key in the table, so LMDB skips
    /// the B-tree search and writes at the end (`MDB_APPEND`; a key that does not sort last
    /// fails with `MDB_KEYEXIST`, harmlessly).
    func put(_ key: [UInt8], size: Int, in dbi: MDB_dbi, append: Bool = false,
             fill: (UnsafeMutableRawBufferPointer) -> Void) throws(KVError) {
        try key.withBytes { (raw) throws(KVError) in
            var keyValue = MDB_val(mv_size: raw.count, mv_data: UnsafeMutableRawPointer(mutating: raw.baseAddress))
            var data = MDB_val(mv_size: size, mv_data: nil)
            let flags = UInt32(MDB_RESERVE) | (append ? UInt32(MDB_APPEND) : 0)
            try check(mdb_put(handle, dbi, &keyValue, &data, flags), "mdb_put")
            fill(UnsafeMutableRawBufferPointer(start: data.mv_data, count: size))
        }
    }

    /// Deletes `key`; absent keys are not an error.
    func delete(_ key: [UInt8], in dbi: MDB_dbi) throws(KVError) {
        try key.withBytes { (raw) throws(KVError) in
            var keyValue = MDB_val(mv_size: raw.count, mv_data: UnsafeMutableRawPointer(mutating: raw.baseAddress))
            let code = mdb_del(handle, dbi, &keyValue, nil)
            if code != MDB_NOTFOUND { try check(code, "mdb_del") }
        }
    }

    func entryCount(_ dbi: MDB_dbi) throws(KVError) -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(handle, dbi, &stat), "mdb_stat")
        return stat.ms_entries
    }

    /// The greatest key in the table, or nil when it is empty.
    func lastKey(in dbi: MDB_dbi) throws(KVError) -> [UInt8]? {
        let cursor = try openCursor(dbi)
        defer { cursor.close() }
        return try cursor.move(.last).map { Array($0.key) }
    }

    func openCursor(_ dbi: MDB_dbi) throws(KVError) -> LMDBCursor {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor), "mdb_cursor_open")
        return LMDBCursor(handle: cursor!)
    }

    /// Binds `cursor`, opened in some read transaction of this environment, to this read
    /// transaction (LMDB lets read-only cursors be reused so, without a new allocation).
    func renew(_ cursor: LMDBCursor) throws(KVError) {
        try check(mdb_cursor_renew(handle, cursor.handle), "mdb_cursor_renew")
    }
}

/// A cursor over one table, valid inside its transaction; closed by its user.
struct LMDBCursor {
    let handle: OpaquePointer

    enum Move { case first, last, next, previous, atOrAfter([UInt8]) }

    /// Moves and returns the key and stored bytes there, or nil past either end.
    func move(_ move: Move) throws(KVError) -> (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)? {
        var key = MDB_val(), data = MDB_val()
        let code: Int32
        switch move {
        case .first: code = mdb_cursor_get(handle, &key, &data, MDB_FIRST)
        case .last: code = mdb_cursor_get(handle, &key, &data, MDB_LAST)
        case .next: code = mdb_cursor_get(handle, &key, &data, MDB_NEXT)
        case .previous: code = mdb_cursor_get(handle, &key, &data, MDB_PREV)
        case .atOrAfter(let target):
            code = target.withUnsafeBytes { raw in
                key = MDB_val(mv_size: raw.count, mv_data: UnsafeMutableRawPointer(mutating: raw.baseAddress))
                return mdb_cursor_get(handle, &key, &data, MDB_SET_RANGE)
            }
        }
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_cursor_get")
        return (UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
    }

    /// `move(.next)` without choosing the move: the step of a count's walk, once per entry.
    @inline(__always)
    func next() throws(KVError) -> (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)? {
        var key = MDB_val(), data = MDB_val()
        let code = mdb_cursor_get(handle, &key, &data, MDB_NEXT)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_cursor_get")
        return (UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
    }

    /// The record of exactly `key` (its key as LMDB holds it, and its stored bytes), or nil;
    /// the cursor is left there. Both live in LMDB's map, valid while the transaction lives.
    ///
    /// For keys looked up in ascending order this is cheaper than `mdb_get`, which descends
    /// from the root every time: LMDB looks for the key on the cursor's current leaf page
    /// first, and only searches the tree when it is not there.
    func record(at key: UnsafeRawBufferPointer) throws(KVError) -> (key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer)? {
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var data = MDB_val()
        let code = mdb_cursor_get(handle, &keyValue, &data, MDB_SET_KEY)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_cursor_get(set)")
        return (UnsafeRawBufferPointer(start: keyValue.mv_data, count: keyValue.mv_size),
                UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
    }

    func close() { mdb_cursor_close(handle) }
}

/// The key order of every table (`cairn_compare_keys` in shim.h): LMDB's default order
/// (bytewise, a shorter key first when it is a prefix of the other), compared a word at a time.
///
/// Relies on: the order is exactly LMDB's default, so files written with either read with the
/// other, and tools that open the data file without it (`mdb_stat`, another version) agree.
/// Pinned by `KeyOrderTests.theTablesKeyOrderIsLMDBsDefault`.
package enum LMDBKeyOrder {
    /// The comparison on two byte arrays: negative, zero or positive (for tests).
    package static func compare(bytes left: [UInt8], _ right: [UInt8]) -> Int32 {
        left.withUnsafeBytes { leftBytes in
            right.withUnsafeBytes { rightBytes in
                var a = MDB_val(mv_size: leftBytes.count, mv_data: UnsafeMutableRawPointer(mutating: leftBytes.baseAddress))
                var b = MDB_val(mv_size: rightBytes.count, mv_data: UnsafeMutableRawPointer(mutating: rightBytes.baseAddress))
                return cairn_compare_keys(&a, &b)
            }
        }
    }
}

package let lmdbMapFull = MDB_MAP_FULL
package let lmdbReadersFull = MDB_READERS_FULL

/// Failures to inject into LMDB commits (tests): the Nth commit of an environment fails with
/// a given code, freeing its transaction the way a failed `mdb_txn_commit` does.
///
/// `@unchecked Sendable`: the counts are only touched under `lock`.
package final class LMDBFaults: @unchecked Sendable {
    private let lock = ConditionLock<(count: Int, failing: [Int: Int32])>((0, [:]))

    package init() {}

    /// Makes commit number `occurrence` (from 1, counted across every environment this is
    /// given to) fail with `code`.
    package func failCommit(_ occurrence: Int, code: Int32) {
        lock.withLock { $0.failing[occurrence] = code }
    }

    /// Commits counted so far.
    package var commits: Int { lock.withLock { $0.count } }

    func nextCommitFault() -> Int32? {
        lock.withLock { state in
            state.count += 1
            return state.failing[state.count]
        }
    }
}
