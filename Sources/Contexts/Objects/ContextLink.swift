import Synchronization

/// How a registered object reaches its context without a reference count on the context: the
/// context owns one link, shared by its objects (which hold it strongly), with an unretained
/// reference to the context and an `alive` flag; this keeps a weak load and a release off every
/// property access.
///
/// Relies on: the reference is used only while `alive` is set, and the context clears it in
/// `deinit`, so an object that outlives its context finds it gone (`context` is nil, a property
/// access stops with the misuse message) and never dangles; `reference` is written once, before
/// the context is shared (hence `@unchecked Sendable`). Pinned by
/// `MisuseTests.objectAfterContextDeallocated` and
/// `ContainedTricksTests.anObjectWhoseContextIsGoneFindsNoContext`.
final class ContextLink: @unchecked Sendable {
    private var reference: Unmanaged<ObjectContext>?
    private let alive = Atomic<Bool>(true)
    /// The context's name, for misuse messages (here, not in each object).
    let name: String

    init(name: String) {
        self.name = name
    }

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

/// Why a context forgot an object, and which context: what a later use of the object says.
/// One for all the objects a reset forgets.
final class Forgetting: Sendable {
    /// Completes "used after …".
    let reason: String
    let contextName: String

    init(reason: String, contextName: String) {
        self.reason = reason
        self.contextName = contextName
    }
}
