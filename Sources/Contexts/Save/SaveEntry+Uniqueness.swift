// Uniqueness entries: a save moves each constraint entry of an object from the values its
// commit is conditioned on to the values it writes, like index entries, but a put is
// conditioned on the key being absent. Every delete of a save comes before every put (so two
// objects swapping values commit), and the record conditions of the same batch make "absent"
// exact: an entry we own for the values we write would mean our key does not change, and then
// there is no put.

extension UniquenessConstraintLayout {
    /// The constraint entry's key for `values`: the values' index encoding, uncut; nil when one
    /// of them is null (not constrained).
    func entryKey(_ values: ObjectValues) -> [UInt8]? {
        var key: [UInt8] = []
        for position in positions {
            let value = values[position]
            if case .null = value { return nil }
            IndexKeyEncoding.append(value, to: &key, cap: .max)
        }
        return key
    }
}

extension SaveEntry {
    /// One constraint entry a commit moves: the key it deletes, the key it puts, or both.
    struct UniquenessMove {
        let constraint: UniquenessConstraintLayout
        let constraintIndex: Int
        let oldKey: [UInt8]?
        let newKey: [UInt8]?
    }

    /// The constraint entries the entry's commit deletes and puts (the moves of its records
    /// merged away included); none for a key that does not change.
    func uniquenessMoves() -> [UniquenessMove] {
        let constraints = object.entity.layout.uniquenessConstraints
        guard !constraints.isEmpty else { return [] }
        let old: ObjectValues?, new: ObjectValues?
        switch step {
        case .insert: (old, new) = (nil, values)
        case .update: (old, new) = (ancestorVersion == 0 ? nil : ancestorValues, values)
        case .delete: (old, new) = (ancestorValues, nil)
        case .check, .takeStore, .dropDeleted, .discardInsert: (old, new) = (nil, nil)
        }
        var moves: [UniquenessMove] = []
        for (position, constraint) in constraints.enumerated() {
            let oldKey = old.flatMap(constraint.entryKey), newKey = new.flatMap(constraint.entryKey)
            if oldKey != newKey {
                moves.append(UniquenessMove(constraint: constraint, constraintIndex: position, oldKey: oldKey, newKey: newKey))
            }
            for record in retiredRecords {
                if let key = constraint.entryKey(record.values) {
                    moves.append(UniquenessMove(constraint: constraint, constraintIndex: position, oldKey: key, newKey: nil))
                }
            }
        }
        return moves
    }

    /// Appends the deletes and checks of the records the entry merged away, and their index
    /// entries' deletes.
    func appendRetiredRecordOperations(to batch: inout StorageBatch) {
        for record in retiredRecords {
            guard let primaryKey = record.id.primaryKey else { continue }
            batch.delete(StorageMapping.key(for: primaryKey), in: table, if: .version(record.version))
            for index in object.entity.layout.indexes {
                batch.deleteUnversioned(IndexKeyEncoding.entryKey(record.values, index: index, primaryKey: primaryKey), in: index.tableName)
            }
        }
    }
}
