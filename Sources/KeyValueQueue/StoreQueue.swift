import Dispatch
import KVEngine
import Locking
import Policies

/// A serial queue for plain key-value work on a ``KVEngine/Store``: Cairn's `FMDatabaseQueue`.
/// Every block runs on the queue, one at a time, in order, so blocks from many threads never
/// interleave.
///
/// ```swift
/// let queue = StoreQueue(store: objects.store, label: "settings")
/// try queue.inTransaction { db, rollback in
///     try db.put("dark", forKey: "theme", in: "settings")
///     try db.put("2", forKey: "version", in: "settings")
/// }                                                   // both or neither
/// let theme = try queue.inDatabase { db in try db.string(forKey: "theme", in: "settings") }
/// ```
///
/// - `inDatabase`: each write commits at once; each read sees the latest commit.
/// - `inTransaction`: writes are buffered and commit atomically when the block returns; reads
///   see one snapshot plus the block's own writes. Setting `rollback = true` discards them all,
///   and so does a thrown error (which is rethrown). The commit also checks that no writer
///   outside this queue changed a key the block read or wrote. If one did, the queue's
///   ``mergePolicy`` (or the transaction's own) decides each such key from its ancestor (the
///   value the block read), ours and theirs, and the commit is tried again, at most
///   ``maxCommitAttempts`` times. The default policy, `.error`, fails with
///   `KVError.conditionFailed`, nothing written: run the block again.
/// - `inSavePoint`: the same at the top level; `db.inSavePoint` inside nests and rolls back to
///   its own start only.
///
/// Calling the queue from inside one of its own blocks would wait for itself forever (FMDB
/// deadlocks there): it stops the process with a message instead. Use the `db` you were given.
///
/// `Sendable`: every stored property is immutable and Sendable.
public final class StoreQueue: Sendable {
    /// The engine store the queue works on.
    ///
    /// ```swift
    /// queue.store.directory
    /// ```
    public let store: Store

    /// The queue's name, used in its dispatch label and misuse messages.
    ///
    /// ```swift
    /// StoreQueue(store: store, label: "settings").label   // "settings"
    /// ```
    public let label: String

    /// The durability of the queue's commits; nil uses the store's default.
    ///
    /// ```swift
    /// StoreQueue(store: store, durability: .normal).durability
    /// ```
    public let durability: Durability?

    /// What a transaction does when another writer changed a key it read: the default for every
    /// transaction of the queue (`inTransaction(mergePolicy:_:)` overrides it for one).
    ///
    /// ```swift
    /// StoreQueue(store: store).mergePolicy.name   // "error"
    /// ```
    public let mergePolicy: any ValueMergePolicy

    /// How many commits a transaction tries before it gives up with ``TooManyConflictRetries``
    /// (each retry after its merge policy resolved a conflict); at least 1.
    ///
    /// ```swift
    /// StoreQueue(store: store, maxCommitAttempts: 16).maxCommitAttempts   // 16
    /// ```
    public let maxCommitAttempts: Int

    let queue: DispatchQueue
    private let queueKey = DispatchSpecificKey<Bool>()

    /// A queue for `store`. `mergePolicy` resolves the conflicts of its transactions (the
    /// default fails them with `KVError.conditionFailed`); `maxCommitAttempts` bounds the
    /// commits one transaction tries (values below 1 count as 1).
    ///
    /// ```swift
    /// let queue = StoreQueue(store: store, label: "counters", durability: .normal, mergePolicy: .storeTrump)
    /// ```
    public init(
        store: Store, label: String = "cairn.store-queue", durability: Durability? = nil,
        mergePolicy: any ValueMergePolicy = .error, maxCommitAttempts: Int = 8
    ) {
        self.store = store
        self.label = label
        self.durability = durability
        self.mergePolicy = mergePolicy
        self.maxCommitAttempts = max(1, maxCommitAttempts)
        queue = DispatchQueue(label: "cairn.store-queue.\(label)")
        queue.setSpecific(key: queueKey, value: true)
    }

    // MARK: - Synchronous

    /// Runs `body` on the queue and waits; each write inside commits at once.
    ///
    /// ```swift
    /// let count = try queue.inDatabase { db in try db.scan(in: "users").count }
    /// ```
    ///
    /// - Throws: what `body` throws.
    public func inDatabase<T>(_ body: (KeyValueDatabase) throws -> T) rethrows -> T {
        checkNotReentrant("inDatabase")
        return try queue.sync {
            let db = KeyValueDatabase(owner: self)
            defer { db.close() }
            return try body(db)
        }
    }

    /// Runs `body` on the queue as one transaction and waits: its writes commit atomically when
    /// it returns, unless it sets `rollback` to true or throws (then nothing is written).
    /// `mergePolicy`, when given, resolves this transaction's conflicts instead of the queue's
    /// ``mergePolicy``.
    ///
    /// ```swift
    /// try queue.inTransaction { db, rollback in
    ///     try db.put("1", forKey: "a")
    ///     if somethingWentWrong { rollback = true }
    /// }
    /// try queue.inTransaction(mergePolicy: .objectTrump) { db, _ in try db.put("mine", forKey: "a") }
    /// ```
    ///
    /// - Throws: what `body` throws; `KVError` from the commit (`.conditionFailed` when a writer
    ///   outside this queue changed a key the block read and the policy answered `.fail`, as
    ///   the default `.error` does); what the policy throws; ``TooManyConflictRetries``.
    public func inTransaction<T>(
        mergePolicy: (any ValueMergePolicy)? = nil, _ body: (KeyValueDatabase, inout Bool) throws -> T
    ) throws -> T {
        checkNotReentrant("inTransaction")
        return try queue.sync { try transaction(mergePolicy, body) }
    }

    /// Runs `body` on the queue as a savepoint and waits: at the top level it behaves as
    /// `inTransaction(mergePolicy:_:)` with the queue's
    /// policy; nest more with `db.inSavePoint`.
    ///
    /// ```swift
    /// try queue.inSavePoint { db, rollback in
    ///     try db.put("1", forKey: "a")
    ///     try db.inSavePoint { db, rollback in
    ///         try db.put("2", forKey: "b")
    ///         rollback = true                  // only "b" is undone
    ///     }
    /// }
    /// ```
    ///
    /// - Throws: as `inTransaction`.
    public func inSavePoint<T>(_ body: (KeyValueDatabase, inout Bool) throws -> T) throws -> T {
        checkNotReentrant("inSavePoint")
        return try queue.sync { try transaction(nil, body) }
    }

    // MARK: - Asynchronous

    /// Runs `body` on the queue without blocking a thread; each write commits at once.
    ///
    /// ```swift
    /// let theme = try await queue.inDatabase { db in try db.string(forKey: "theme") }
    /// ```
    ///
    /// - Throws: what `body` throws.
    public func inDatabase<T: Sendable>(_ body: @Sendable (KeyValueDatabase) throws -> T) async throws -> T {
        try await onQueue {
            let db = KeyValueDatabase(owner: self)
            defer { db.close() }
            return try body(db)
        }
    }

    /// The async twin of the synchronous `inTransaction`.
    ///
    /// ```swift
    /// try await queue.inTransaction { db, rollback in try db.put("1", forKey: "a") }
    /// ```
    ///
    /// - Throws: as the synchronous `inTransaction`.
    public func inTransaction<T: Sendable>(
        mergePolicy: (any ValueMergePolicy)? = nil, _ body: @Sendable (KeyValueDatabase, inout Bool) throws -> T
    ) async throws -> T {
        try await onQueue { try self.transaction(mergePolicy, body) }
    }

    /// The async twin of the synchronous `inSavePoint`.
    ///
    /// ```swift
    /// try await queue.inSavePoint { db, rollback in try db.put("1", forKey: "a") }
    /// ```
    ///
    /// - Throws: as the synchronous `inTransaction`.
    public func inSavePoint<T: Sendable>(_ body: @Sendable (KeyValueDatabase, inout Bool) throws -> T) async throws -> T {
        try await onQueue { try self.transaction(nil, body) }
    }

    /// Whether the current code runs in one of this queue's blocks.
    ///
    /// ```swift
    /// queue.inDatabase { _ in queue.isOnQueue }   // true
    /// ```
    public var isOnQueue: Bool {
        DispatchQueue.getSpecific(key: queueKey) != nil
    }

    // MARK: - Internals

    private func transaction<T>(
        _ policy: (any ValueMergePolicy)?, _ body: (KeyValueDatabase, inout Bool) throws -> T
    ) throws -> T {
        let db = KeyValueDatabase(owner: self)
        defer { db.close() }
        return try db.runTransaction(policy: policy ?? mergePolicy, body)
    }

    func commit(_ batch: WriteBatch) throws(KVError) {
        try store.commit(batch, durability: durability)
    }

    private func onQueue<T: Sendable>(_ body: @Sendable () throws -> T) async throws -> T {
        try await withoutActuallyEscaping(body) { escapable in
            let work = OneShotWork(escapable)
            return try await withCheckedThrowingContinuation { continuation in
                queue.async { continuation.resume(with: work.run()) }
            }
        }
    }

    private func checkNotReentrant(_ operation: String) {
        guard isOnQueue else { return }
        queueMisuse(
            "StoreQueue '\(label)': \(operation) called from inside one of this queue's own blocks; it would wait "
                + "for itself forever (FMDB's FMDatabaseQueue deadlocks here). Use the db handle your block was "
                + "given, and db.inSavePoint { } for a nested unit of work")
    }
}
