import Synchronization

/// How a registered object reaches its context: without a reference count on the context.
///
/// Every property access checks the object's queue through its context, so the way from an
/// object to its context is on the path of every `value(forKey:)` and `setValue(_:forKey:)`.
/// A weak reference there cost more than the check itself: loading it takes the runtime's weak
/// path, and the strong reference it yields must be released again, on the context's side
/// table (contexts always have one: parents and stores hold them weakly), the slow path of
/// release. A fetch-change-save of 10,000 objects spent a fiftieth of its instructions there.
///
/// So a context owns one link, shared by all its objects, which keep it strongly: the link
/// holds an unretained reference to the context and a flag the context clears in `deinit`.
/// An object reads the flag (one atomic load) and calls its context through the unretained
/// reference without retaining it. The reference is never used after the flag is cleared, so
/// it never dangles: a use after the context is gone finds the flag cleared and stops the
/// process with the usual message.
///
/// `@unchecked Sendable`: `reference` is written once, by the context's initializer, before
/// the context is shared; `alive` is atomic.
final class ContextLink: @unchecked Sendable {
    private var reference: Unmanaged<ObjectContext>?
    private let alive = Atomic<Bool>(true)

    /// Called once, at the end of the context's initializer.
    func attach(_ context: ObjectContext) {
        reference = Unmanaged.passUnretained(context)
    }

    /// Called by the context's `deinit`: no object reaches it after this.
    func close() {
        alive.store(false, ordering: .releasing)
    }

    /// The context, while it lives.
    var context: ObjectContext? {
        guard alive.load(ordering: .acquiring) else { return nil }
        return reference?.takeUnretainedValue()
    }

    /// Runs `body` with the context, not retained (the caller's object keeps the link, and
    /// the context is alive while the flag is set); nil when the context is gone.
    @inline(__always)
    func withContext<R>(_ body: (ObjectContext) -> R) -> R? {
        guard alive.load(ordering: .acquiring), let reference else { return nil }
        return reference._withUnsafeGuaranteedRef(body)
    }
}
