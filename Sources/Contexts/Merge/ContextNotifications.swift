import Foundation
import Locking

// The notifications of a context, with Core Data's names as far as they fit. They carry object
// IDs (Sendable), never objects: objects stay on their context's queue.
//
//   Core Data                                  Cairn
//   NSManagedObjectContextWillSave             .cairnObjectContextWillSave
//   NSManagedObjectContextDidSave(ObjectIDs)   .cairnObjectContextDidSave
//   NSManagedObjectContextObjectsDidChange     .cairnObjectContextObjectsDidChange
//   NSInsertedObjectIDsKey "inserted_objectIDs" ContextNotificationKey.insertedObjectIDs (same string)
//   NSUpdatedObjectIDsKey  "updated_objectIDs"  ContextNotificationKey.updatedObjectIDs
//   NSDeletedObjectIDsKey  "deleted_objectIDs"  ContextNotificationKey.deletedObjectIDs
//   NSRefreshedObjectIDsKey "refreshed_objectIDs" ContextNotificationKey.refreshedObjectIDs

extension Notification.Name {
    /// Posted by a context at the start of a `save()` that has changes, on the context's queue;
    /// the notification's `object` is the context. Core Data's `NSManagedObjectContextWillSave`.
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: .cairnObjectContextWillSave, object: context, queue: nil) { _ in
    ///     // runs on the context's queue, before the save reads anything
    /// }
    /// ```
    public static let cairnObjectContextWillSave = Notification.Name("CairnObjectContextWillSave")

    /// Posted by a context after a successful `save()` that had changes, on the context's queue;
    /// the `object` is the context and `userInfo` holds the saved object IDs (sets, under
    /// ``ContextNotificationKey``) and the commit version. Read it with
    /// ``ContextDidSaveNotification/init(_:)`` or pass it to
    /// ``ObjectContext/mergeChanges(fromContextDidSave:)-(Notification)``. Core Data's
    /// `NSManagedObjectContextDidSave`.
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: .cairnObjectContextDidSave, object: background, queue: nil) { note in
    ///     guard let saved = ContextDidSaveNotification(note) else { return }
    ///     view.perform { try? view.mergeChanges(fromContextDidSave: saved) }
    /// }
    /// ```
    public static let cairnObjectContextDidSave = Notification.Name("CairnObjectContextDidSave")

    /// Posted by a context when changes arrive from elsewhere (a child's save applied to it, or a
    /// merged did-save), on the context's queue; `userInfo` holds the IDs of the objects that
    /// changed. Core Data's `NSManagedObjectContextObjectsDidChange`.
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: .cairnObjectContextObjectsDidChange, object: view, queue: nil) { note in
    ///     let change = ObjectsDidChangeNotification(note)
    /// }
    /// ```
    public static let cairnObjectContextObjectsDidChange = Notification.Name("CairnObjectContextObjectsDidChange")
}

/// The `userInfo` keys of a context's notifications.
///
/// ```swift
/// let updated = note.userInfo?[ContextNotificationKey.updatedObjectIDs] as? Set<ObjectID> ?? []
/// ```
public enum ContextNotificationKey {
    /// `Set<ObjectID>`: objects inserted (did-save, objects-did-change).
    ///
    /// ```swift
    /// note.userInfo?[ContextNotificationKey.insertedObjectIDs] as? Set<ObjectID>
    /// ```
    public static let insertedObjectIDs = "inserted_objectIDs"
    /// `Set<ObjectID>`: objects updated.
    ///
    /// ```swift
    /// note.userInfo?[ContextNotificationKey.updatedObjectIDs] as? Set<ObjectID>
    /// ```
    public static let updatedObjectIDs = "updated_objectIDs"
    /// `Set<ObjectID>`: objects deleted.
    ///
    /// ```swift
    /// note.userInfo?[ContextNotificationKey.deletedObjectIDs] as? Set<ObjectID>
    /// ```
    public static let deletedObjectIDs = "deleted_objectIDs"
    /// `Set<ObjectID>`: registered objects a merge refreshed (objects-did-change only).
    ///
    /// ```swift
    /// note.userInfo?[ContextNotificationKey.refreshedObjectIDs] as? Set<ObjectID>
    /// ```
    public static let refreshedObjectIDs = "refreshed_objectIDs"
    /// `UInt64`: the commit version of a did-save that reached the store (absent for a child's
    /// save into its parent).
    ///
    /// ```swift
    /// note.userInfo?[ContextNotificationKey.commitVersion] as? UInt64
    /// ```
    public static let commitVersion = "commitVersion"
    /// The whole notification as its typed value (``ContextDidSaveNotification`` and so on).
    ///
    /// ```swift
    /// note.userInfo?[ContextNotificationKey.payload] as? ContextDidSaveNotification
    /// ```
    public static let payload = "cairn.payload"
}

/// A context's will-save: which objects the save is about to write (IDs as they are before the
/// save: inserted objects still have temporary IDs).
///
/// ```swift
/// for await note in context.willSaveNotifications { print(note.insertedObjectIDs.count) }
/// ```
public struct ContextWillSaveNotification: Sendable, Hashable {
    /// The saving context's name.
    ///
    /// ```swift
    /// note.contextName   // "import"
    /// ```
    public var contextName: String
    /// Objects inserted since the last save.
    ///
    /// ```swift
    /// note.insertedObjectIDs.count
    /// ```
    public var insertedObjectIDs: [ObjectID]
    /// Objects updated since the last save.
    ///
    /// ```swift
    /// note.updatedObjectIDs.count
    /// ```
    public var updatedObjectIDs: [ObjectID]
    /// Objects deleted since the last save.
    ///
    /// ```swift
    /// note.deletedObjectIDs.count
    /// ```
    public var deletedObjectIDs: [ObjectID]

    /// Reads the typed value of a Foundation will-save notification; nil for any other.
    ///
    /// ```swift
    /// let will = ContextWillSaveNotification(note)
    /// ```
    public init?(_ notification: Notification) {
        guard notification.name == .cairnObjectContextWillSave,
              let payload = notification.userInfo?[ContextNotificationKey.payload] as? ContextWillSaveNotification
        else { return nil }
        self = payload
    }

    init(contextName: String, insertedObjectIDs: [ObjectID], updatedObjectIDs: [ObjectID], deletedObjectIDs: [ObjectID]) {
        self.contextName = contextName
        self.insertedObjectIDs = insertedObjectIDs
        self.updatedObjectIDs = updatedObjectIDs
        self.deletedObjectIDs = deletedObjectIDs
    }
}

/// A context's did-save: what a successful save wrote, as object IDs, and the commit version.
/// It is what ``ObjectContext/mergeChanges(fromContextDidSave:)-(ContextDidSaveNotification)``
/// takes, and it is `Sendable`, so it can be handed to another context's queue.
///
/// ```swift
/// for await saved in background.didSaveNotifications {
///     try await view.perform { try view.mergeChanges(fromContextDidSave: saved) }
/// }
/// ```
public struct ContextDidSaveNotification: Sendable, Hashable {
    /// The saving context's name.
    ///
    /// ```swift
    /// saved.contextName   // "import"
    /// ```
    public var contextName: String
    /// Objects the save inserted: permanent IDs when it reached the store, temporary ones for a
    /// child's save into its parent.
    ///
    /// ```swift
    /// saved.insertedObjectIDs.map(\.uriString)
    /// ```
    public var insertedObjectIDs: [ObjectID]
    /// Objects the save updated.
    ///
    /// ```swift
    /// saved.updatedObjectIDs.contains(id)
    /// ```
    public var updatedObjectIDs: [ObjectID]
    /// Objects the save deleted.
    ///
    /// ```swift
    /// saved.deletedObjectIDs.contains(id)
    /// ```
    public var deletedObjectIDs: [ObjectID]
    /// The commit version of the save's commit; nil for a child's save into its parent and for
    /// a save that ended up writing nothing.
    ///
    /// ```swift
    /// saved.commitVersion   // 17
    /// ```
    public var commitVersion: UInt64?
    /// The temporary ID each inserted object had before the save, by its permanent ID: lets a
    /// context that knew the object by its temporary ID (a child that inserted it) follow it.
    ///
    /// ```swift
    /// saved.temporaryIDs[permanentID]   // the cairn://Person/t… it had
    /// ```
    public var temporaryIDs: [ObjectID: ObjectID]
    /// Whether this was a child context's save into its parent (nothing reached the store).
    ///
    /// ```swift
    /// saved.isSaveToParent   // true for a child's save
    /// ```
    public var isSaveToParent: Bool

    /// A did-save made by hand (tests, replays); contexts make their own.
    ///
    /// ```swift
    /// let saved = ContextDidSaveNotification(contextName: "replay", updatedObjectIDs: [id])
    /// ```
    public init(
        contextName: String, insertedObjectIDs: [ObjectID] = [], updatedObjectIDs: [ObjectID] = [],
        deletedObjectIDs: [ObjectID] = [], commitVersion: UInt64? = nil, temporaryIDs: [ObjectID: ObjectID] = [:],
        isSaveToParent: Bool = false
    ) {
        self.contextName = contextName
        self.insertedObjectIDs = insertedObjectIDs
        self.updatedObjectIDs = updatedObjectIDs
        self.deletedObjectIDs = deletedObjectIDs
        self.commitVersion = commitVersion
        self.temporaryIDs = temporaryIDs
        self.isSaveToParent = isSaveToParent
    }

    /// Reads the typed value of a Foundation did-save notification; nil for any other.
    ///
    /// ```swift
    /// guard let saved = ContextDidSaveNotification(note) else { return }
    /// ```
    public init?(_ notification: Notification) {
        guard notification.name == .cairnObjectContextDidSave,
              let payload = notification.userInfo?[ContextNotificationKey.payload] as? ContextDidSaveNotification
        else { return nil }
        self = payload
    }
}

/// A context's objects-did-change: which of its objects changed because of something outside
/// its own edits (a child's save applied to it, or a merged did-save).
///
/// ```swift
/// for await change in view.objectsDidChangeNotifications { reloadRows(change.refreshedObjectIDs) }
/// ```
public struct ObjectsDidChangeNotification: Sendable, Hashable {
    /// What brought the change.
    ///
    /// ```swift
    /// if case .childSave(let child) = change.cause { print("saved by \(child)") }
    /// ```
    public enum Cause: Sendable, Hashable {
        /// The named child context saved into this one.
        case childSave(String)
        /// A did-save of the named context was merged (by `mergeChanges` or automatically).
        case merge(String)
    }

    /// The context whose objects changed.
    ///
    /// ```swift
    /// change.contextName   // "viewContext"
    /// ```
    public var contextName: String
    /// What brought the change.
    ///
    /// ```swift
    /// change.cause   // .merge("import")
    /// ```
    public var cause: Cause
    /// Objects that became pending inserts here (a child's inserts).
    ///
    /// ```swift
    /// change.insertedObjectIDs.count
    /// ```
    public var insertedObjectIDs: [ObjectID]
    /// Objects whose values changed here (a child's updates).
    ///
    /// ```swift
    /// change.updatedObjectIDs.count
    /// ```
    public var updatedObjectIDs: [ObjectID]
    /// Objects deleted here (a child's deletes, pending) or forgotten (a merged deletion).
    ///
    /// ```swift
    /// change.deletedObjectIDs.count
    /// ```
    public var deletedObjectIDs: [ObjectID]
    /// Registered objects a merge refreshed with the saved values (local changes on top).
    ///
    /// ```swift
    /// change.refreshedObjectIDs.count
    /// ```
    public var refreshedObjectIDs: [ObjectID]

    /// Reads the typed value of a Foundation objects-did-change notification; nil for any other.
    ///
    /// ```swift
    /// let change = ObjectsDidChangeNotification(note)
    /// ```
    public init?(_ notification: Notification) {
        guard notification.name == .cairnObjectContextObjectsDidChange,
              let payload = notification.userInfo?[ContextNotificationKey.payload] as? ObjectsDidChangeNotification
        else { return nil }
        self = payload
    }

    init(
        contextName: String, cause: Cause, insertedObjectIDs: [ObjectID] = [], updatedObjectIDs: [ObjectID] = [],
        deletedObjectIDs: [ObjectID] = [], refreshedObjectIDs: [ObjectID] = []
    ) {
        self.contextName = contextName
        self.cause = cause
        self.insertedObjectIDs = insertedObjectIDs
        self.updatedObjectIDs = updatedObjectIDs
        self.deletedObjectIDs = deletedObjectIDs
        self.refreshedObjectIDs = refreshedObjectIDs
    }

    var isEmpty: Bool {
        insertedObjectIDs.isEmpty && updatedObjectIDs.isEmpty && deletedObjectIDs.isEmpty && refreshedObjectIDs.isEmpty
    }
}

/// One notification of a context, as the AsyncSequence subscribers receive it.
enum ContextEvent: Sendable {
    case willSave(ContextWillSaveNotification)
    case didSave(ContextDidSaveNotification)
    case objectsDidChange(ObjectsDidChangeNotification)
}

/// The AsyncSequence subscribers of one context: each stream registers how to yield an event
/// and how to finish; the stream's termination removes it.
///
/// `Sendable`: its only state is behind a lock.
final class ContextEventStreams: Sendable {
    private struct Subscriber {
        let yield: @Sendable (ContextEvent) -> Void
        let finish: @Sendable () -> Void
    }

    private struct State {
        var nextID = 0
        var subscribers: [Int: Subscriber] = [:]
        var finished = false
    }

    private let state = ConditionLock(State())

    /// A new stream of the events `pick` selects.
    func stream<Element: Sendable>(_ pick: @escaping @Sendable (ContextEvent) -> Element?) -> AsyncStream<Element> {
        registeredStream(register: { continuation in
            let subscriber = Subscriber(
                yield: { event in if let element = pick(event) { continuation.yield(element) } },
                finish: { continuation.finish() })
            return state.withLock { state in
                guard !state.finished else { return nil }
                state.nextID += 1
                state.subscribers[state.nextID] = subscriber
                return state.nextID
            }
        }, unregister: { [weak self] id in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        })
    }

    /// Hands `event` to every stream.
    func send(_ event: ContextEvent) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(event) }
    }

    /// Ends every stream (the context is going away).
    func finishAll() {
        let subscribers = state.withLock { state in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
