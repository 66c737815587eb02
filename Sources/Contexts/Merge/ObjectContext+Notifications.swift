import Foundation
import Locking
import Synchronization

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

    /// Posts the will-save; returns its ID lists, with the did-save's sets of them begun.
    ///
    /// The will-save's `userInfo` holds its typed value only, no ID sets (Core Data's will-save
    /// has no `userInfo` at all). The did-save does post sets; when its lists are the
    /// will-save's (a save of updates), each large set is hashed on another thread while the
    /// save goes on (see ``IDSetBuild``).
    func postWillSave() -> PostedIDSets {
        var inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = []
        let objects = objectsInOrder
        // Room for the commonest save (changes to fetched objects) without regrowing; the list
        // is cut to size below when most of the room went unused, since observers may keep it.
        updated.reserveCapacity(objects.count)
        // Each object read without a count of its own (the list holds it): iterating the list
        // retained and released each.
        for position in objects.indices {
            Unmanaged.passUnretained(objects[position])._withUnsafeGuaranteedRef { object in
                guard !object.isFaultStorage else { return }
                if object.insertedFlag {
                    inserted.append(object.storedID)
                } else if object.deletedFlag {
                    // Room for the rest at the first delete: a cascade's 10,000 regrew the list 14 times.
                    if deleted.isEmpty { deleted.reserveCapacity(objects.count - position) }
                    deleted.append(object.storedID)
                } else if isUpdated(object) {
                    updated.append(object.storedID)
                }
            }
        }
        func cutToSize(_ list: inout [ObjectID]) {
            guard list.count < list.capacity / 2 else { return }
            var exact: [ObjectID] = []
            exact.reserveCapacity(list.count)
            exact.append(contentsOf: list)
            list = exact
        }
        cutToSize(&updated)
        cutToSize(&deleted)
        let note = ContextWillSaveNotification(
            contextName: name, insertedObjectIDs: inserted, updatedObjectIDs: updated, deletedObjectIDs: deleted)
        // Begun before the observers run: they, the save's checks and its commit are what
        // the sets' hashing overlaps.
        let sets = PostedIDSets(inserted: inserted, updated: updated, deleted: deleted)
        NotificationCenter.default.post(
            name: .cairnObjectContextWillSave, object: self, userInfo: [ContextNotificationKey.payload: note])
        eventStreams.send(.willSave(note))
        return sets
    }

    /// Posts the did-save. `willSave` holds the lists the will-save posted and the sets begun
    /// for them: a list equal to the will-save's takes its set; another (inserted objects
    /// changed their IDs, a merge policy changed the outcome) is hashed here.
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

/// The object ID lists of a will-save, and the did-save's sets of them, begun.
struct PostedIDSets: Sendable {
    /// One list and its set.
    struct Posted: Sendable {
        let ids: [ObjectID]
        /// Begun for long lists only; a short one is hashed when the did-save wants it.
        let build: IDSetBuild?

        init(_ ids: [ObjectID]) {
            self.ids = ids
            build = ids.count >= IDSetBuild.backgroundThreshold ? IDSetBuild(ids) : nil
        }

        /// The set of `ids`: the one begun when the lists are equal (comparing is much
        /// cheaper than hashing), else a new one.
        func set(for ids: [ObjectID]) -> Set<ObjectID> {
            if let build, ids == self.ids { return build.set }
            return Set(ids)
        }
    }

    let inserted: Posted, updated: Posted, deleted: Posted

    init(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID]) {
        self.inserted = Posted(inserted)
        self.updated = Posted(updated)
        self.deleted = Posted(deleted)
    }

    /// Lets go of `sets` on a global queue when a set was begun for them: the save's reference is
    /// usually a large set's last (once the did-save's observers are done), and freeing its IDs,
    /// a release each (a cascade's 10,000), is then not the saving thread's. Without a set
    /// begun, nothing large is freed: they go here.
    static func dropElsewhere(_ sets: consuming PostedIDSets) {
        guard sets.inserted.build != nil || sets.updated.build != nil || sets.deleted.build != nil else { return }
        // Held by a box the task empties: the task lets go of them whichever thread lets go of
        // the box last (a capture of the sets themselves may be released last on this thread).
        let dropping = Dropping(sets)
        DispatchQueue.global(qos: .utility).async { dropping.sets = nil }
    }

    /// `dropElsewhere`'s box. `@unchecked Sendable`: only the task touches it once made.
    private final class Dropping: @unchecked Sendable {
        var sets: PostedIDSets?

        init(_ sets: consuming PostedIDSets) { self.sets = sets }
    }
}

/// A set of object IDs hashed on a global queue while the saving context goes on (validating,
/// encoding, committing), for its did-save. Whoever comes first builds it: the queue's task, or
/// the reader, which hashes the list itself when the task has not started (a busy pool never
/// delays a save) and otherwise waits for it. Lists shorter than `backgroundThreshold` get none.
///
/// Relies on: `set` is exactly `Set(ids)` whether or not the background hashing finished.
/// Pinned by `SaveNotificationSetTests.aSetBuildGivesTheSameSetWhoeverBuildsIt` and
/// `theDidSaveHoldsTheSavedIDsAndTheWillSaveItsTypedValueOnly`.
package final class IDSetBuild: Sendable {
    /// From this many IDs on, the set is hashed on another thread (for fewer, the hop costs more).
    package static let backgroundThreshold = 512

    private static let waiting = 0, claimed = 1, done = 2

    private let ids: [ObjectID]
    private let state = Atomic<Int>(IDSetBuild.waiting)
    /// A pthread mutex (`ConditionLock`), not `Synchronization.Mutex`, which ThreadSanitizer
    /// reports falsely (Testing.md).
    private let result = ConditionLock<Set<ObjectID>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts hashing `ids` on a global queue.
    package init(_ ids: [ObjectID]) {
        self.ids = ids
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            if claim() { finish(with: Set(self.ids)) }
        }
    }

    /// The set of the IDs: built here when no one has started it, else waited for.
    package var set: Set<ObjectID> {
        if claim() {
            let set = Set(ids)
            finish(with: set)
            return set
        }
        if state.load(ordering: .acquiring) != Self.done {
            finished.wait()
            finished.signal()  // for any later reader
        }
        return result.withLock { $0 ?? Set(ids) }
    }

    private func claim() -> Bool {
        state.compareExchange(expected: Self.waiting, desired: Self.claimed, ordering: .acquiringAndReleasing).exchanged
    }

    private func finish(with set: Set<ObjectID>) {
        result.withLock { $0 = set }
        state.store(Self.done, ordering: .releasing)
        finished.signal()
    }
}
