// Index maintenance: a save moves each index entry of an object from the values its commit is
// conditioned on (the ancestor, the record at `ancestorVersion`) to the values it writes, in
// the same batch, after every record operation (so operation i is still entry i's record),
// unversioned: an index entry never makes a save conflict, the commit reads no version for it,
// and a delete leaves no tombstone. Conflict rounds change the entries' values and ancestors,
// and each attempt's batch is made again from them, so the index follows exactly the records
// each commit writes.

extension SaveEntry {
    /// The index operations a save's batch has room for per entry: one moved index entry (a
    /// delete and a put), the usual save's. `collectEntries` and `performSave` size by it.
    static let reservedIndexOperations = 2

    /// Appends the index deletes and puts that take the entry's indexes from its ancestor to
    /// the values it writes; nothing for an index whose key does not change.
    ///
    /// `mutating` for the reason `append(to:)` gives. The ancestor is read slot by slot
    /// (`ancestorValue(at:)`): making its values copied each changed object's buffer.
    /// `recent`: the keys the save's last delete got, which a delete of the same values copies.
    mutating func appendIndexOperations(to batch: inout StorageBatch, recent: inout RecentIndexKeys) {
        guard let primaryKey = id.primaryKey else { return }
        let hasOld: Bool, hasNew: Bool
        switch step {
        case .insert:
            (hasOld, hasNew) = (false, true)
        case .update:
            // Version 0: a re-insert of a record the store deleted, whose entries went with it.
            (hasOld, hasNew) = (ancestorVersion != 0, true)
        case .delete:
            (hasOld, hasNew) = (true, false)
        case .check, .takeStore, .dropDeleted, .discardInsert:
            return
        }
        // The indexes read in place from the layout (`withLayout`), which holds them, not bound
        // to a list or a reference of their own: the entity's description, its layout, the list
        // and each index were each retained and released per entry.
        object.withLayout { layout in
            for position in layout.indexes.indices {
                Unmanaged.passUnretained(layout.indexes[position])._withUnsafeGuaranteedRef { index in
                    appendOperations(of: index, at: position, hasOld: hasOld, hasNew: hasNew,
                                     primaryKey: primaryKey, to: &batch, recent: &recent)
                }
            }
        }
    }

    /// `appendIndexOperations`' part for `index`, at `position` in its entity's list.
    private func appendOperations(
        of index: IndexLayout, at position: Int, hasOld: Bool, hasNew: Bool, primaryKey: UInt64,
        to batch: inout StorageBatch, recent: inout RecentIndexKeys
    ) {
        // Values that compare equal encode to the same key (the encoding is a function of
        // the value, and equal values encode alike: NFC strings, 0.0 and -0.0, NaNs), so an
        // index none of whose attributes changed keeps its entry, without making either key.
        if hasOld, hasNew, index.positions.allSatisfy({ ancestorValue(at: $0) == values[$0] }) { return }
        if !hasNew, index.positions.count == 1 {
            // Compared with the last delete's value without reading this one (a record
            // not decoded yet is compared in place).
            let slot = index.positions[0]
            let oldKey = recent.lastKey(of: index, at: position, primaryKey: primaryKey) { ancestorValue(at: slot, equals: $0) }
                ?? recent.entryKey(index: index, at: position, primaryKey: primaryKey, value: ancestorValue(at: slot))
            batch.deleteUnversioned(oldKey, in: index.tableName)
            return
        }
        let oldKey = hasOld ? IndexKeyEncoding.entryKey(index: index, primaryKey: primaryKey) { ancestorValue(at: $0) } : nil
        let newKey = hasNew ? IndexKeyEncoding.entryKey(index: index, primaryKey: primaryKey) { values[$0] } : nil
        if oldKey == newKey { return }
        if let oldKey { batch.deleteUnversioned(oldKey, in: index.tableName) }
        if let newKey { batch.putUnversioned([], forKey: newKey, in: index.tableName) }
    }
}
