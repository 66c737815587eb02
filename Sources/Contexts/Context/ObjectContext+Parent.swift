import Policies

// Parent and child contexts (the contract's "Between contexts"). A child reads its parent's view
// (ObjectContext+Reading.swift) and its save() pushes its changes into the parent's objects: the
// child's changed properties, its inserts and its deletes, with no version check and no merge
// policy, all or nothing. The parent's objects become dirty there; only the root's save reaches
// the store. Inserted objects keep their temporary IDs until the root saves them.

/// One object's change as a child hands it to its parent. Sendable: it crosses queues.
struct ChildChange: Sendable {
    enum Kind: Sendable {
        /// A new object with these values (the primary key was chosen when `chosenKey`).
        case insert(ObjectValues, chosenKey: Bool)
        /// The properties named by `changed` took their values in `values` (`.null`: cleared).
        case update(changed: ObjectValues.Differences, values: ObjectValues)
        case delete
        /// Unchanged, marked with detectConflicts: the mark moves up.
        case check
    }

    let id: ObjectID
    let entityName: String
    let kind: Kind
    /// What the child read (from this parent's view): becomes the parent's ancestor when the
    /// parent does not hold the object, so the root's save checks the version the child read.
    let ancestorValues: ObjectValues
    let ancestorVersion: UInt64
    /// A to-many of the object changed members in the child: the parent's object is updated too.
    var membershipChanged = false
}

extension ObjectContext {
    /// A new context whose parent is this one: it reads this context's state (unsaved changes
    /// included) and its `save()` pushes its changes into this context instead of the store.
    ///
    /// Nest them to any depth. A child of the main-queue context on a private queue is the usual
    /// set-up for an editor that can be saved or thrown away. Children cannot be pinned to a
    /// query generation (they read through their parent). May be called from any thread.
    ///
    /// ```swift
    /// let editor = objects.viewContext.newChildContext(name: "editor")
    /// try await editor.perform {
    ///     let person = try editor.existingObject(with: id)
    ///     person["age"] = .int(31)
    ///     try editor.save()                 // into viewContext: nothing written yet
    /// }
    /// try await objects.viewContext.perform { try objects.viewContext.save() }   // now in the store
    /// ```
    public func newChildContext(
        name: String? = nil, concurrencyType: ConcurrencyType = .privateQueue, mergePolicy: any MergePolicy = .error
    ) -> ObjectContext {
        let child = ObjectContext(
            name: name ?? "\(self.name).child-\(ObjectStore.nextContextNumber())", concurrencyType: concurrencyType,
            core: core, parent: self)
        child.mergePolicy = mergePolicy
        return child
    }

    /// The save of a child: the change set goes to the parent, applied on the parent's queue.
    func saveToParent(_ report: inout SaveReport) throws {
        guard let parent else { preconditionFailure("saveToParent on a root context") }
        let saveSet = objectsInOrder.filter { object in
            !object.isFaultStorage
                && (object.insertedFlag || object.deletedFlag || object.conflictCheckMark || isUpdated(object))
        }
        for object in saveSet where !object.deletedFlag && (object.insertedFlag || isUpdated(object)) {
            try object.entity.validate(object.current, of: object.storedID)
        }
        let changes = saveSet.map { object -> ChildChange in
            let kind: ChildChange.Kind
            if object.insertedFlag {
                kind = .insert(object.current, chosenKey: object.hasChosenKey)
            } else if object.deletedFlag {
                kind = .delete
            } else if isUpdated(object) {
                kind = .update(changed: object.current.differences(from: object.ancestorValues), values: object.current)
            } else {
                kind = .check
            }
            return ChildChange(
                id: object.storedID, entityName: object.entity.name, kind: kind,
                ancestorValues: object.ancestorValues, ancestorVersion: object.ancestorVersion,
                membershipChanged: object.membershipChangedFlag)
        }
        let childName = name
        let linkChanges = pendingLinkChanges()
        try parent.synchronously { () throws(ContextError) in
            try parent.applyChildChanges(changes, from: childName)
            parent.applyChildLinkChanges(linkChanges)
        }
        links.removeAllChanges()

        // The parent holds them now: they are this child's new ancestors.
        for object in saveSet {
            object.conflictCheckMark = false
            if object.deletedFlag {
                report.deletedObjectIDs.append(object.storedID)
                forget(object, reason: "its deletion was saved")
                continue
            }
            if object.insertedFlag {
                report.insertedObjectIDs.append(object.storedID)
            } else if isUpdated(object) {
                report.updatedObjectIDs.append(object.storedID)
            }
            object.insertedFlag = false
            object.membershipChangedFlag = false
            object.ancestorValues = object.current
        }
        report.savedToParent = true
    }

    /// Applies a child's change set to this context's objects, on this context's queue: first
    /// every change is checked (so one that cannot apply fails the whole set), then all apply.
    ///
    /// An object the parent does not hold (or holds as a fault) is registered with what the child
    /// read as its ancestor: the child read it through this context, so that is the version this
    /// context's own save (or its root's) must find in the store, or meet a conflict.
    func applyChildChanges(_ changes: [ChildChange], from childName: String) throws(ContextError) {
        checkQueue()
        for change in changes {
            let held = registeredObject(for: change.id)
            switch change.kind {
            case .insert(_, let chosenKey):
                // Only a chosen key can meet an object here: a pending delete is brought back.
                if let held, !(chosenKey && held.deletedFlag) { throw ContextError.primaryKeyInUse(change.id) }
            case .update, .check:
                if held == nil && change.id.isTemporaryID { throw ContextError.unknownTemporaryID(change.id) }
            case .delete:
                break
            }
        }

        var note = ObjectsDidChangeNotification(contextName: name, cause: .childSave(childName))
        for change in changes {
            var object = registeredObject(for: change.id)
            if case .insert(let values, let chosenKey) = change.kind {
                if let object {
                    object.current = values
                    object.deletedFlag = false
                    note.updatedObjectIDs.append(object.storedID)
                } else {
                    let inserted = StoredObject(origin: origin(for: entityDescription(named: change.entityName).layout), id: change.id)
                    inserted.current = values
                    inserted.insertedFlag = true
                    inserted.hasChosenKey = chosenKey
                    register(inserted)
                    note.insertedObjectIDs.append(inserted.storedID)
                }
                continue
            }
            if object == nil || object!.isFaultStorage {
                if object == nil && change.id.isTemporaryID { continue }  // a delete of an insert we no longer hold
                let ancestor = BaseState(id: change.id, values: change.ancestorValues, version: change.ancestorVersion)
                if let fault = object {
                    load(ancestor, into: fault)
                } else {
                    object = registerLoaded(ancestor, entity: entityDescription(named: change.entityName))
                }
            }
            guard let object else { continue }
            switch change.kind {
            case .insert:
                break
            case let .update(changed, values):
                object.current.take(changed, from: values)
                if change.membershipChanged && !object.insertedFlag { object.membershipChangedFlag = true }
                note.updatedObjectIDs.append(object.storedID)
            case .delete:
                note.deletedObjectIDs.append(object.storedID)
                if object.insertedFlag {
                    forget(object, reason: "its insertion was deleted by child context '\(childName)' before being saved")
                } else {
                    object.deletedFlag = true
                }
            case .check:
                object.conflictCheckMark = true
            }
        }
        postObjectsDidChange(note)
    }
}
