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
    /// A root context reads what every one of its reads reads: the latest commit, or its pinned
    /// query generation when it has one (the pin does not move); a child context reads its
    /// parent's state, unsaved changes included.
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
        guard !object.insertedFlag, !object.isFaultStorage else { return }
        let record = try baseState(of: object.storedID, entity: object.entity)
        apply(record, to: object, mergeChanges: mergeChanges, forgetReason: "refresh found it deleted in the store")
    }

    /// Refreshes every registered object with `mergeChanges: true`: store values under local
    /// changes, from one read (of the pinned query generation, when the context has one).
    ///
    /// ```swift
    /// try context.refreshAllObjects()
    /// ```
    ///
    /// - Throws: a storage error, or ``ContextError/corruptValue(_:_:)``.
    public func refreshAllObjects() throws(ContextError) {
        checkQueue()
        let targets = objectsInOrder.filter { !$0.insertedFlag && !$0.isFaultStorage }
        let records = try baseStates(of: targets.map { ($0.storedID, $0.entity) })
        for (object, record) in zip(targets, records) {
            apply(record, to: object, mergeChanges: true, forgetReason: "refresh found it deleted in the store")
        }
    }

    /// Moves `object` onto the base's `record` (nil: gone, so the object is forgotten): with
    /// `mergeChanges`, its local changes (and a pending delete) stay on top.
    func apply(_ record: BaseState?, to object: StoredObject, mergeChanges: Bool, forgetReason: String) {
        guard let record else {
            forget(object, reason: forgetReason)
            return
        }
        if record.id != object.storedID && registry[record.id] == nil { changeID(of: object, to: record.id) }
        if core.hasManyToMany { refreshLinks(of: object, mergeChanges: mergeChanges) }
        if mergeChanges {
            var merged = record.values
            merged.take(object.current.differences(from: object.ancestorValues), from: object.current)
            object.current = merged
        } else {
            object.current = record.values
            object.deletedFlag = false
            object.conflictCheckMark = false
            object.membershipChangedFlag = false
        }
        object.ancestorValues = record.values
        object.ancestorVersion = record.version
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
        if !links.hasNoChanges { graphEpoch &+= 1 }
        links.removeAllChanges()
        cascadeReads.removeAll()
        for object in objectsInOrder {
            if object.insertedFlag {
                forget(object, reason: "rollback() discarded its insertion")
                continue
            }
            object.deletedFlag = false
            object.conflictCheckMark = false
            object.membershipChangedFlag = false
            if !object.isFaultStorage { object.current = object.ancestorValues }
        }
    }

    /// Forgets every object (changes are lost). Using an object of this context afterwards
    /// stops the process; look it up again by ID. A context pinned to a query generation moves
    /// on to the current one at its next read.
    ///
    /// ```swift
    /// let id = person.objectID
    /// context.reset()
    /// let again = try context.existingObject(with: id)
    /// ```
    public func reset() {
        checkQueue()
        forgetAll(reason: resetReason)
        temporaryAliases.removeAll()
        temporaryIDOfPermanent.removeAll()
        lastSaveReportStorage = nil
        advanceQueryGeneration()
    }
}
