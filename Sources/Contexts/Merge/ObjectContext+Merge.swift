import Foundation
import Policies

// Merging another context's did-save (the contract's "Between contexts"): for each object of the
// notification that this context holds, updated → refreshed with merge (the base's values under
// local changes; the ancestor moves to the base's version, so the next save does not conflict
// on it); deleted → forgotten; inserted → nothing until fetched. The base is the store for a
// root context, the parent's view for a child.

extension ObjectContext {
    /// Brings the objects this context holds up to date with another context's save; local
    /// changes stay on top.
    ///
    /// For each object of `notification` that is registered here: an updated one is refreshed
    /// with merge (the saved values for properties this context did not change, its own changes
    /// on top, and its committed version moves to the saved one, so its next save does not
    /// conflict on them); a deleted one is forgotten (using it afterwards stops the process); an
    /// inserted one is left until fetched. Faults are left as faults. A pinned context moves to
    /// the current query generation. Objects-did-change is posted with what changed.
    ///
    /// A root context reads the store; a child context reads its parent, so merge into a child
    /// the did-saves of its parent.
    ///
    /// ```swift
    /// let saved = try await background.perform {
    ///     try background.save()
    ///     return background.lastDidSaveNotification
    /// }
    /// if let saved { try await view.perform { try view.mergeChanges(fromContextDidSave: saved) } }
    /// ```
    ///
    /// - Throws: a storage error or ``ContextError/corruptValue(_:_:)``; nothing is changed then.
    public func mergeChanges(fromContextDidSave notification: ContextDidSaveNotification) throws(ContextError) {
        checkQueue()
        try merge(notification, prefetched: ObjectIDTable())
    }

    /// The merge; `prefetched` holds base records already read (by ID in the notification), so
    /// only the others are read now.
    private func merge(_ notification: ContextDidSaveNotification, prefetched: ObjectIDTable<BaseState?>) throws(ContextError) {
        advanceQueryGeneration()
        // Objects held under a temporary ID that the save made permanent follow it first.
        for (permanent, temporary) in notification.temporaryIDs.sorted(by: { $0.key.uriString < $1.key.uriString })
        where registry[permanent] == nil {
            if let held = registry[temporary], !held.insertedFlag { changeID(of: held, to: permanent) }
        }
        var targets: [StoredObject] = []
        var seen = Set<ObjectIdentifier>()
        for id in notification.updatedObjectIDs + notification.insertedObjectIDs {
            guard let object = registeredObject(for: id), !object.insertedFlag, !object.isFaultStorage,
                  seen.insert(ObjectIdentifier(object)).inserted
            else { continue }
            targets.append(object)
        }
        let unread = targets.filter { prefetched[$0.storedID] == nil }
        var records: [BaseState?] = []
        var read = try baseStates(of: unread.map { ($0.storedID, $0.entity) }, latest: true).makeIterator()
        for object in targets {
            if let record = prefetched[object.storedID] {
                records.append(record)
            } else {
                records.append(read.next() ?? nil)
            }
        }

        var change = ObjectsDidChangeNotification(contextName: name, cause: .merge(notification.contextName))
        for id in notification.deletedObjectIDs {
            guard let object = registeredObject(for: id), !object.insertedFlag else { continue }
            change.deletedObjectIDs.append(object.storedID)
            forget(object, reason: "merging a did-save of '\(notification.contextName)' that deleted it")
        }
        for (object, record) in zip(targets, records) {
            guard case .registered = object.lifecycle else { continue }  // deleted just above
            if record == nil { change.deletedObjectIDs.append(object.storedID) }
            apply(record, to: object, mergeChanges: true,
                  forgetReason: "merging a did-save of '\(notification.contextName)' found it deleted")
            if record != nil { change.refreshedObjectIDs.append(object.storedID) }
        }
        postObjectsDidChange(change)
    }

    /// The same, from the Foundation notification posted as
    /// ``Foundation/Notification/Name/cairnObjectContextDidSave``. A notification of any other
    /// kind stops the process (a programming error).
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: .cairnObjectContextDidSave, object: background, queue: nil) { note in
    ///     let saved = ContextDidSaveNotification(note)!       // Sendable: safe to hand over
    ///     view.perform { try? view.mergeChanges(fromContextDidSave: saved) }
    /// }
    /// ```
    ///
    /// - Throws: as ``mergeChanges(fromContextDidSave:)-(ContextDidSaveNotification)``.
    public func mergeChanges(fromContextDidSave notification: Notification) throws(ContextError) {
        guard let saved = ContextDidSaveNotification(notification) else {
            contextMisuse(
                "ObjectContext '\(name)': mergeChanges(fromContextDidSave:) got a \(notification.name.rawValue) "
                    + "notification; pass one posted as .cairnObjectContextDidSave")
        }
        try mergeChanges(fromContextDidSave: saved)
    }

    /// After a successful save: queues a merge of `note` on every context that merges this one's
    /// saves automatically: its children, and, for a root context, the other root contexts.
    ///
    /// Children get this context's state of the saved objects with the merge, read now, on this
    /// queue: a child's merge then never waits for this queue, which may by then be waiting for
    /// the child (the main queue calling `child.performAndWait` right after a save).
    func deliverAutomaticMerges(_ note: ContextDidSaveNotification) {
        let children = WeakContext.alive(children.withLock { $0 }).filter(\.automaticallyMergesChangesFromParent)
        var ownState = ObjectIDTable<BaseState?>()
        if !children.isEmpty {
            for id in note.updatedObjectIDs + note.insertedObjectIDs {
                guard let entity = core.schema.entity(named: id.entityName) else { continue }
                do {
                    ownState[id] = .some(try visibleState(of: id, entity: entity))
                } catch {
                    continue  // the child reads it itself
                }
            }
        }
        for child in children {
            child.perform { [weak child, ownState] in child?.mergeAutomatically(note, prefetched: ownState) }
        }
        guard parent == nil else { return }
        let roots = WeakContext.alive(core.rootContexts.withLock { $0 })
        for root in roots where root !== self && root.automaticallyMergesChangesFromParent {
            root.perform { [weak root] in root?.mergeAutomatically(note, prefetched: ObjectIDTable()) }
        }
    }

    func mergeAutomatically(_ note: ContextDidSaveNotification, prefetched: ObjectIDTable<BaseState?>) {
        do {
            try merge(note, prefetched: prefetched)
            lastAutomaticMergeErrorStorage = nil
        } catch {
            lastAutomaticMergeErrorStorage = error
        }
    }
}
