import Dispatch
import Locking
import Policies

/// Opens a Cairn store with a schema and hands out object contexts: Cairn's
/// `NSPersistentContainer`.
///
/// ```swift
/// let objects = try ObjectStore(directory: "/var/lib/app/store", schema: schema)
/// let background = objects.newBackgroundContext(name: "import")
/// try await background.perform {
///     let person = background.insert(entity: "Person")
///     person["name"] = .string("Ann")
///     try background.save()
/// }
/// ```
///
/// `Sendable`: every stored property is immutable and Sendable; contexts guard themselves.
public final class ObjectStore: Sendable {
    /// Choices fixed when the object store is opened.
    ///
    /// ```swift
    /// var options = ObjectStore.Options()
    /// options.checksQueueAccess = false   // after profiling, in a release build
    /// ```
    public struct Options: Sendable {
        /// Whether every access to a context or its objects checks that it runs on the context's
        /// queue, and stops the process with a clear message when not. Default `true`.
        ///
        /// Promise: a data race on a context is reported at the faulty line instead of silently
        /// corrupting the context. Price: one `DispatchQueue.getSpecific` lookup (a thread-local
        /// read plus a short walk of the queue's target chain, tens of nanoseconds) per property
        /// access and per context call. Turning it off removes the check, not the rule.
        /// Cannot change after the store is opened.
        ///
        /// ```swift
        /// options.checksQueueAccess = false
        /// ```
        public var checksQueueAccess = true

        /// How many conditional commits one `save()` may try, each after asking the merge policy,
        /// before it fails with ``ContextError/tooManyConflictRetries(attempts:conflicts:)``.
        /// Default 8. Values below 1 count as 1.
        ///
        /// ```swift
        /// options.maxSaveAttempts = 16
        /// ```
        public var maxSaveAttempts = 8

        /// The durability of each save's commit. Default `.full` (fsync'd when `save()` returns).
        ///
        /// ```swift
        /// options.saveDurability = .normal   // may lose the last saves on power loss, never corrupts
        /// ```
        public var saveDurability: SaveDurability = .full

        /// Called while opening the store builds or drops indexes (an added or removed index
        /// of the schema), every 100,000 entries and when each is done. Default nil.
        ///
        /// ```swift
        /// options.indexBuildProgress = { progress in FileHandle.standardError.write(Data("\(progress)\n".utf8)) }
        /// ```
        public var indexBuildProgress: (@Sendable (IndexBuildProgress) -> Void)? = nil

        /// Migrates the stored objects of every entity that changed, when opening a store whose
        /// recorded schema differs from the one given (Docs/Contexts.md, "Schema evolution"):
        /// called once per stored object with its stored values and the automatic migration's
        /// result, which it may change. Default nil: only automatic (lightweight) migrations
        /// run, and a type change or a new required attribute without a default fails the open
        /// with ``ContextError/incompatibleSchema(_:)``.
        ///
        /// Runs on the opening thread, before the open's single commit: throwing, or leaving
        /// values that do not fit, fails the open with ``ContextError/migrationFailed(_:reason:)``
        /// and writes nothing. Cannot change after open.
        ///
        /// ```swift
        /// options.migration = { record in
        ///     if case .string(let text) = record.storedValues["age"] ?? .null {
        ///         record.values["age"] = .int(Int64(text) ?? 0)
        ///     }
        /// }
        /// ```
        public var migration: (@Sendable (inout MigrationRecord) throws -> Void)? = nil

        /// Called while opening the store migrates it: every 10,000 records of each entity, and
        /// once per entity after the commit. Default nil.
        ///
        /// ```swift
        /// options.migrationProgress = { progress in FileHandle.standardError.write(Data("\(progress)\n".utf8)) }
        /// ```
        public var migrationProgress: (@Sendable (MigrationProgress) -> Void)? = nil

        /// Whether every save is recorded in the store's persistent history, in the save's own
        /// commit (Docs/Contexts.md, "Persistent history"): Core Data's
        /// `NSPersistentHistoryTrackingKey`. Default `false`.
        ///
        /// Promise: ``ObjectStore/fetchHistory(after:limit:)`` returns, in any process, one
        /// ``HistoryTransaction`` per save that reached the store, never one ahead of or behind
        /// the data (after a crash too), until ``ObjectStore/deleteHistory(before:)`` removes it.
        /// Price: one JSON record per save (its object IDs and changed property names), and this
        /// object store's commits are made one at a time (no group commit between its saves), so
        /// each record gets its commit's exact version. Can be changed between opens: saves made
        /// without it leave no transactions.
        ///
        /// ```swift
        /// options.tracksHistory = true
        /// ```
        public var tracksHistory = false

        /// Whether the object store watches for commits it did not make (another process, or
        /// another ObjectStore on the same engine store) and announces their history
        /// transactions: on ``ObjectStore/remoteChanges`` and as
        /// ``Foundation/Notification/Name/cairnStoreRemoteChange``. Core Data's
        /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`. Default `false`.
        ///
        /// Price: one thread per object store, woken by inotify on the store's log directory
        /// (and every 0.2 s as a fallback). After each wake it reads the newest commit version
        /// every 0.2 ms for 10 ms, then every millisecond up to 0.1 s (a commit is visible only
        /// after its sync), so under a steady stream of commits it reads the version about
        /// 5,000 times a second. Only saves of stores that track history are announced. Cannot
        /// change after open.
        ///
        /// ```swift
        /// options.observesRemoteChanges = true
        /// ```
        public var observesRemoteChanges = false

        /// The local engine's options (``mapSize``, and package-wide the rest): used when the
        /// object store opens a directory itself.
        var engine = EngineOptions()

        /// The defaults described on each property.
        ///
        /// ```swift
        /// let options = ObjectStore.Options()
        /// ```
        public init() {}
    }

    /// The schema every context validates against.
    ///
    /// ```swift
    /// objects.schema.entity(named: "Person")
    /// ```
    public let schema: Schema

    /// The options the object store was opened with.
    ///
    /// ```swift
    /// objects.options.maxSaveAttempts   // 8
    /// ```
    public let options: Options

    /// The main-queue context for UI-facing reads. `@MainActor`, as Core Data's is in Swift:
    /// reach it on the main actor, where it may be used directly, or take it there and hand
    /// it to `perform` / `performAndWait` from anywhere (the context is `Sendable`; its blocks
    /// run on the main queue).
    ///
    /// ```swift
    /// @MainActor func names(_ objects: ObjectStore) throws -> [AttributeValue] {
    ///     try objects.viewContext.fetch(FetchRequest(entityName: "Person")).map { $0["name"] }
    /// }
    /// let view = await objects.viewContext          // from a task off the main actor
    /// let count = try await view.perform { try view.count(for: FetchRequest(entityName: "Person")) }
    /// ```
    @MainActor public var viewContext: ObjectContext { mainQueueContext }

    /// ``viewContext``, for the package's own code, which knows which queue it is on.
    let mainQueueContext: ObjectContext

    let coordinator: StoreCoordinator

    /// Announces other writers' transactions; nil unless `options.observesRemoteChanges`.
    let remoteChangeWatcher: RemoteChangeWatcher?

    /// Uses `storage` with `schema`: the designated initializer every backend's goes through.
    /// Migrates the stored objects to the schema when the store recorded another one
    /// (SchemaMigration.swift), builds the indexes the schema adds and drops the ones it
    /// removed, all in one commit (IndexReconciliation.swift), before any context can read.
    package init(storage: any ObjectStorage, schema: Schema, options: Options = Options()) throws(ContextError) {
        try IndexReconciliation.run(storage: storage, schema: schema, options: options)
        self.schema = schema
        self.options = options
        coordinator = StoreCoordinator(storage: storage, schema: schema, options: options)
        mainQueueContext = ObjectContext(name: "viewContext", concurrencyType: .mainQueue, core: coordinator)
        if options.observesRemoteChanges {
            let start: UInt64
            do { start = try storage.commitVersion() } catch { throw ContextError.storage(error) }
            remoteChangeWatcher = RemoteChangeWatcher(coordinator: coordinator, after: start)
        } else {
            remoteChangeWatcher = nil
        }
        remoteChangeWatcher?.start(announcingTo: self)
    }

    deinit {
        remoteChangeWatcher?.stop()
    }

    /// A new private-queue context: its own serial queue, its own objects.
    ///
    /// ```swift
    /// let importer = objects.newBackgroundContext(name: "importer", mergePolicy: .objectTrump)
    /// ```
    public func newBackgroundContext(name: String? = nil, mergePolicy: any MergePolicy = .error) -> ObjectContext {
        let context = ObjectContext(
            name: name ?? "background-\(Self.nextContextNumber())", concurrencyType: .privateQueue, core: coordinator)
        context.mergePolicy = mergePolicy
        return context
    }

    /// A new context of either concurrency type; a `.mainQueue` one shares the main queue with
    /// ``viewContext``.
    ///
    /// ```swift
    /// let editor = objects.newContext(name: "editor", concurrencyType: .mainQueue)
    /// ```
    public func newContext(name: String, concurrencyType: ObjectContext.ConcurrencyType, mergePolicy: any MergePolicy = .error) -> ObjectContext {
        let context = ObjectContext(name: name, concurrencyType: concurrencyType, core: coordinator)
        context.mergePolicy = mergePolicy
        return context
    }

    /// Closes the store. Contexts must not save afterwards (their saves fail with
    /// ``ContextError/storage(_:)`` whose code is `.closed`).
    ///
    /// ```swift
    /// objects.close()
    /// ```
    public func close() {
        remoteChangeWatcher?.stop()
        coordinator.storage.close()
    }

    private static let contextCounter = ConditionLock<Int>(0)

    static func nextContextNumber() -> Int {
        contextCounter.withLock { count in
            count += 1
            return count
        }
    }
}
