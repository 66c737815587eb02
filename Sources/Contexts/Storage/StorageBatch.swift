import KVEngine

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

    /// The operations, in order, kept as the local engine's batch: the engine backend (every
    /// store's but etcd's) commits it as it is (`takeEngineBatch`), and another backend takes
    /// them back as `Operation`s (`takeOperations`). Converting a save's batch at its commit
    /// moved every operation once more (swapped out of one array, added to the other, its
    /// placeholder destroyed): about 250 instructions an operation, 4% of the instructions of a
    /// `relationship-cascade` round.
    private var engineBatch = WriteBatch()

    package init() {}

    package var isEmpty: Bool { engineBatch.isEmpty }

    package var count: Int { engineBatch.operations.count }

    /// Makes room for `count` operations, and one more: the record a backend adds to a commit
    /// keyed by its version (``ObjectStorage/commit(_:durability:keyedByVersion:in:)``), which
    /// would otherwise regrow a full batch.
    package mutating func reserveCapacity(_ count: Int) {
        engineBatch.reserveCapacity(count + 1)
    }

    package mutating func put(_ value: consuming [UInt8], forKey key: consuming [UInt8], in table: String, if condition: Condition?) {
        engineBatch.put(value, forKey: key, in: table, if: Self.engineCondition(condition))
    }

    package mutating func delete(_ key: consuming [UInt8], in table: String, if condition: Condition?) {
        engineBatch.delete(key, in: table, if: Self.engineCondition(condition))
    }

    /// An entry whose presence is all that matters: the commit reads no version for it, and a
    /// delete leaves nothing behind, so a table that churns does not grow.
    package mutating func putUnversioned(_ value: consuming [UInt8], forKey key: consuming [UInt8], in table: String) {
        engineBatch.putUnversioned(value, forKey: key, in: table)
    }

    package mutating func deleteUnversioned(_ key: consuming [UInt8], in table: String) {
        engineBatch.deleteUnversioned(key, in: table)
    }

    package mutating func require(_ condition: Condition, forKey key: consuming [UInt8], in table: String) {
        engineBatch.require(Self.engineCondition(condition)!, forKey: key, in: table)
    }

    /// Hands the operations over as the engine's batch, leaving this one empty (the engine
    /// moves their keys and values into its log without copying them).
    package mutating func takeEngineBatch() -> WriteBatch {
        var taken = WriteBatch()
        swap(&taken, &engineBatch)
        return taken
    }

    /// Hands the operations over, leaving the batch empty (a backend consumes them without
    /// copying keys and values).
    package mutating func takeOperations() -> [Operation] {
        var taken = takeEngineBatch()
        var engineOperations = taken.takeOperations()
        var operations: [Operation] = []
        operations.reserveCapacity(engineOperations.count)
        let placeholder = WriteBatch.Operation.check(table: "", key: [], condition: .absent)
        for index in engineOperations.indices {
            var operation = placeholder
            swap(&operation, &engineOperations[index])
            switch consume operation {
            case let .put(table, key, value, condition):
                operations.append(.put(table: table, key: key, value: value, condition: Self.storageCondition(condition)))
            case let .delete(table, key, condition):
                operations.append(.delete(table: table, key: key, condition: Self.storageCondition(condition)))
            case let .check(table, key, condition):
                operations.append(.check(table: table, key: key, condition: Self.storageCondition(condition)!))
            case let .unversionedPut(table, key, value):
                operations.append(.unversionedPut(table: table, key: key, value: value))
            case let .unversionedDelete(table, key):
                operations.append(.unversionedDelete(table: table, key: key))
            case .putAtCommitVersion:
                preconditionFailure("StorageBatch: no operation of a storage batch is keyed by its commit's version")
            }
        }
        return operations
    }

    @inline(__always)
    private static func engineCondition(_ condition: Condition?) -> KVEngine.Condition? {
        switch condition {
        case .version(let version): return .version(version)
        case .absent: return .absent
        case nil: return nil
        }
    }

    private static func storageCondition(_ condition: KVEngine.Condition?) -> Condition? {
        switch condition {
        case .version(let version): return .version(version)
        case .absent: return .absent
        case nil: return nil
        }
    }
}
