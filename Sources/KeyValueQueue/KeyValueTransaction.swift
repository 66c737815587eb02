import KVEngine

// The buffer of one StoreQueue transaction. Reads come from one snapshot taken when the
// transaction began, with the transaction's own writes laid over them (read your writes).
// Writes are buffered in order; savepoints are marks in that list, and rolling back to one
// truncates the list and rebuilds the overlay from what is left. Commit is one engine batch:
//
//   require <key> .version(v) / .absent     for every key read from the snapshot (v as read)
//   put / delete <key> [if condition]       every buffered write, in order
//
// so the whole transaction is written atomically, and only if nothing it read was changed by a
// writer outside the queue meanwhile (writers inside the queue are serialised with it anyway).
// Scans are not validated that way (no phantom protection). When a read check fails, the
// queue's merge policy may resolve the conflicting keys (KeyValueTransaction+Conflicts.swift);
// that is why each read keeps its value (the ancestor), not only its version.

/// Buffered writes, reads and savepoints of a StoreQueue transaction.
struct KeyValueTransaction {
    struct Write {
        let table: String
        let key: [UInt8]
        /// nil: a delete.
        let value: [UInt8]?
        let condition: Condition?
        /// The record version the key has after this write, inside the transaction (0: absent).
        let versionAfter: UInt64
    }

    /// The state of a key inside the transaction: value (nil: absent) and record version.
    struct Visible {
        var value: [UInt8]?
        var version: UInt64
    }

    let snapshot: Snapshot
    private(set) var writes: [Write] = []
    /// The latest buffered state of each written key.
    private var overlay: [TableKey: Visible] = [:]
    /// Keys read from the snapshot, with the value and version read (version 0: absent).
    private(set) var reads: [TableKey: Visible] = [:]

    init(snapshot: Snapshot) {
        self.snapshot = snapshot
    }

    /// The key's state as the transaction sees it; a snapshot read is remembered for validation.
    mutating func visible(_ key: [UInt8], in table: String) throws(KVError) -> Visible {
        let stored = TableKey(table: table, key: key)
        if let buffered = overlay[stored] { return buffered }
        let record: Record?
        do {
            record = try snapshot.get(key, in: table)
        } catch {
            throw KeyValueDatabase.kvError(error)
        }
        if reads[stored] == nil { reads[stored] = Visible(value: record?.value, version: record?.version ?? 0) }
        return Visible(value: record?.value, version: record?.version ?? 0)
    }

    /// Buffers a put or delete after checking its condition against the transaction's state.
    mutating func write(_ value: [UInt8]?, forKey key: [UInt8], in table: String, if condition: Condition?) throws(KVError) {
        let current = try visible(key, in: table)
        if let condition {
            let holds: Bool
            switch condition {
            case .absent: holds = current.value == nil
            case .version(let version): holds = current.value != nil && current.version == version
            }
            guard holds else {
                throw KVError.conditionFailed([FailedCondition(
                    table: table, key: key, expected: condition, currentVersion: current.value == nil ? 0 : current.version)])
            }
        }
        // The engine's rule: a put makes the version old + 1 (1 for an absent key); a delete
        // leaves the key absent.
        let versionAfter = value == nil ? 0 : (current.value == nil ? 1 : current.version + 1)
        writes.append(Write(table: table, key: key, value: value, condition: condition, versionAfter: versionAfter))
        overlay[TableKey(table: table, key: key)] = Visible(value: value, version: versionAfter)
    }

    /// The buffered states of `table`'s keys within the bounds (for scans).
    func bufferedKeys(in table: String, accepting keyMatches: ([UInt8]) -> Bool) -> [(key: [UInt8], state: Visible)] {
        overlay.compactMap { stored, state in
            stored.table == table && keyMatches(stored.key) ? (stored.key, state) : nil
        }
    }

    /// A savepoint: the position to roll back to.
    var mark: Int { writes.count }

    /// Drops every write made after `mark`.
    mutating func rollback(to mark: Int) {
        guard mark < writes.count else { return }
        writes.removeSubrange(mark...)
        overlay.removeAll(keepingCapacity: true)
        for write in writes {
            overlay[TableKey(table: write.table, key: write.key)] = Visible(value: write.value, version: write.versionAfter)
        }
    }

    /// The buffered state of a key the transaction wrote; nil for a key it did not write.
    func buffered(_ key: TableKey) -> Visible? {
        overlay[key]
    }

    /// Whether a buffered write of `key` carries a condition of the caller's own.
    func hasConditionedWrite(_ key: TableKey) -> Bool {
        writes.contains { $0.condition != nil && $0.table == key.table && $0.key == key.key }
    }

    /// The commit: read checks, then the writes; nil when there is nothing to write.
    ///
    /// `resolved` holds the keys a merge policy decided: each is checked against the version
    /// the policy saw instead of the one read, and its buffered writes give way to the policy's
    /// one final write (such keys have no conditioned writes, so their order does not matter).
    func batch(resolving resolved: [TableKey: ResolvedKey] = [:]) -> WriteBatch? {
        // A policy may leave nothing to write (every written key resolved to theirs): then
        // there is nothing for the read checks to protect either.
        let writesLeft = writes.contains { resolved[TableKey(table: $0.table, key: $0.key)] == nil }
            || resolved.values.contains { if case .none = $0.write { false } else { true } }
        guard writesLeft else { return nil }
        var batch = WriteBatch()
        let checks = reads.sorted { left, right in
            left.key.table != right.key.table
                ? left.key.table < right.key.table : left.key.key.lexicographicallyPrecedes(right.key.key)
        }
        for (stored, read) in checks {
            let version = resolved[stored]?.requiredVersion ?? read.version
            batch.require(version == 0 ? .absent : .version(version), forKey: stored.key, in: stored.table)
        }
        for write in writes where resolved[TableKey(table: write.table, key: write.key)] == nil {
            if let value = write.value {
                batch.put(value, forKey: write.key, in: write.table, if: write.condition)
            } else {
                batch.delete(write.key, in: write.table, if: write.condition)
            }
        }
        for (stored, decided) in resolved.sorted(by: { $0.key.key.lexicographicallyPrecedes($1.key.key) }) {
            switch decided.write {
            case .none: break
            case .put(let value): batch.put(value, forKey: stored.key, in: stored.table)
            case .delete: batch.delete(stored.key, in: stored.table)
            }
        }
        return batch
    }
}

/// A table and key: what the transaction buffers and remembers reads by.
struct TableKey: Hashable {
    let table: String
    let key: [UInt8]
}
