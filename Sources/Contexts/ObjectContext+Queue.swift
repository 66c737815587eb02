import Dispatch

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
        queue.async(execute: body)
    }

    /// Runs `body` on the context's queue and waits for it; returns its result or rethrows its
    /// error. Re-entrant: already on the queue, it runs `body` inline.
    ///
    /// `body` may use the context's objects, and return them (they must then stay on the queue,
    /// so do that only when the caller is already on it).
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
        return try queue.sync(execute: body)
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
                queue.async {
                    // `run()` drops the closure before the continuation resumes, so `body` has
                    // not escaped when withoutActuallyEscaping checks on return.
                    continuation.resume(with: work.run())
                }
            }
        }
    }

    /// Whether the current code runs on the context's queue (for a main-queue context: on the
    /// main queue, which includes the main thread outside any other queue).
    ///
    /// ```swift
    /// context.performAndWait { context.isOnQueue }   // true
    /// ```
    public var isOnQueue: Bool {
        DispatchQueue.getSpecific(key: queueKey) != nil
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

/// Holds a non-escaping closure for exactly one run on a context's queue.
///
/// `@unchecked Sendable`: `body` is written at init and read and cleared once, by the single
/// block on the context's queue that runs it; the queue hand-off orders the two.
private final class OneShotWork<T: Sendable>: @unchecked Sendable {
    private var body: (@Sendable () throws -> T)?

    init(_ body: @escaping @Sendable () throws -> T) { self.body = body }

    func run() -> Result<T, any Error> {
        guard let body else { preconditionFailure("OneShotWork runs once") }
        self.body = nil
        return Result { try body() }
    }
}
