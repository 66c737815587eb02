import KVEngine
import Policies

// Refresh, rollback and reset: the ways to let go of local state.

extension ObjectContext {
    /// Reloads `object` from the store.
    ///
    /// - `mergeChanges: false`: local changes (and a pending delete) are dropped; the object
    ///   holds the store's values.
    /// - `mergeChanges: true`: the store's values, with the object's local changes laid on top;
    ///   a pending delete stays pending.
    ///
    /// Either way the object's committed values and version become the store's, so the next save
    /// does not conflict on it unless the store moves again. An object deleted in the store is
    /// forgotten by the context. Objects inserted and not yet saved, and faults, are left alone.
    ///
    /// ```swift
    /// catch let error as MergeError {
    ///     for person in conflicting { try context.refresh(person, mergeChanges: true) }
    ///     try context.save()
    /// }
    /// ```
    ///
    /// - Throws: a storage error, or ``ContextError/corruptValue(_:_:)``.
    public func refresh(_ object: StoredObject, mergeChanges: Bool) throws(ContextError) {
        checkQueue()
        checkOwnership(object, "refresh(_:mergeChanges:)")
        let snapshot = try readSnapshot()
        defer { snapshot.close() }
        try refresh(object, mergeChanges: mergeChanges, from: snapshot)
    }

    /// Refreshes every registered object with `mergeChanges: true`: store values under local
    /// changes, from one snapshot.
    ///
    /// ```swift
    /// try context.refreshAllObjects()
    /// ```
    ///
    /// - Throws: a storage error, or ``ContextError/corruptValue(_:_:)``.
    public func refreshAllObjects() throws(ContextError) {
        checkQueue()
        let snapshot = try readSnapshot()
        defer { snapshot.close() }
        for object in objectsInOrder {
            try refresh(object, mergeChanges: true, from: snapshot)
        }
    }

    private func refresh(_ object: StoredObject, mergeChanges: Bool, from snapshot: Snapshot) throws(ContextError) {
        guard !object.insertedFlag, !object.isFaultStorage else { return }
        guard let theirs = try core.committedRecord(of: object.storedID, in: snapshot) else {
            forget(object, reason: "refresh found it deleted in the store")
            return
        }
        if mergeChanges {
            var merged = theirs.values
            for property in object.current.differingProperties(from: object.ancestorValues) {
                let value = object.current.value(of: property)
                merged[property] = value == .null ? nil : value
            }
            object.current = merged
        } else {
            object.current = theirs.values
            object.deletedFlag = false
            object.conflictCheckMark = false
        }
        object.ancestorValues = theirs.values
        object.ancestorVersion = theirs.version
    }

    /// Discards every change since the last save, without reading the store: inserted objects
    /// are forgotten, deleted ones come back, updated ones return to their committed values.
    ///
    /// ```swift
    /// person["age"] = .int(99)
    /// context.rollback()
    /// person["age"]   // back to the saved value
    /// ```
    public func rollback() {
        checkQueue()
        for object in objectsInOrder {
            if object.insertedFlag {
                forget(object, reason: "rollback() discarded its insertion")
                continue
            }
            object.deletedFlag = false
            object.conflictCheckMark = false
            if !object.isFaultStorage { object.current = object.ancestorValues }
        }
    }

    /// Forgets every object (changes are lost). Using an object of this context afterwards
    /// stops the process; look it up again by ID.
    ///
    /// ```swift
    /// let id = person.objectID
    /// context.reset()
    /// let again = try context.existingObject(with: id)
    /// ```
    public func reset() {
        checkQueue()
        for object in objectsInOrder { forget(object, reason: "its context '\(name)' was reset()") }
        registry.removeAll()
        temporaryAliases.removeAll()
        lastSaveReportStorage = nil
    }
}
