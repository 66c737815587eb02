import Policies

// Reading an object that may have been deleted, without stopping the process. The property
// subscripts cannot throw, so an object its context forgot (a merged or saved deletion, a
// refresh that found it deleted, reset) or a fault whose record is gone stops the process
// there; these throw instead (Docs/Contexts.md, "Objects deleted elsewhere").

extension StoredObject {
    /// The object's current values, loading a fault; throws instead of stopping the process
    /// when the object's record is gone.
    ///
    /// ```swift
    /// do {
    ///     let values = try person.existingValues()
    /// } catch ContextError.objectNotFound(let id) {
    ///     // deleted by a merge, a save, or in the store
    /// }
    /// ```
    ///
    /// - Throws: ``ContextError/objectNotFound(_:)`` when the context forgot the object, or it
    ///   is a fault whose record no longer exists (the context then forgets it); a storage
    ///   error from loading the fault. Off the context's queue it stops the process, as every
    ///   access does (Rule C7).
    public func existingValues() throws(ContextError) -> PropertyValues {
        try checkExists()
        return current.dictionary(entity.layout)
    }

    /// Whether the object can be read: registered in a live context (on its queue), with its
    /// values loaded now if it was a fault.
    ///
    /// - Throws: ``ContextError/objectNotFound(_:)`` as ``existingValues()``.
    func checkExists() throws(ContextError) {
        switch lifecycle {
        case .unattached:
            return
        case .forgotten:
            throw ContextError.objectNotFound(storedID)
        case .registered:
            guard let owner else { checkAccess(); return }  // a deallocated context: the usual message
            owner.checkQueue()
            guard isFaultStorage else { return }
            guard let record = try owner.baseState(of: storedID, entity: entity) else {
                owner.forget(self, reason: "it was found deleted in the store")
                throw ContextError.objectNotFound(storedID)
            }
            owner.load(record, into: self)
        }
    }
}
