// Hooks for tests: who holds a read's origins (`StoredObject.borrowsOrigin`,
// `ObjectContext.readOrigins`). `package`: not public API.

extension ObjectContext {
    /// How many read origins the context holds for objects that borrow them.
    package var readOriginCount: Int {
        checkQueue()
        return readOrigins.count
    }
}

extension StoredObject {
    /// Whether the object holds a reference count on its origin (not borrowed from its context).
    package var holdsOriginCount: Bool { !borrowsOrigin }
}
