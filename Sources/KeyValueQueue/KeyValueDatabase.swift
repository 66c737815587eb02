import KVEngine
import Policies

/// The handle a ``StoreQueue`` block works with: FMDB's `db`. Valid only inside the block it was
/// given to, on the queue; using it anywhere else stops the process.
///
/// Inside ``StoreQueue/inDatabase(_:)-(KeyValueDatabase)`` each write commits at once (like
/// SQLite's autocommit) and each read sees the latest commit. Inside a transaction or savepoint,
/// writes are buffered and commit together when the outermost block ends; reads see the
/// transaction's snapshot with its own writes on top.
///
/// ```swift
/// try queue.inTransaction { db, rollback in
///     let balance = try db.string(forKey: "balance/ann").flatMap { Int($0) } ?? 0
///     guard balance >= 10 else { rollback = true; return }
///     try db.put(String(balance - 10), forKey: "balance/ann")
///     try db.put(String(10), forKey: "balance/bob")
/// }
/// ```
public final class KeyValueDatabase {
    let owner: StoreQueue
    /// The open transaction, nil in autocommit mode.
    private var transaction: KeyValueTransaction?
    private var isOpen = true

    init(owner: StoreQueue) {
        self.owner = owner
    }

    /// Whether writes are buffered for one atomic commit (inside `inTransaction`, `inSavePoint`).
    ///
    /// ```swift
    /// queue.inDatabase { db in db.isInTransaction }   // false
    /// ```
    public var isInTransaction: Bool {
        checkUsable()
        return transaction != nil
    }

    // MARK: - Reading

    /// The record of `key` in `table` (value and record version), or nil when absent.
    ///
    /// ```swift
    /// let record = try db.get(Array("k".utf8), in: "settings")
    /// ```
    ///
    /// - Throws: `KVError` from the engine.
    public func get(_ key: [UInt8], in table: String = WriteBatch.defaultTable) throws(KVError) -> Record? {
        checkUsable()
        if transaction != nil {
            let state = try transaction!.visible(key, in: table)
            return state.value.map { Record(key: key, value: $0, version: state.version) }
        }
        return try withLatestSnapshot { (snapshot) throws(KVError) in
            do {
                return try snapshot.get(key, in: table)
            } catch {
                throw Self.kvError(error)
            }
        }
    }

    /// The UTF-8 string value of a string key, or nil when absent.
    ///
    /// ```swift
    /// let name = try db.string(forKey: "user/1/name")
    /// ```
    ///
    /// - Throws: `KVError` from the engine.
    public func string(forKey key: String, in table: String = WriteBatch.defaultTable) throws(KVError) -> String? {
        try get(Array(key.utf8), in: table).map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// The records of `table` in key order (or reverse), within [`lower`, `upper`) and starting
    /// with `prefix` when given, at most `limit`; inside a transaction its own writes included.
    ///
    /// ```swift
    /// let users = try db.scan(in: "default", prefix: Array("user/".utf8))
    /// ```
    ///
    /// - Throws: `KVError` from the engine.
    public func scan(
        in table: String = WriteBatch.defaultTable, from lower: [UInt8]? = nil, to upper: [UInt8]? = nil,
        prefix: [UInt8]? = nil, reverse: Bool = false, limit: Int? = nil
    ) throws(KVError) -> [Record] {
        checkUsable()
        guard let transaction else {
            return try withLatestSnapshot { (snapshot) throws(KVError) in
                do {
                    return try snapshot.scan(in: table, from: lower, to: upper, prefix: prefix, reverse: reverse, limit: limit)
                } catch {
                    throw Self.kvError(error)
                }
            }
        }
        let inRange = { (key: [UInt8]) -> Bool in
            if let lower, key.lexicographicallyPrecedes(lower) { return false }
            if let upper, !key.lexicographicallyPrecedes(upper) { return false }
            if let prefix, !key.starts(with: prefix) { return false }
            return true
        }
        let buffered = transaction.bufferedKeys(in: table, accepting: inRange)
        var records: [Record]
        do {
            // Buffered deletes may hide stored records: read without a limit when there are any.
            records = try transaction.snapshot.scan(
                in: table, from: lower, to: upper, prefix: prefix, reverse: reverse,
                limit: buffered.isEmpty ? limit : nil)
        } catch {
            throw Self.kvError(error)
        }
        guard !buffered.isEmpty else { return records }
        var byKey = Dictionary(records.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        for (key, state) in buffered {
            byKey[key] = state.value.map { Record(key: key, value: $0, version: state.version) }
        }
        records = byKey.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        if reverse { records.reverse() }
        if let limit { records = Array(records.prefix(max(limit, 0))) }
        return records
    }

    // MARK: - Writing

    /// Writes `value` under `key`, if `condition` holds (checked now against what this block
    /// sees, and again by the engine at commit).
    ///
    /// ```swift
    /// try db.put(Array("v2".utf8), forKey: Array("k".utf8), if: .version(1))
    /// ```
    ///
    /// - Throws: `KVError.conditionFailed` when the condition does not hold (nothing buffered),
    ///   other `KVError`s from the engine (autocommit mode).
    public func put(_ value: [UInt8], forKey key: [UInt8], in table: String = WriteBatch.defaultTable, if condition: Condition? = nil) throws(KVError) {
        try write(value, forKey: key, in: table, if: condition)
    }

    /// Writes a UTF-8 string value under a UTF-8 string key.
    ///
    /// ```swift
    /// try db.put("Ann", forKey: "user/1/name")
    /// ```
    ///
    /// - Throws: as ``put(_:forKey:in:if:)-([UInt8],_,_,_)``.
    public func put(_ value: String, forKey key: String, in table: String = WriteBatch.defaultTable, if condition: Condition? = nil) throws(KVError) {
        try write(Array(value.utf8), forKey: Array(key.utf8), in: table, if: condition)
    }

    /// Removes `key`, if `condition` holds; removing an absent key is not an error.
    ///
    /// ```swift
    /// try db.delete(Array("k".utf8))
    /// ```
    ///
    /// - Throws: as ``put(_:forKey:in:if:)-([UInt8],_,_,_)``.
    public func delete(_ key: [UInt8], in table: String = WriteBatch.defaultTable, if condition: Condition? = nil) throws(KVError) {
        try write(nil, forKey: key, in: table, if: condition)
    }

    /// Removes a UTF-8 string key.
    ///
    /// ```swift
    /// try db.delete("user/1/name")
    /// ```
    ///
    /// - Throws: as ``put(_:forKey:in:if:)-([UInt8],_,_,_)``.
    public func delete(_ key: String, in table: String = WriteBatch.defaultTable, if condition: Condition? = nil) throws(KVError) {
        try write(nil, forKey: Array(key.utf8), in: table, if: condition)
    }

    private func write(_ value: [UInt8]?, forKey key: [UInt8], in table: String, if condition: Condition?) throws(KVError) {
        checkUsable()
        if transaction != nil {
            try transaction!.write(value, forKey: key, in: table, if: condition)
            return
        }
        var batch = WriteBatch()
        if let value {
            batch.put(value, forKey: key, in: table, if: condition)
        } else {
            batch.delete(key, in: table, if: condition)
        }
        try owner.commit(batch)
    }

    // MARK: - Savepoints

    /// Runs `body` as a savepoint: setting `rollback` (or throwing) undoes what `body` wrote, and
    /// only that; otherwise its writes stay in the enclosing transaction. Nestable. Outside a
    /// transaction (in `inDatabase`), the outermost savepoint is a transaction of its own that
    /// commits when it ends.
    ///
    /// ```swift
    /// try queue.inTransaction { db, _ in
    ///     try db.put("1", forKey: "a")
    ///     try db.inSavePoint { db, rollback in
    ///         try db.put("2", forKey: "b")
    ///         rollback = true                 // drops "b", keeps "a"
    ///     }
    /// }
    /// ```
    ///
    /// - Throws: what `body` throws (after rolling back to the savepoint); for an outermost
    ///   savepoint, `KVError` from its commit.
    public func inSavePoint<T>(_ body: (KeyValueDatabase, inout Bool) throws -> T) throws -> T {
        checkUsable()
        guard transaction != nil else { return try runTransaction(policy: owner.mergePolicy, body) }
        let mark = transaction!.mark
        var rollback = false
        let value: T
        do {
            value = try body(self, &rollback)
        } catch {
            transaction?.rollback(to: mark)
            throw error
        }
        if rollback { transaction?.rollback(to: mark) }
        return value
    }

    /// Begins a transaction, runs `body`, and commits its writes at once unless it set
    /// `rollback` or threw; `policy` resolves the commit's conflicts.
    func runTransaction<T>(policy: any ValueMergePolicy, _ body: (KeyValueDatabase, inout Bool) throws -> T) throws -> T {
        precondition(transaction == nil, "a transaction is already open")
        let snapshot = try owner.store.snapshot()
        defer { snapshot.close() }
        transaction = KeyValueTransaction(snapshot: snapshot)
        defer { transaction = nil }
        var rollback = false
        let value = try body(self, &rollback)
        if !rollback, let transaction {
            try transaction.commit(
                to: owner.store, durability: owner.durability, policy: policy, maxAttempts: owner.maxCommitAttempts)
        }
        return value
    }

    // MARK: - Checks

    /// Ends the handle's life (the block returned).
    func close() {
        isOpen = false
        transaction = nil
    }

    private func checkUsable() {
        guard isOpen else {
            queueMisuse(
                "StoreQueue '\(owner.label)': its database handle was used after its block returned; "
                    + "the handle is valid only inside the block it was given to")
        }
        guard owner.isOnQueue else {
            queueMisuse(
                "StoreQueue '\(owner.label)': its database handle was used off the queue; use it only inside "
                    + "the block it was given to")
        }
    }

    private func withLatestSnapshot<T>(_ body: (Snapshot) throws(KVError) -> T) throws(KVError) -> T {
        let snapshot = try owner.store.snapshot()
        defer { snapshot.close() }
        return try body(snapshot)
    }

    /// Snapshot reads throw untyped errors; they are KVErrors.
    static func kvError(_ error: any Error) -> KVError {
        error as? KVError ?? .io(errno: 0, operation: "read", path: "\(error)")
    }
}

/// The handle belongs to its block and its queue.
@available(*, unavailable)
extension KeyValueDatabase: Sendable {}
