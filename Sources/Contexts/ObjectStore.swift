import Dispatch
import KVEngine
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
        public var saveDurability: Durability = .full

        /// The engine's options, used when the object store opens the directory itself.
        ///
        /// ```swift
        /// options.storeOptions.mapSize = 1 << 30
        /// ```
        public var storeOptions = Store.Options()

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

    /// The engine underneath; use it only for what contexts do not offer (stats, checkpoints).
    ///
    /// ```swift
    /// print(try objects.store.stats())
    /// ```
    public let store: Store

    /// The options the object store was opened with.
    ///
    /// ```swift
    /// objects.options.maxSaveAttempts   // 8
    /// ```
    public let options: Options

    /// The main-queue context for UI-facing reads: use it inside `perform` or
    /// `performAndWait`, or directly on the main thread.
    ///
    /// ```swift
    /// let names = try objects.viewContext.performAndWait {
    ///     try objects.viewContext.fetch(FetchRequest(entityName: "Person")).map { $0["name"] }
    /// }
    /// ```
    public let viewContext: ObjectContext

    let core: StorageCore

    /// Opens (creating if needed) the store in `directory` and uses it with `schema`.
    ///
    /// ```swift
    /// let objects = try ObjectStore(directory: path, schema: schema)
    /// ```
    ///
    /// - Throws: `KVError` from opening the engine (for example `.locked` when another process
    ///   has it open).
    public convenience init(directory: String, schema: Schema, options: Options = Options()) throws(KVError) {
        let store = try Store(directory: directory, options: options.storeOptions)
        self.init(store: store, schema: schema, options: options)
    }

    /// Uses an already open engine store with `schema`.
    ///
    /// Entity tables are named `entity:<Entity>`; other tables of the store are left alone.
    ///
    /// ```swift
    /// let objects = ObjectStore(store: store, schema: schema)
    /// ```
    public init(store: Store, schema: Schema, options: Options = Options()) {
        self.schema = schema
        self.store = store
        self.options = options
        core = StorageCore(store: store, schema: schema, options: options)
        viewContext = ObjectContext(name: "viewContext", concurrencyType: .mainQueue, core: core)
    }

    /// A new private-queue context: its own serial queue, its own objects.
    ///
    /// ```swift
    /// let importer = objects.newBackgroundContext(name: "importer", mergePolicy: .objectTrump)
    /// ```
    public func newBackgroundContext(name: String? = nil, mergePolicy: any MergePolicy = .error) -> ObjectContext {
        let context = ObjectContext(
            name: name ?? "background-\(Self.nextContextNumber())", concurrencyType: .privateQueue, core: core)
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
        let context = ObjectContext(name: name, concurrencyType: concurrencyType, core: core)
        context.mergePolicy = mergePolicy
        return context
    }

    /// Closes the engine store. Contexts must not save afterwards (their saves fail with
    /// `ContextError.storage(.closed)`).
    ///
    /// ```swift
    /// objects.close()
    /// ```
    public func close() {
        store.close()
    }

    private static let contextCounter = ConditionLock<Int>(0)

    static func nextContextNumber() -> Int {
        contextCounter.withLock { count in
            count += 1
            return count
        }
    }
}
