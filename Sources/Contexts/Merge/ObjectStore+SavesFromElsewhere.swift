// Saves made outside this ObjectStore (another process or host on a shared backend, such as
// etcd) reach its contexts the way another root context's save does: root contexts that
// automatically merge changes merge them on their own queues.

extension ObjectStore {
    /// Merges `note`, a save this store did not make, into every root context whose
    /// `automaticallyMergesChangesFromParent` is on, each on its own queue.
    package func mergeSaveFromElsewhere(_ note: ContextDidSaveNotification) {
        let roots = WeakContext.alive(coordinator.rootContexts.withLock { $0 })
        for root in roots where root.automaticallyMergesChangesFromParent {
            root.perform { [weak root] in root?.mergeAutomatically(note, prefetched: ObjectIDTable()) }
        }
    }
}
