/// What a batch operation requires of a record for the commit to go ahead.
///
/// ```swift
/// batch.put(Array("new".utf8), forKey: Array("k".utf8), if: .version(3))
/// batch.put(Array("first".utf8), forKey: Array("j".utf8), if: .absent)
/// ```
public enum Condition: Sendable, Hashable, CustomStringConvertible {
    /// The record exists with exactly this record version.
    case version(UInt64)
    /// The record does not exist.
    case absent

    public var description: String {
        switch self {
        case .version(let version): return "version \(version)"
        case .absent: return "absent"
        }
    }
}

/// Puts and deletes across tables, committed all-or-nothing by `Store.commit(_:)`.
///
/// Operations apply in order; a condition is checked against the state left by the
/// operations before it in the same batch. If any condition fails, nothing is written.
///
/// ```swift
/// var batch = WriteBatch()
/// batch.put("Ann", forKey: "person/1", in: "people")
/// batch.delete("person/2", in: "people", if: .version(4))
/// let version = try store.commit(batch).version
/// ```
public struct WriteBatch: Sendable, Equatable {
    /// One operation of a batch.
    public enum Operation: Sendable, Equatable {
        /// Write `value` under `key`; the record's version becomes its old version + 1.
        case put(table: String, key: [UInt8], value: [UInt8], condition: Condition?)
        /// Remove `key`; deleting an absent record is not an error (unless conditioned).
        case delete(table: String, key: [UInt8], condition: Condition?)
        /// Write nothing, but require `condition` of `key`.
        case check(table: String, key: [UInt8], condition: Condition)
        /// Write `value` under the key ``WriteBatch/commitVersionKey(_:)`` of the batch's own
        /// commit version, which the engine assigns inside the commit (see
        /// ``WriteBatch/putAtCommitVersion(_:in:if:)``).
        case putAtCommitVersion(table: String, value: [UInt8], condition: Condition?)
        /// Write `value` under `key` with no record version (see `putUnversioned`).
        case unversionedPut(table: String, key: [UInt8], value: [UInt8])
        /// Remove `key` outright, leaving no tombstone (see `deleteUnversioned`).
        case unversionedDelete(table: String, key: [UInt8])

        var table: String {
            switch self {
            case .put(let table, _, _, _), .delete(let table, _, _), .check(let table, _, _),
                 .putAtCommitVersion(let table, _, _),
                 .unversionedPut(let table, _, _), .unversionedDelete(let table, _): return table
            }
        }

        /// The key, with a version-keyed put's at version 0 (as long as every real one: what
        /// validation needs to know of it).
        var key: [UInt8] {
            switch self {
            case .put(_, let key, _, _), .delete(_, let key, _), .check(_, let key, _),
                 .unversionedPut(_, let key, _), .unversionedDelete(_, let key): return key
            case .putAtCommitVersion: return WriteBatch.commitVersionKey(0)
            }
        }
    }

    /// The name of the table used when none is given.
    public static let defaultTable = "default"

    /// The operations, in order.
    public private(set) var operations: [Operation] = []

    // Kept as operations are added, while their keys are at hand, so that `validate` need
    // not read every key and value of a large batch again (by the time a commit validates
    // it, they are out of the cache). Derived from `operations`; not part of equality.
    /// The log payload all operations would take (see `validate`).
    private var payloadBytes = 4
    /// The longest key.
    private var longestKey = 0
    /// Whether some key is empty or some table name invalid.
    private var hasInvalidName = false
    /// The table of the last operation added, and its name's size in bytes.
    private var lastTable: String? = nil
    private var lastTableBytes = 0

    /// Creates an empty batch.
    public init() {}

    /// Whether the batch has no operations.
    public var isEmpty: Bool { operations.isEmpty }

    /// Makes room for `count` operations in all, so a batch built of many operations is not
    /// regrown (and its operations moved) as it fills.
    ///
    /// ```swift
    /// var batch = WriteBatch()
    /// batch.reserveCapacity(rows.count)
    /// for row in rows { batch.put(row.value, forKey: row.key) }
    /// ```
    public mutating func reserveCapacity(_ count: Int) {
        operations.reserveCapacity(count)
    }

    /// Adds a put of `value` under `key`, optionally conditional.
    public mutating func put(_ value: consuming [UInt8], forKey key: consuming [UInt8], in table: String = defaultTable, if condition: Condition? = nil) {
        note(table: table, key: key, valueBytes: value.count)
        operations.append(.put(table: table, key: key, value: value, condition: condition))
    }

    /// Adds a delete of `key`, optionally conditional.
    public mutating func delete(_ key: consuming [UInt8], in table: String = defaultTable, if condition: Condition? = nil) {
        note(table: table, key: key, valueBytes: nil)
        operations.append(.delete(table: table, key: key, condition: condition))
    }

    /// Adds a put of `value` under the batch's own commit version as its key
    /// (``commitVersionKey(_:)``: 8 bytes big-endian, so such keys sort in commit order),
    /// optionally conditional.
    ///
    /// The engine fills the key in where it assigns the version, inside the commit, before the
    /// batch is logged: the log, the store and readers in other processes see only the final
    /// key, so a record can be keyed by the commit that wrote it without predicting its version.
    /// A batch with such a put always writes, so it always gets a version of its own.
    ///
    /// ```swift
    /// var batch = WriteBatch()
    /// batch.put("Ann", forKey: "person/1", in: "people")
    /// batch.putAtCommitVersion(Array("inserted person/1".utf8), in: "changes")
    /// let info = try store.commit(batch)   // "changes" now holds commitVersionKey(info.version)
    /// ```
    public mutating func putAtCommitVersion(_ value: consuming [UInt8], in table: String = defaultTable, if condition: Condition? = nil) {
        note(table: table, key: Self.commitVersionKey(0), valueBytes: value.count)
        operations.append(.putAtCommitVersion(table: table, value: value, condition: condition))
    }

    /// The key ``putAtCommitVersion(_:in:if:)`` writes at commit version `version`: its 8 bytes
    /// big-endian. FROZEN: such keys are stored.
    public static func commitVersionKey(_ version: UInt64) -> [UInt8] {
        withUnsafeBytes(of: version.bigEndian) { Array($0) }
    }

    /// Adds an unversioned put: `value` under `key`, stored with record version 0.
    ///
    /// For entries whose presence is all that matters (secondary-index entries): the commit
    /// looks up no stored version for it and it carries no condition. It is as atomic, durable
    /// and visible as any other operation of the batch. A table's keys should be written
    /// either always unversioned or always versioned: an unversioned write leaves nothing a
    /// later versioned put could continue its version from.
    ///
    /// ```swift
    /// batch.putUnversioned([], forKey: Array("Ann/1".utf8), in: "index:Person:name")
    /// ```
    public mutating func putUnversioned(_ value: consuming [UInt8], forKey key: consuming [UInt8], in table: String) {
        note(table: table, key: key, valueBytes: value.count)
        operations.append(.unversionedPut(table: table, key: key, value: value))
    }

    /// Adds an unversioned delete: removes `key` outright, leaving no tombstone, so a table
    /// that churns keeps only its live entries. Deleting an absent key is not an error.
    ///
    /// ```swift
    /// batch.deleteUnversioned(Array("Ann/1".utf8), in: "index:Person:name")
    /// ```
    public mutating func deleteUnversioned(_ key: consuming [UInt8], in table: String) {
        note(table: table, key: key, valueBytes: nil)
        operations.append(.unversionedDelete(table: table, key: key))
    }

    /// Adds a condition on `key` that writes nothing.
    public mutating func require(_ condition: Condition, forKey key: consuming [UInt8], in table: String = defaultTable) {
        note(table: table, key: key, valueBytes: nil)
        operations.append(.check(table: table, key: key, condition: condition))
    }

    /// Counts an operation being added into what `validate` checks.
    @inline(__always)
    private mutating func note(table: String, key: [UInt8], valueBytes: Int?) {
        if table != lastTable {
            lastTable = table
            lastTableBytes = table.utf8.count
            if !Store.isValid(table: table) { hasInvalidName = true }
        }
        if key.isEmpty { hasInvalidName = true }
        longestKey = max(longestKey, key.count)
        // The operation's size in the log payload, counted as if it were logged (a check, or a
        // delete of an absent key, is not).
        payloadBytes += LoggedCommit.size(tableBytes: lastTableBytes, keyBytes: key.count, valueBytes: valueBytes)
    }

    /// Hands the operations over, leaving the batch empty: the commit path moves their keys
    /// and values into what it logs, without copying them.
    package mutating func takeOperations() -> [Operation] {
        var taken: [Operation] = []
        swap(&taken, &operations)
        return taken
    }

    /// Whether two batches have the same operations in the same order.
    public static func == (lhs: WriteBatch, rhs: WriteBatch) -> Bool {
        lhs.operations == rhs.operations
    }

    /// Adds a put of a UTF-8 string value under a UTF-8 string key.
    public mutating func put(_ value: String, forKey key: String, in table: String = defaultTable, if condition: Condition? = nil) {
        put(Array(value.utf8), forKey: Array(key.utf8), in: table, if: condition)
    }

    /// Adds a delete of a UTF-8 string key.
    public mutating func delete(_ key: String, in table: String = defaultTable, if condition: Condition? = nil) {
        delete(Array(key.utf8), in: table, if: condition)
    }

    /// Throws the typed error for the first key or table name LMDB would reject, or when
    /// the batch's log record would be larger than the log accepts.
    func validate(maxKeySize: Int) throws(KVError) {
        // What the operations were counted into as they were added: a valid batch (nearly
        // every one) is accepted without reading them again.
        if hasInvalidName || longestKey > maxKeySize {
            try findFirstInvalidName(maxKeySize: maxKeySize)
        }
        if payloadBytes > LogFormat.maxPayloadSize {
            throw KVError.tooLarge(bytes: payloadBytes, limit: LogFormat.maxPayloadSize)
        }
    }

    /// Throws for the first operation, in order, whose key or table name LMDB would reject.
    private func findFirstInvalidName(maxKeySize: Int) throws(KVError) {
        var lastTable: String? = nil
        for operation in operations {
            let table = operation.table
            if table != lastTable {
                try Store.validate(table: table)
                lastTable = table
            }
            try Store.validate(key: operation.key, maxKeySize: maxKeySize)
        }
        preconditionFailure("a batch counted an invalid name, but none of its operations has one")
    }
}
