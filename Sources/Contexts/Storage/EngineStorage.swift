import KVEngine
import Locking

/// The object layer's storage on the local engine (KVEngine): a ``Store`` in one directory.
///
/// The only type of the object layer that sees the engine, with its read view, its key
/// allocator and its error mapping beside it in this folder.
///
/// `Sendable`: the store is Sendable, and the observer list is behind a lock.
final class EngineStorage: ObjectStorage {
    let store: Store
    private let observers = ConditionLock<[@Sendable (StorageCommitNotice) -> Void]>([])
    /// Serialises key allocation in this process, so contexts do not race on the sequence
    /// record (the commit is still conditional, which guards other ObjectStores on the Store).
    /// (It holds an unused Int: TSan misreads `inout` access to a zero-sized value under a
    /// lock as a race; see Testing.md.)
    let allocationLock = ConditionLock<Int>(0)

    init(store: Store) {
        self.store = store
    }

    var location: String { store.directory }

    func readView() throws(StorageError) -> any StorageReadView {
        do {
            return try store.snapshot()
        } catch {
            throw StorageError(error, operation: "read")
        }
    }

    func commit(_ batch: consuming StorageBatch, durability: SaveDurability) throws(StorageError) -> StorageCommitOutcome {
        try commit(batch.takeEngineBatch(), durability: durability)
    }

    /// Commits an engine batch, with the failed conditions as an outcome and other failures
    /// as the storage's errors. The batch is handed to the engine whole (its keys and values
    /// move into the log's operations), so the observers' keys are read before.
    func commit(_ engineBatch: consuming WriteBatch, durability: SaveDurability) throws(StorageError) -> StorageCommitOutcome {
        let current = observers.withLock { $0 }
        let written = current.isEmpty ? [] : Self.writtenKeys(of: engineBatch)
        let info: CommitInfo
        do throws(KVError) {
            info = try store.commit(consume engineBatch, durability: durability == .full ? .full : .normal)
        } catch .conditionFailed(let failures) {
            return .conditionsFailed(failures.map {
                FailedStorageCondition(key: StorageKey(table: $0.table, key: $0.key), currentVersion: $0.currentVersion)
            })
        } catch {
            throw StorageError(error, operation: "commit")
        }
        notify(current, of: written, version: info.version)
        return .committed(version: info.version, recordVersions: info.recordVersions)
    }

    func commitVersion() throws(StorageError) -> UInt64 {
        do {
            return try store.latestCommitVersion()
        } catch {
            throw StorageError(error, operation: "commit version")
        }
    }

    /// The log's directory: every commit appends to a segment in it.
    var commitSignalDirectory: String? { store.directory + "/wal" }

    func addCommitObserver(_ observer: @escaping @Sendable (StorageCommitNotice) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    func close() {
        store.close()
    }

    /// The keys a batch writes, in order; a version-keyed put's is empty (no key of a valid
    /// batch is), to be filled in with the commit's version (`notify`).
    private static func writtenKeys(of batch: WriteBatch) -> [StorageKey] {
        var written: [StorageKey] = []
        for operation in batch.operations {
            switch operation {
            case let .put(table, key, _, _), let .delete(table, key, _),
                 let .unversionedPut(table, key, _), let .unversionedDelete(table, key):
                written.append(StorageKey(table: table, key: key))
            case let .putAtCommitVersion(table, _, _):
                written.append(StorageKey(table: table, key: []))
            case .check:
                break
            }
        }
        return written
    }

    private func notify(_ observers: [@Sendable (StorageCommitNotice) -> Void], of written: [StorageKey], version: UInt64) {
        guard !observers.isEmpty, !written.isEmpty else { return }
        let keys = written.map { $0.key.isEmpty ? StorageKey(table: $0.table, key: WriteBatch.commitVersionKey(version)) : $0 }
        let notice = StorageCommitNotice(version: version, writtenKeys: keys)
        for observer in observers { observer(notice) }
    }
}

/// A snapshot is the engine's read view: the seam's reads are its own, with the engine's errors
/// turned into the storage's. (A wrapper object per read view cost an allocation, a release and
/// a call per read.)
extension Snapshot: StorageReadView {
    package func visitValues(
        forKeys keys: [StorageKey], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws {
        do {
            try visitValues(count: keys.count, key: { (keys[$0].table, keys[$0].key) }, body)
        } catch let error as KVError {
            throw StorageError(error, operation: "read")
        }
    }

    package func visitRecords(
        in table: String, primaryKeys: [UInt64], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws {
        // A record's key is its primary key's eight bytes, big-endian (StorageMapping.key(for:)).
        do {
            try visitValues(in: table, bigEndianKeys: primaryKeys, body)
        } catch let error as KVError {
            throw StorageError(error, operation: "read")
        }
    }

    package func forEach(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, reverse: Bool,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt64) throws -> Bool
    ) throws {
        do {
            try forEach(in: table, from: lower, to: upper, prefix: nil, reverse: reverse, onCorruptRecord: nil, body)
        } catch let error as KVError {
            throw StorageError(error, operation: "scan")
        }
    }

    package func countKeys(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, where include: ((UnsafeRawBufferPointer) -> Bool)?
    ) throws -> Int {
        do {
            return try count(in: table, from: lower, to: upper, where: include)
        } catch {
            throw StorageError(error, operation: "scan")
        }
    }

    package func estimatedCount(in table: String) throws(StorageError) -> Int {
        do {
            return try estimatedRecordCount(in: table)
        } catch {
            throw StorageError(error, operation: "count")
        }
    }
}

extension StorageError {
    /// The engine's error as a storage error, keeping its code and, where the engine names it,
    /// the call that failed.
    init(_ error: KVError, operation: String) {
        let code: Code
        var operation = operation
        switch error {
        case .closed: code = .closed
        case .locked(_, let pid): code = .locked(pid: pid)
        case .noStore: code = .noStore
        case let .io(errno, call, _):
            code = .io(errno: errno)
            operation = call
        case let .lmdb(lmdbCode, call):
            code = .backend(code: lmdbCode)
            operation = call
        case .keyTooLong, .emptyKey, .invalidTableName: code = .invalidInput
        case let .tooLarge(bytes, limit): code = .tooLarge(bytes: bytes, limit: limit)
        case .corruptLog, .corruptRecord, .wrongFormat: code = .corrupt
        case .poisoned: code = .poisoned
        case .mapFull, .tooManyTables: code = .full
        case .snapshotExpired(let version, _): code = .readViewExpired(version: version)
        case .snapshotClosed: code = .readViewClosed
        case .conditionFailed: code = .conditionsFailed
        case .readOnly: code = .readOnly
        }
        self.init(code: code, operation: operation, message: error.description)
    }
}

extension ObjectStore {
    /// Opens (creating if needed) the engine store in `directory` and uses it with `schema`.
    ///
    /// ```swift
    /// let objects = try ObjectStore(directory: path, schema: schema)
    /// ```
    ///
    /// - Throws: ``ContextError/storage(_:)`` when the store cannot be opened (for example
    ///   `.locked` when another process has it open) or an index it must build does not fit
    ///   one commit (`.tooLarge`); ``ContextError/corruptValue(_:_:)`` for a record an index
    ///   build cannot decode.
    public convenience init(directory: String, schema: Schema, options: Options = Options()) throws(ContextError) {
        let store: Store
        do {
            store = try Store(directory: directory, options: options.engine.options)
        } catch {
            throw ContextError.storage(StorageError(error, operation: "open"))
        }
        do {
            try self.init(storage: EngineStorage(store: store), schema: schema, options: options)
        } catch {
            store.close()
            throw error
        }
    }

    /// Uses an already open engine store with `schema` (building or dropping indexes as the
    /// designated initializer does). Entity tables are named `entity:<Entity>`, index tables
    /// `index:<Entity>:<attributes>`; other tables of the store are left alone.
    package convenience init(store: Store, schema: Schema, options: Options = Options()) throws(ContextError) {
        try self.init(storage: EngineStorage(store: store), schema: schema, options: options)
    }

    /// The engine store underneath, for tests and tools (stats, checkpoints).
    package var store: Store {
        guard let engine = coordinator.storage as? EngineStorage else {
            preconditionFailure("this ObjectStore is not on the local engine")
        }
        return engine.store
    }
}

/// The engine's options inside ``ObjectStore/Options`` (a type of the object layer, so that
/// the options' own file need not see the engine).
package struct EngineOptions: Sendable {
    var options = Store.Options()
}

extension ObjectStore.Options {
    /// The engine's options, used when the object store opens the directory itself.
    package var storeOptions: Store.Options {
        get { engine.options }
        set { engine.options = newValue }
    }

    /// Opens the store for reading only, beside the process that writes it (the engine's
    /// `Store.Options.readOnly`): contexts fetch and refresh as usual and see every commit the
    /// writer acknowledged before their read view began; saves fail with a storage error whose
    /// code is `.readOnly`, and nothing is written. Opening fails the same way when the schema
    /// differs from the store's (a migration or an index build would have to write). Default
    /// false.
    ///
    /// ```swift
    /// var options = ObjectStore.Options()
    /// options.readOnly = true
    /// let objects = try ObjectStore(directory: path, schema: schema, options: options)
    /// ```
    public var readOnly: Bool {
        get { engine.options.readOnly }
        set { engine.options.readOnly = newValue }
    }

    /// The most the engine's data file may grow to, in bytes (LMDB's map size). Default 64 GiB.
    ///
    /// ```swift
    /// options.mapSize = 1 << 30
    /// ```
    public var mapSize: Int {
        get { engine.options.mapSize }
        set { engine.options.mapSize = newValue }
    }

    /// The oldest, in seconds, that a read view (a pinned query generation) may grow before the
    /// store ends it to reuse the pages it holds; its context's next read then fails with a
    /// storage error whose code is `.readViewExpired`. Default nil: no bound.
    ///
    /// ```swift
    /// options.maxQueryGenerationAge = 60
    /// ```
    public var maxQueryGenerationAge: Double? {
        get { engine.options.maxSnapshotAge }
        set { engine.options.maxSnapshotAge = newValue }
    }

    /// How many commits a read view may fall behind before the store ends it (as
    /// ``maxQueryGenerationAge``). Default nil: no bound.
    ///
    /// ```swift
    /// options.maxQueryGenerationLag = 100_000
    /// ```
    public var maxQueryGenerationLag: UInt64? {
        get { engine.options.maxSnapshotLag }
        set { engine.options.maxSnapshotLag = newValue }
    }
}
