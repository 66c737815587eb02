/// Puts, deletes and checks across tables that a backend commits all-or-nothing, and only if
/// every condition holds (``ObjectStorage/commit(_:durability:)``).
///
/// Operations apply in order; a condition is checked against the state the operations before
/// it left.
package struct StorageBatch: Sendable {
    /// What an operation requires of its record.
    package enum Condition: Sendable, Hashable {
        /// The record exists at exactly this record version.
        case version(UInt64)
        /// The record does not exist.
        case absent
    }

    /// One operation.
    package enum Operation: Sendable {
        /// Write `value` under `key`; the record's version becomes its old version + 1.
        case put(table: String, key: [UInt8], value: [UInt8], condition: Condition?)
        /// Remove `key` (not an error when absent, unless conditioned).
        case delete(table: String, key: [UInt8], condition: Condition?)
        /// Write nothing, but require `condition` of `key`.
        case check(table: String, key: [UInt8], condition: Condition)
        /// Write `value` under `key` with no record version and no condition (index entries).
        case unversionedPut(table: String, key: [UInt8], value: [UInt8])
        /// Remove `key` outright, leaving no tombstone (index entries).
        case unversionedDelete(table: String, key: [UInt8])
    }

    /// The operations, in order.
    package private(set) var operations: [Operation] = []

    package init() {}

    package var isEmpty: Bool { operations.isEmpty }

    package var count: Int { operations.count }

    package mutating func reserveCapacity(_ count: Int) {
        operations.reserveCapacity(count)
    }

    package mutating func put(_ value: consuming [UInt8], forKey key: consuming [UInt8], in table: String, if condition: Condition?) {
        operations.append(.put(table: table, key: key, value: value, condition: condition))
    }

    package mutating func delete(_ key: consuming [UInt8], in table: String, if condition: Condition?) {
        operations.append(.delete(table: table, key: key, condition: condition))
    }

    /// An entry whose presence is all that matters: the commit reads no version for it, and a
    /// delete leaves nothing behind, so a table that churns does not grow.
    package mutating func putUnversioned(_ value: consuming [UInt8], forKey key: consuming [UInt8], in table: String) {
        operations.append(.unversionedPut(table: table, key: key, value: value))
    }

    package mutating func deleteUnversioned(_ key: consuming [UInt8], in table: String) {
        operations.append(.unversionedDelete(table: table, key: key))
    }

    package mutating func require(_ condition: Condition, forKey key: consuming [UInt8], in table: String) {
        operations.append(.check(table: table, key: key, condition: condition))
    }

    /// Hands the operations over, leaving the batch empty (a backend consumes them without
    /// copying keys and values).
    package mutating func takeOperations() -> [Operation] {
        var taken: [Operation] = []
        swap(&taken, &operations)
        return taken
    }
}
