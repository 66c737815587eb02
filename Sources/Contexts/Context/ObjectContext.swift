import Dispatch
import Locking
import Policies
import Synchronization

/// A scratchpad of objects on one serial queue: fetch, change, insert and delete objects, then
/// save them to the store in one conditional commit. Cairn's `NSManagedObjectContext`.
///
/// Everything about a context and its objects happens on its queue: inside ``perform(_:)``,
/// ``performAndWait(_:)`` or the async `perform`, or on the main thread for a `.mainQueue`
/// context. Misuse stops the process with a message saying so (see `Docs/Contexts.md`).
///
/// ```swift
/// let context = objects.newBackgroundContext()
/// try await context.perform {
///     let adults = try context.fetch(FetchRequest(entityName: "Person", predicate: .compare("age", .greaterThanOrEqual, .int(18))))
///     for person in adults { person["isAdult"] = .bool(true) }
///     try context.save()
/// }
/// ```
///
/// `@unchecked Sendable`: every mutable stored property is touched only on `queue` (enforced by
/// `checkQueue()`), except `policy`, `automaticMerging`, `children` and `eventStreams`, which are
/// locks (`ConditionLock`, a pthread mutex: ThreadSanitizer sees it, and on this toolchain it
/// does not see `Synchronization.Mutex`), and `runningThread`, which is atomic.
public final class ObjectContext: @unchecked Sendable {
    /// Which queue a context runs on.
    ///
    /// ```swift
    /// objects.newContext(name: "editor", concurrencyType: .mainQueue)
    /// ```
    public enum ConcurrencyType: Sendable, Hashable {
        /// Its own serial queue (`newBackgroundContext()`).
        ///
        /// ```swift
        /// objects.newBackgroundContext().concurrencyType   // .privateQueue
        /// ```
        case privateQueue
        /// The main queue (`viewContext`); on the main thread it may be used directly.
        ///
        /// ```swift
        /// objects.viewContext.concurrencyType   // .mainQueue
        /// ```
        case mainQueue
    }

    /// The context's name, used in misuse messages and queue labels.
    ///
    /// ```swift
    /// objects.newBackgroundContext(name: "importer").name   // "importer"
    /// ```
    public let name: String
    /// What the objects `reset()` forgets say when used afterwards. Made once, with the name
    /// immutable: building it on every reset cost about 1,400 instructions of a fetch-indexed
    /// request (a lookup, then a reset). On the queue.
    lazy var resetReason = "its context '\(name)' was reset()"

    /// The queue the context runs on.
    ///
    /// ```swift
    /// objects.viewContext.concurrencyType   // .mainQueue
    /// ```
    public let concurrencyType: ConcurrencyType

    /// Whether off-queue use is checked (``ObjectStore/Options/checksQueueAccess``).
    ///
    /// ```swift
    /// context.checksQueueAccess   // true by default
    /// ```
    public let checksQueueAccess: Bool

    let queue: DispatchQueue
    /// Set on `queue` only (for the main queue: a key of this context's own), so finding it
    /// means "running on this context's queue".
    let queueKey = DispatchSpecificKey<Bool>()
    let core: StoreCoordinator
    private let policy: ConditionLock<any MergePolicy>
    private let automaticMerging = ConditionLock<Bool>(false)
    private let author = ConditionLock<String?>(nil)

    /// The context this one saves into, or nil for a root context (which saves to the store).
    ///
    /// ```swift
    /// let editor = objects.viewContext.newChildContext(name: "editor")
    /// editor.parent === objects.viewContext   // true
    /// ```
    public let parent: ObjectContext?

    /// Child contexts, held weakly: their automatic merges follow this context's saves.
    let children = ConditionLock<[WeakContext]>([])
    /// The AsyncSequence subscribers of this context's notifications.
    let eventStreams = ContextEventStreams()
    /// The thread running a block of this context's queue now, 0 when none: the fast path of
    /// `isOnQueue` (see `runningHere`).
    let runningThread = Atomic<UInt>(0)
    /// The way this context's objects reach it (see ``ContextLink``).
    let link: ContextLink

    // Guarded by `queue`. `@exclusivity(unchecked)` on the per-object tables below skips the
    // runtime's exclusivity check on every access. Relies on: only this context's queue touches
    // them, as `checkQueue()` enforces when `checksQueueAccess` is on, and no access here overlaps
    // another. Pinned by `MisuseTests.contextOffQueue`.

    /// Every registered object by its current ID, built lazily: the objects a fetch made wait in
    /// `unindexedObjects` until first needed (`register(made:)`).
    /// Relies on: every access goes through here, so every read sees all registered objects
    /// (unindexed ones indexed first). Pinned by
    /// `ContainedTricksTests.everyReadOfTheRegistryFindsEveryFetchedObject`.
    var registry: ObjectIDTable<StoredObject> {
        _read {
            if !unindexedObjects.isEmpty { indexFetchedObjects() }
            yield indexedRegistry
        }
        _modify {
            if !unindexedObjects.isEmpty { indexFetchedObjects() }
            yield &indexedRegistry
        }
    }
    @exclusivity(unchecked) private var indexedRegistry = ObjectIDTable<StoredObject>()
    /// The objects `register(made:)` registered and did not index yet: the first list, then any
    /// more, each as the fetch made it (the same arrays as in the registration order: a
    /// reference to each list, not to each object). `unindexedBatches` is empty when it is.
    @exclusivity(unchecked) private var unindexedObjects: [StoredObject] = []
    @exclusivity(unchecked) private var unindexedBatches: [[StoredObject]] = []
    /// Temporary IDs of saved (or `obtainPermanentIDs`) objects → their permanent IDs, so a
    /// temporary ID held elsewhere in this context still finds the object.
    @exclusivity(unchecked) var temporaryAliases = ObjectIDTable<ObjectID>()
    /// The reverse of `temporaryAliases`: the temporary ID a permanent one replaced, so a child
    /// that still holds the object under its temporary ID can follow it.
    @exclusivity(unchecked) var temporaryIDOfPermanent = ObjectIDTable<ObjectID>()
    /// Every registered object in registration order (the order of saves, conflicts and lists),
    /// and the ones forgotten since `objectsInOrder` last dropped them: `orderedObjects`, then the
    /// lists of `orderBatches`, joined on first use (a fetch, then a reset, never joins them).
    private var registrationOrder: [StoredObject] {
        _read {
            if !orderBatches.isEmpty { joinOrderBatches() }
            yield orderedObjects
        }
        _modify {
            if !orderBatches.isEmpty { joinOrderBatches() }
            yield &orderedObjects
        }
    }
    @exclusivity(unchecked) private var orderedObjects: [StoredObject] = []
    /// Lists of objects registered after `orderedObjects`, in order (`register(made:)`).
    @exclusivity(unchecked) private var orderBatches: [[StoredObject]] = []
    /// How many objects in `registrationOrder` are forgotten.
    var forgottenInOrder = 0
    /// The origins `origin(for:)` made, one per entity (a schema has a few).
    @exclusivity(unchecked) private var origins: [ObjectOrigin] = []
    /// The origins of reads whose objects hold no count on them (`StoredObject.borrowsOrigin`),
    /// held while this context may hold those objects. Relies on: every object the context lets
    /// go of while it may live on is given a count first (`detach`, `holdOriginsOfRegisteredObjects`),
    /// and an origin is dropped here only when no registered object borrows it. Pinned by
    /// `ContainedTricksTests.objectsOfAReadOutliveTheirContextsHold`.
    @exclusivity(unchecked) var readOrigins: [ObjectOrigin] = []
    var lastSaveReportStorage: SaveReport?
    var lastDidSaveStorage: ContextDidSaveNotification?
    var lastAutomaticMergeErrorStorage: ContextError?
    /// A read a delete rule needed at `delete(_:)` that failed: the next save throws it.
    var deleteRuleFailure: ContextError?
    /// Counts changes that can move a registered object between to-manys: a registration, a
    /// forgetting, an ID change, a write of the values or a change of the inserted or deleted
    /// flag of an object of an entity with relationships. `heldReferences` and `memberCache`
    /// are valid while it stays the same.
    var graphEpoch: UInt64 = 0
    /// Registered objects by the reference one of their to-ones holds, per entity and to-one
    /// position: `heldReferences(to:entity:position:)` builds it (ObjectContext+HeldReferences.swift).
    var heldReferenceMaps: [HeldReferenceKey: (epoch: UInt64, byReference: [String: [StoredObject]])] = [:]
    /// The to-many members read, kept with their owners while `graphEpoch` and the base hold
    /// (MemberCache.swift). Unchecked exclusivity as the tables above (its check cost about 75
    /// instructions per `members(of:)`).
    @exclusivity(unchecked) var memberCache = MemberCache()
    /// The members cascades read whole at `delete(_:)`, until the save (CascadeReads.swift).
    var cascadeReads = CascadeReads()
    /// Many-to-many links changed and not saved, and what each end last read (ContextLinks.swift).
    var links = ContextLinks()
    /// Which snapshot reads use: see ObjectContext+QueryGeneration.swift.
    var generationState: GenerationState = .unpinned

    init(name: String, concurrencyType: ConcurrencyType, core: StoreCoordinator, parent: ObjectContext? = nil) {
        self.name = name
        self.concurrencyType = concurrencyType
        self.core = core
        self.parent = parent
        link = ContextLink(name: name)
        checksQueueAccess = core.options.checksQueueAccess
        policy = ConditionLock(ErrorMergePolicy())
        switch concurrencyType {
        case .privateQueue:
            queue = DispatchQueue(label: "cairn.context.\(name)")
        case .mainQueue:
            queue = DispatchQueue.main
        }
        queue.setSpecific(key: queueKey, value: true)
        if let parent {
            parent.children.withLock { WeakContext.append(self, to: &$0) }
        } else {
            core.rootContexts.withLock { WeakContext.append(self, to: &$0) }
        }
        link.attach(self)
    }

    deinit {
        link.close()
        if !readOrigins.isEmpty { holdOriginsOfRegisteredObjects() }
        // The main queue outlives its contexts; do not leave our key on it.
        if concurrencyType == .mainQueue { queue.setSpecific(key: queueKey, value: nil) }
        eventStreams.finishAll()
    }

    /// The policy that resolves conflicts on the next save; `.error` by default.
    ///
    /// May be set from any thread, between saves; a save uses the policy it found when it
    /// started.
    ///
    /// ```swift
    /// context.mergePolicy = .objectTrump
    /// context.mergePolicy = .addingDeltas(for: ["likes"], otherwise: .objectTrump)
    /// ```
    public var mergePolicy: any MergePolicy {
        get { policy.withLock { $0 } }
        set { policy.withLock { $0 = newValue } }
    }

    /// Whether the context merges every did-save of its parent automatically, as if it called
    /// ``mergeChanges(fromContextDidSave:)`` itself; for a root context, every did-save of the
    /// other root contexts of its ``ObjectStore`` (the saves that reach the store), and on a
    /// shared backend the saves of other processes and hosts (on etcd, the first root context
    /// to turn it on opens the store's watch of them). Default `false`.
    ///
    /// The merge is queued on this context's queue (like `perform`) when the other save
    /// finishes, so it runs before any block queued after that moment. Local changes stay on
    /// top, and the merged objects' ancestors move, so the next save does not conflict on them.
    /// May be set from any thread. A merge that fails (a storage error) leaves the objects as
    /// they were and is kept in ``lastAutomaticMergeError``.
    ///
    /// ```swift
    /// objects.viewContext.automaticallyMergesChangesFromParent = true
    /// ```
    public var automaticallyMergesChangesFromParent: Bool {
        get { automaticMerging.withLock { $0 } }
        set {
            automaticMerging.withLock { $0 = newValue }
            if newValue && parent == nil { core.rootContextWantsSavesFromElsewhere() }
        }
    }

    /// Who the context's saves are made for, recorded with each save in the persistent history
    /// (``HistoryTransaction/author``) when the store tracks it: Core Data's `transactionAuthor`.
    /// Default nil. May be set from any thread, between saves.
    ///
    /// ```swift
    /// importer.transactionAuthor = "sync"
    /// ```
    public var transactionAuthor: String? {
        get { author.withLock { $0 } }
        set { author.withLock { $0 = newValue } }
    }

    // MARK: - Registry (on the queue)

    /// The registered object for `id`, following a temporary ID to its permanent one.
    func registeredObject(for id: ObjectID) -> StoredObject? {
        if let object = registry[id] { return object }
        if let permanent = temporaryAliases[id] { return registry[permanent] }
        return nil
    }

    func register(_ object: StoredObject) {
        attach(object)
        registrationOrder.append(object)
        registry[object.storedID] = object
        object.isIndexed = true
    }

    /// The object's side of registering: it belongs to this context from now on. Its origin
    /// is this context's (made by `origin(for:)`, or by a read of this context).
    func attach(_ object: StoredObject) {
        graphEpoch &+= 1
        object.lifecycle = .registered
    }

    /// The origin of this context's objects of `layout` that no read made (inserts, faults,
    /// objects decoded at once): one per entity, made on first use.
    func origin(for layout: EntityLayout) -> ObjectOrigin {
        for index in origins.indices where origins[index].layout === layout { return origins[index] }
        return makeOrigin(for: layout)
    }

    @inline(never)
    private func makeOrigin(for layout: EntityLayout) -> ObjectOrigin {
        let made = ObjectOrigin(layout: layout, link: link)
        origins.append(made)
        return made
    }

    /// Registers the objects a fetch made (attached as they were made, none registered before),
    /// all at once, and does not index them yet (see `registry`): a read that then resets, or
    /// only changes and saves, never looks an object up by ID (indexing a prefetch's 10,000
    /// members was about 500 instructions a member of relationship-traverse). The index reads
    /// their IDs from the objects, whose IDs cannot change before it is built (changing an ID
    /// goes through the index).
    func register(made objects: [StoredObject]) {
        guard !objects.isEmpty else { return }
        if orderedObjects.isEmpty && orderBatches.isEmpty { orderedObjects = objects } else { orderBatches.append(objects) }
        if unindexedObjects.isEmpty { unindexedObjects = objects } else { unindexedBatches.append(objects) }
    }

    /// `register(made:)` of the lists' objects, in order. The lists are kept as they are, not
    /// copied into one (a copy retained and released every object twice: about 100
    /// instructions a member of relationship-traverse), until an index or the order is needed.
    func register(madeBatches batches: [[StoredObject]]) {
        for objects in batches { register(made: objects) }
    }

    /// Joins `orderBatches` into `orderedObjects`.
    @inline(never)
    private func joinOrderBatches() {
        let batches = orderBatches
        orderBatches = []
        orderedObjects.reserveCapacity(orderedObjects.count + batches.reduce(0) { $0 + $1.count })
        for objects in batches { orderedObjects.append(contentsOf: objects) }
    }

    /// Indexes the objects `register(made:)` left unindexed, passing over those forgotten since
    /// (`forget` leaves them in the list).
    @inline(never)
    private func indexFetchedObjects() {
        let first = unindexedObjects, more = unindexedBatches
        unindexedObjects = []
        unindexedBatches = []
        indexedRegistry.reserveCapacity(indexedRegistry.count + first.count + more.reduce(0) { $0 + $1.count })
        for object in first { index(fetched: object) }
        for objects in more {
            for object in objects { index(fetched: object) }
        }
    }

    /// Indexes one object a fetch made, unless it was forgotten since.
    @inline(__always)
    private func index(fetched object: StoredObject) {
        guard case .registered = object.lifecycle else { return }
        indexedRegistry[object.storedID] = object
        object.isIndexed = true
    }

    /// Drops `object` from the context; any later use of it stops the process naming `reason`.
    func forget(_ object: StoredObject, reason: String) {
        forget(object, Forgetting(reason: reason, contextName: name))
    }

    /// `forget(_:reason:)` with the reason made already: objects forgotten together share one
    /// (a save of 10,000 deletes allocated 10,000).
    func forget(_ object: StoredObject, _ forgetting: Forgetting) {
        graphEpoch &+= 1
        if core.hasManyToMany { forgetLinks(of: object) }
        // Not through `registry`: an object a fetch left unindexed is not in the index, and is
        // neither indexed only to be removed nor looked for there (a save deleting the 10,000
        // members a cascade fetched indexed each, about 300 instructions, then missed each in
        // the index, about 180). Relies on: `isIndexed` says whether the index holds it, no
        // other object is indexed under its ID (registering an ID looks it up first, which
        // indexes), and indexing passes over forgotten objects. Pinned by
        // `ContainedTricksTests.forgettingUnindexedObjectsLeavesTheRegistryWhole`.
        if object.isIndexed { indexedRegistry[object.storedID] = nil }
        if case .registered = object.lifecycle { forgottenInOrder += 1 }
        detach(object, forgetting)
    }

    /// Drops every registered object, as `forget` does each (`reset()`), emptying the tables
    /// at once: objects a fetch left unindexed are not indexed first only to be removed.
    ///
    /// An object nothing but the registration order references is not detached: it is freed
    /// with the list, and nothing can see its state (detaching each object of a fetched page
    /// cost about 125 instructions). Relies on: the other tables go first, so a reference the
    /// list does not hold is the caller's. Pinned by `MisuseTests.fetchedObjectAfterReset`.
    func forgetAll(reason: String) {
        unindexedObjects = []
        unindexedBatches = []
        graphEpoch &+= 1
        heldReferenceMaps = [:]
        memberCache.removeAll()
        cascadeReads.removeAll()
        links = ContextLinks()
        indexedRegistry.removeAll()
        // Made for the first object detached (usually none: a reset after a read).
        var forgetting: Forgetting? = nil
        if detachShared(in: &orderedObjects, reason, &forgetting) { core.spareObjects.give(orderedObjects) }
        for batch in orderBatches.indices where detachShared(in: &orderBatches[batch], reason, &forgetting) {
            core.spareObjects.give(orderBatches[batch])
        }
        orderedObjects = []
        orderBatches = []
        forgottenInOrder = 0
        // After the lists: the objects freed with them borrowed these, the others hold counts.
        readOrigins = []
    }

    /// Gives every object the context still holds a count on its origin: the context's end,
    /// where `readOrigins` goes (an object a caller holds lives on).
    private func holdOriginsOfRegisteredObjects() {
        for object in orderedObjects { object.holdOrigin() }
        for objects in orderBatches {
            for object in objects { object.holdOrigin() }
        }
    }

    /// `forgetAll`'s detaching of the objects of `objects` referenced elsewhere; whether every
    /// one of them is a spare (``SpareObjects/isSpare(_:)``), the list then the only reference to each.
    @discardableResult
    private func detachShared(in objects: inout [StoredObject], _ reason: String, _ forgetting: inout Forgetting?) -> Bool {
        objects.withUnsafeMutableBufferPointer { objects in
            var spares = !objects.isEmpty
            for position in objects.indices {
                if spares {
                    if SpareObjects.isSpare(&objects[position]) { continue }
                    spares = false
                }
                guard !isKnownUniquelyReferenced(&objects[position]), case .registered = objects[position].lifecycle else { continue }
                if forgetting == nil { forgetting = Forgetting(reason: reason, contextName: name) }
                detach(objects[position], forgetting!)
            }
            return spares
        }
    }

    /// The object's side of forgetting it.
    private func detach(_ object: StoredObject, _ forgetting: Forgetting) {
        object.holdOrigin()
        object.lifecycle = .forgotten(forgetting)
        object.clearFlagsOfForgotten()
        object.conflictCheckMark = false
        object.membershipChangedFlag = false
    }

    /// Gives a registered object a new (permanent) ID, remembering the old temporary one.
    func changeID(of object: StoredObject, to newID: ObjectID) {
        let oldID = object.storedID
        guard oldID != newID else { return }
        graphEpoch &+= 1
        registry[oldID] = nil
        object.storedID = newID
        registry[newID] = object
        if oldID.isTemporaryID {
            temporaryAliases[oldID] = newID
            temporaryIDOfPermanent[newID] = oldID
        }
    }

    /// Registered objects in registration order: the order of saves, conflicts and lists.
    ///
    /// Forgetting an object leaves it in `registrationOrder` (removing it there would cost a
    /// search per object); forgotten objects are dropped here, all at once, the first time the
    /// list is asked for after some were forgotten. An object forgotten is never registered
    /// again, so its lifecycle tells.
    var objectsInOrder: [StoredObject] {
        if forgottenInOrder > 0 {
            registrationOrder.removeAll { object in
                if case .registered = object.lifecycle { return false }
                return true
            }
            forgottenInOrder = 0
            if !readOrigins.isEmpty { dropUnborrowedReadOrigins() }
        }
        return registrationOrder
    }

    /// Drops the read origins no registered object borrows any more (their objects were all
    /// forgotten, each given a count of its own): a context that is never reset keeps only
    /// the records its objects use.
    private func dropUnborrowedReadOrigins() {
        for origin in readOrigins { origin.isBorrowed = false }
        for object in orderedObjects { object.markBorrowedOrigin() }
        readOrigins.removeAll { !$0.isBorrowed }
    }

    /// The pending inserts, in registration order.
    var pendingInserts: [StoredObject] {
        objectsInOrder.filter(\.insertedFlag)
    }

    /// Stops the process unless `object` is registered in this context.
    func checkOwnership(_ object: StoredObject, _ operation: String) {
        switch object.lifecycle {
        case .registered where object.link === link:
            return
        case .registered:
            contextMisuse(
                "ObjectContext '\(name)': \(operation) got StoredObject \(object.storedID) of another context "
                    + "'\(object.ownerName)'; objects belong to one context: pass object.objectID and use "
                    + "context.object(with:) in this one")
        case .forgotten(let forgetting):
            contextMisuse(
                "ObjectContext '\(name)': \(operation) got StoredObject \(object.storedID) used after \(forgetting.reason); "
                    + "get it again with context.object(with:)")
        case .unattached:
            contextMisuse(
                "ObjectContext '\(name)': \(operation) got StoredObject \(object.storedID) that is in no context; "
                    + "insert it first with context.insert(_:)")
        }
    }

    /// Loads the values of a fault; a record that is gone stops the process.
    func fulfillFault(_ object: StoredObject) {
        let record: BaseState?
        do {
            record = try baseState(of: object.storedID, entity: object.entity)
        } catch {
            contextMisuse("StoredObject \(object.storedID) could not be loaded: \(error)")
        }
        guard let record else {
            contextMisuse(
                "StoredObject \(object.storedID) could not be loaded: its record is not in the "
                    + (parent == nil ? "store (deleted)" : "parent context '\(parent!.name)' (deleted there or in the store)")
                    + ". Use context.existingObject(with:), which throws ContextError.objectNotFound, to load objects "
                    + "that may have been deleted")
        }
        load(record, into: object)
    }
}

extension ObjectContext: CustomStringConvertible {
    /// The name and concurrency type (safe off the queue).
    ///
    /// ```swift
    /// print(objects.viewContext)   // ObjectContext 'viewContext' (mainQueue)
    /// ```
    public var description: String { "ObjectContext '\(name)' (\(concurrencyType))" }
}
