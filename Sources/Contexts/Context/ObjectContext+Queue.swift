import Dispatch
import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The concurrency API. Rule (Docs/Contexts.md): a context and its objects are used only on
// the context's queue; these three functions are the ways onto it.

extension ObjectContext {
    /// Runs `body` on the context's queue later, in FIFO order with other `perform` calls, and
    /// returns at once.
    ///
    /// ```swift
    /// context.perform {
    ///     let person = context.insert(entity: "Person")
    ///     person["name"] = .string("Ann")
    ///     try? context.save()
    /// }
    /// ```
    public func perform(_ body: @escaping @Sendable () -> Void) {
        let access = BorrowedQueues(context: self)
        // Weak: a queued block does not keep its context alive (it runs either way).
        queue.async { [weak self] in access.run { self?.runningHere(body) ?? body() } }
    }

    /// Not the way to run a throwing block from synchronous code: `perform` does not wait, so
    /// an error would have nowhere to go. Write `try context.performAndWait { try … }` (which
    /// waits and rethrows), or `try await context.perform { try … }` in async code. This
    /// overload exists so that `context.perform { try context.save() }` in synchronous code
    /// gets that advice (and, with `try`, works as `performAndWait`) instead of a misleading
    /// "'async' call in a function that does not support concurrency".
    ///
    /// ```swift
    /// try context.performAndWait { try context.save() }   // the spelling to use
    /// ```
    ///
    /// - Throws: what `body` throws.
    @available(*, deprecated, message: "perform { } does not wait, so it cannot throw: write try context.performAndWait { try … } in synchronous code, try await context.perform { try … } in async code")
    public func perform(_ body: () throws -> Void) rethrows {
        try performAndWait(body)
    }

    /// Runs `body` on the context's queue and waits for it; returns its result or rethrows its
    /// error. Re-entrant: already on the queue, it runs `body` inline.
    ///
    /// `body` may use the context's objects, and return them (they must then stay on the queue,
    /// so do that only when the caller is already on it).
    ///
    /// While `body` runs, the caller's thread waits, so the contexts whose queues the caller was
    /// on stay usable inside `body` (a child's fetch may read its main-queue parent from a
    /// `performAndWait` called on the main thread, for example).
    ///
    /// Do not call it for a main-queue context from a thread that the main queue is waiting on,
    /// nor between two contexts that wait on each other: that deadlocks, as in Core Data.
    ///
    /// ```swift
    /// let count = try context.performAndWait {
    ///     try context.count(for: FetchRequest(entityName: "Person"))
    /// }
    /// ```
    public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
        if isOnQueue { return try body() }
        return try waitingOnQueue(body, rescue: { throw $0 })
    }

    /// `performAndWait` from off the queue. The block goes through the queue's non-generic
    /// `sync`, its outcome kept here: the overlay's generic, rethrowing `sync` ran unspecialised
    /// from the Dispatch library, about 1,000 instructions more per call. The value waits in a
    /// slot of `T` (an optional `T` needed its metadata looked up twice per call).
    private func waitingOnQueue<T>(_ body: () throws -> T, rescue: (any Error) throws -> T) rethrows -> T {
        let access = BorrowedQueues.here.entering(self, fromMainQueue: BorrowedQueues.isOnMainQueue)
        return try withUnsafeTemporaryAllocation(of: T.self, capacity: 1) { slot in
            var failure: (any Error)? = nil
            queue.sync {
                access.run {
                    runningHere {
                        do { slot.baseAddress!.initialize(to: try body()) } catch { failure = error }
                    }
                }
            }
            if let failure { return try rescue(failure) }
            return slot.baseAddress!.move()
        }
    }

    /// Runs `body` on the context's queue, in FIFO order with `perform` calls, and returns its
    /// result (or throws its error) to the awaiting task without blocking a thread.
    ///
    /// ```swift
    /// let id = try await context.perform {
    ///     let person = context.insert(entity: "Person")
    ///     person["name"] = .string("Ann")
    ///     try context.save()
    ///     return person.objectID
    /// }
    /// ```
    public func perform<T: Sendable>(_ body: @Sendable () throws -> T) async throws -> T {
        try await withoutActuallyEscaping(body) { escapable in
            let work = OneShotWork(escapable)
            return try await withCheckedThrowingContinuation { continuation in
                let access = BorrowedQueues(context: self)
                queue.async {
                    // `run()` drops the closure before the continuation resumes, so `body` has
                    // not escaped when withoutActuallyEscaping checks on return.
                    continuation.resume(with: access.run { [weak self] in self?.runningHere { work.run() } ?? work.run() })
                }
            }
        }
    }

    /// Whether the current code runs on the context's queue (for a main-queue context: on the
    /// main queue, which includes the main thread outside any other queue), or inside a
    /// `performAndWait` of another context called from it (its queue then waits for us).
    ///
    /// ```swift
    /// context.performAndWait { context.isOnQueue }   // true
    /// ```
    public var isOnQueue: Bool {
        if runningThread.load(ordering: .relaxed) == Self.currentThread { return true }
        if DispatchQueue.getSpecific(key: queueKey) != nil { return true }
        return BorrowedQueues.here.includes(self)
    }

    /// Runs `body`, a block on this context's queue, noting its thread in `runningThread`.
    ///
    /// Every property access checks the queue, and the general check (a dispatch-specific
    /// lookup, then the borrowed queues) costs more than many accesses themselves. While a
    /// block of this context runs, the thread running it is on the queue by definition, so
    /// `isOnQueue` first compares thread identities: one atomic load. Only the running block's
    /// own thread can ever find its identity there (it stores it, and clears it before it
    /// returns), so a stale value seen by another thread never matches that thread.
    func runningHere<T>(_ body: () throws -> T) rethrows -> T {
        let previous = runningThread.exchange(Self.currentThread, ordering: .relaxed)
        defer { runningThread.store(previous, ordering: .relaxed) }
        return try body()
    }

    /// The calling thread's identity, as `runningThread` holds it (never 0).
    static var currentThread: UInt {
        #if canImport(Glibc)
        pthread_self()  // an integer on Linux (a pointer on Darwin)
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }

    /// Stops the process when called off the context's queue (unless checks are off).
    @inline(__always)
    func checkQueue() {
        guard checksQueueAccess, !isOnQueue else { return }
        contextMisuse(
            "ObjectContext '\(name)' used off its queue: wrap the access in context.perform { } or "
                + "performAndWait { }" + (concurrencyType == .mainQueue ? " (or run it on the main thread)" : ""))
    }
}

/// The contexts whose queues are blocked waiting for the code running now: `performAndWait`
/// from context A's queue (or the main queue) into context B lets the block use A too, because
/// A's queue cannot run anything else until the block returns. This is what makes a child's
/// synchronous read of its parent work when the parent's queue is the one waiting (a child of
/// the main-queue context used with `performAndWait` on the main queue).
///
/// Bound to the thread for the duration of each block that `perform`, the async `perform` and
/// `performAndWait` run, and valid only on the block's thread while the block runs: a `Task` made
/// inside the block does not get the access.
///
/// The binding is a thread-local pointer to the value on `run`'s stack (a task-local, with a
/// lease object to end it, cost about 1,100 instructions per block). Relies on: `run` sets it
/// before the block and restores the outer block's pointer after, on the same thread, so `here`
/// reads only a value whose `run` is still on this thread's stack; a task made in the block
/// runs on a thread of its own (or after the block), where the pointer is another block's or
/// none. Pinned by `ChildContextTests.lentQueueNotInherited` and
/// `ConcurrencyTests.aBlocksLentQueuesEndWithIt`.
struct BorrowedQueues: Sendable {
    /// The waiting contexts: the first inline, the others in a set. One is the usual case (a
    /// `performAndWait` from outside any context), and a set made for it cost an allocation
    /// and a hash on every `performAndWait` (about 600 of a fetch-indexed request's 38,800
    /// instructions).
    private var firstContext: ObjectIdentifier? = nil
    private var moreContexts: Set<ObjectIdentifier> = []
    /// The main queue waits: main-queue contexts are usable.
    private var mainQueue = false

    /// The thread-local slot: the address of the value the block running on this thread bound.
    private static let binding: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// Marks the main queue, to tell whether code runs on it. (Not `Thread.isMainThread`: after
    /// `dispatchMain()` the main queue's blocks run on worker threads.) Set on the main queue
    /// once, when first read; a static's lazy initialisation is thread-safe.
    private static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the current code runs on the main queue (the main thread outside other queues
    /// included).
    static var isOnMainQueue: Bool {
        DispatchQueue.getSpecific(key: mainQueueKey) != nil
    }

    /// What the code running now may use: nothing, unless it runs inside a block that bound it.
    static var here: BorrowedQueues {
        guard let bound = pthread_getspecific(binding) else { return BorrowedQueues() }
        return bound.assumingMemoryBound(to: BorrowedQueues.self).pointee
    }

    init() {}

    init(context: ObjectContext) {
        firstContext = ObjectIdentifier(context)
    }

    func entering(_ context: ObjectContext, fromMainQueue: Bool) -> BorrowedQueues {
        var access = self
        let id = ObjectIdentifier(context)
        if access.firstContext == nil || access.firstContext == id {
            access.firstContext = id
        } else {
            access.moreContexts.insert(id)
        }
        access.mainQueue = access.mainQueue || fromMainQueue
        return access
    }

    func includes(_ context: ObjectContext) -> Bool {
        let id = ObjectIdentifier(context)
        return firstContext == id || (!moreContexts.isEmpty && moreContexts.contains(id)) || (mainQueue && context.concurrencyType == .mainQueue)
    }

    /// Runs `body` (a block on a context's queue) with this access, on this thread, until it returns.
    func run<T>(_ body: () throws -> T) rethrows -> T {
        var bound = self
        let outer = pthread_getspecific(Self.binding)
        return try withUnsafeMutablePointer(to: &bound) { pointer in
            pthread_setspecific(Self.binding, pointer)
            defer { pthread_setspecific(Self.binding, outer) }
            return try body()
        }
    }
}
