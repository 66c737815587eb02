import Foundation

// Posting a context's notifications: through NotificationCenter.default (on the context's
// queue, object = the context) and to the AsyncSequence subscribers, in that order, always both.

extension ObjectContext {
    /// The context's did-saves as an AsyncSequence, from the moment of this call: one element
    /// per successful `save()` with changes. The stream ends when the context is deallocated.
    /// May be read from any thread; each read makes a new stream.
    ///
    /// ```swift
    /// let saves = background.didSaveNotifications
    /// Task {
    ///     for await saved in saves {
    ///         try await view.perform { try view.mergeChanges(fromContextDidSave: saved) }
    ///     }
    /// }
    /// ```
    public var didSaveNotifications: AsyncStream<ContextDidSaveNotification> {
        eventStreams.stream { event in
            if case .didSave(let note) = event { return note }
            return nil
        }
    }

    /// The context's will-saves as an AsyncSequence (delivered asynchronously, so after the fact:
    /// to act before a save, observe ``Foundation/Notification/Name/cairnObjectContextWillSave``).
    ///
    /// ```swift
    /// for await will in context.willSaveNotifications { log("saving \(will.updatedObjectIDs.count)") }
    /// ```
    public var willSaveNotifications: AsyncStream<ContextWillSaveNotification> {
        eventStreams.stream { event in
            if case .willSave(let note) = event { return note }
            return nil
        }
    }

    /// The context's objects-did-change notifications as an AsyncSequence.
    ///
    /// ```swift
    /// for await change in view.objectsDidChangeNotifications { reload(change.refreshedObjectIDs) }
    /// ```
    public var objectsDidChangeNotifications: AsyncStream<ObjectsDidChangeNotification> {
        eventStreams.stream { event in
            if case .objectsDidChange(let note) = event { return note }
            return nil
        }
    }

    /// The did-save of this context's most recent successful save with changes; nil before one.
    ///
    /// ```swift
    /// try background.save()
    /// let saved = background.lastDidSaveNotification!
    /// ```
    public var lastDidSaveNotification: ContextDidSaveNotification? {
        checkQueue()
        return lastDidSaveStorage
    }

    /// The error of the most recent automatic merge (``automaticallyMergesChangesFromParent``),
    /// nil when it succeeded. A failed merge leaves the objects as they were.
    ///
    /// ```swift
    /// if let error = view.lastAutomaticMergeError { print(error) }
    /// ```
    public var lastAutomaticMergeError: ContextError? {
        checkQueue()
        return lastAutomaticMergeErrorStorage
    }

    // MARK: - Posting (on the queue)

    /// Posts the will-save; returns its ID lists and the sets made of them, which the
    /// did-save reuses where its lists are the same (see `postDidSave`).
    func postWillSave() -> PostedIDSets {
        var inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = []
        let objects = objectsInOrder
        // Room for the commonest save (changes to fetched objects) without regrowing; the list
        // is cut to size below when most of the room went unused, since observers may keep it.
        updated.reserveCapacity(objects.count)
        for object in objects where !object.isFaultStorage {
            if object.insertedFlag {
                inserted.append(object.storedID)
            } else if object.deletedFlag {
                deleted.append(object.storedID)
            } else if isUpdated(object) {
                updated.append(object.storedID)
            }
        }
        if updated.count < updated.capacity / 2 {
            var exact: [ObjectID] = []
            exact.reserveCapacity(updated.count)
            exact.append(contentsOf: updated)
            updated = exact
        }
        let note = ContextWillSaveNotification(
            contextName: name, insertedObjectIDs: inserted, updatedObjectIDs: updated, deletedObjectIDs: deleted)
        let sets = PostedIDSets(inserted: inserted, updated: updated, deleted: deleted)
        NotificationCenter.default.post(
            name: .cairnObjectContextWillSave, object: self,
            userInfo: [
                ContextNotificationKey.insertedObjectIDs: sets.inserted.set,
                ContextNotificationKey.updatedObjectIDs: sets.updated.set,
                ContextNotificationKey.deletedObjectIDs: sets.deleted.set,
                ContextNotificationKey.payload: note,
            ])
        eventStreams.send(.willSave(note))
        return sets
    }

    /// Posts the did-save. `willSave` holds the sets the will-save posted: a set is hashed
    /// again only when the did-save's list differs from the will-save's (inserted objects
    /// changed their IDs, a merge policy changed the outcome). A save of updates builds each
    /// set once.
    func postDidSave(_ note: ContextDidSaveNotification, reusing willSave: PostedIDSets? = nil) {
        var userInfo: [AnyHashable: Any] = [
            ContextNotificationKey.insertedObjectIDs:
                willSave?.inserted.set(for: note.insertedObjectIDs) ?? Set(note.insertedObjectIDs),
            ContextNotificationKey.updatedObjectIDs:
                willSave?.updated.set(for: note.updatedObjectIDs) ?? Set(note.updatedObjectIDs),
            ContextNotificationKey.deletedObjectIDs:
                willSave?.deleted.set(for: note.deletedObjectIDs) ?? Set(note.deletedObjectIDs),
            ContextNotificationKey.payload: note,
        ]
        if let version = note.commitVersion { userInfo[ContextNotificationKey.commitVersion] = version }
        NotificationCenter.default.post(name: .cairnObjectContextDidSave, object: self, userInfo: userInfo)
        eventStreams.send(.didSave(note))
    }

    func postObjectsDidChange(_ note: ObjectsDidChangeNotification) {
        guard !note.isEmpty else { return }
        NotificationCenter.default.post(
            name: .cairnObjectContextObjectsDidChange, object: self,
            userInfo: [
                ContextNotificationKey.insertedObjectIDs: Set(note.insertedObjectIDs),
                ContextNotificationKey.updatedObjectIDs: Set(note.updatedObjectIDs),
                ContextNotificationKey.deletedObjectIDs: Set(note.deletedObjectIDs),
                ContextNotificationKey.refreshedObjectIDs: Set(note.refreshedObjectIDs),
                ContextNotificationKey.payload: note,
            ])
        eventStreams.send(.objectsDidChange(note))
    }
}

/// The object ID lists of a will-save, and the sets posted for them.
struct PostedIDSets {
    /// One list and its set.
    struct Posted {
        let ids: [ObjectID]
        let set: Set<ObjectID>

        init(_ ids: [ObjectID]) {
            self.ids = ids
            set = Set(ids)
        }

        /// The set of `ids`: this one when the lists are equal (comparing is much cheaper
        /// than hashing), else a new one.
        func set(for ids: [ObjectID]) -> Set<ObjectID> {
            ids == self.ids ? set : Set(ids)
        }
    }

    let inserted: Posted, updated: Posted, deleted: Posted

    init(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID]) {
        self.inserted = Posted(inserted)
        self.updated = Posted(updated)
        self.deleted = Posted(deleted)
    }
}
