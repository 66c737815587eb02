import Policies

// Hooks for the merge-scenario runner (`cairn scenario`) and tests: read a context's and the
// store's state of an object without going through objects. `package`: not public API.

extension ObjectContext {
    /// The context's in-memory state of `id`, or nil when the object is not registered.
    ///
    /// ```swift
    /// context.inMemoryState(of: id)   // .values(["age": 31, …])
    /// ```
    package func inMemoryState(of id: ObjectID) -> InMemoryState? {
        checkQueue()
        guard let object = registeredObject(for: id) else { return nil }
        if object.isFaultStorage { fulfillFault(object) }
        return object.deletedFlag ? .deleted : .values(object.current.dictionary(object.entity.layout))
    }

    /// The committed record of `id`: values and record version, or nil when absent.
    ///
    /// ```swift
    /// try context.committedState(of: id)?.version
    /// ```
    package func committedState(of id: ObjectID) throws(ContextError) -> (values: PropertyValues, version: UInt64)? {
        try core.committedState(of: id)
    }

    /// The ID this context holds the object of `id` under now (a temporary ID followed to the
    /// permanent one the object got), or nil when the object is not registered here.
    ///
    /// ```swift
    /// root.currentID(of: temporaryID)   // cairn://Person/p3 after the root saved it
    /// ```
    package func currentID(of id: ObjectID) -> ObjectID? {
        checkQueue()
        return registeredObject(for: id)?.storedID
    }
}

extension ObjectStore {
    /// The committed record of `id`: values and record version, or nil when absent.
    ///
    /// ```swift
    /// try objects.committedState(of: ObjectID(entityName: "Person", primaryKey: 1))
    /// ```
    package func committedState(of id: ObjectID) throws(ContextError) -> (values: PropertyValues, version: UInt64)? {
        try coordinator.committedState(of: id)
    }
}
