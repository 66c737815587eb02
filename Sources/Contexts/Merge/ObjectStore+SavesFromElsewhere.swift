// Saves made outside this ObjectStore (another process or host on a shared backend, such as
// etcd) reach its contexts the way another root context's save does: root contexts that
// automatically merge changes merge them on their own queues. A backend whose feed of them
// costs something on every commit (etcd's watch reads each one back) starts it only when the
// first root context turns automatic merging on.

extension ObjectStore {
    /// Merges `note`, a save this store did not make, into every root context whose
    /// `automaticallyMergesChangesFromParent` is on, each on its own queue.
    package func mergeSaveFromElsewhere(_ note: ContextDidSaveNotification) {
        let roots = WeakContext.alive(coordinator.rootContexts.withLock { $0 })
        for root in roots where root.automaticallyMergesChangesFromParent {
            root.perform { [weak root] in root?.mergeAutomatically(note, prefetched: ObjectIDTable()) }
        }
    }

    /// Runs `start` once: when the first root context turns
    /// ``ObjectContext/automaticallyMergesChangesFromParent`` on, or now if one already has.
    package func whenSavesFromElsewhereAreWanted(_ start: @escaping @Sendable () -> Void) {
        coordinator.whenSavesFromElsewhereAreWanted(start)
    }
}

/// Whether a root context wants saves made elsewhere yet, and what starts their feed.
struct SavesFromElsewhereDemand {
    var wanted = false
    var start: (@Sendable () -> Void)?
}

extension StoreCoordinator {
    func whenSavesFromElsewhereAreWanted(_ start: @escaping @Sendable () -> Void) {
        let runNow = savesFromElsewhere.withLock { demand -> Bool in
            if demand.wanted { return true }
            demand.start = start
            return false
        }
        if runNow { start() }
    }

    /// A root context turned automatic merging on.
    func rootContextWantsSavesFromElsewhere() {
        let start = savesFromElsewhere.withLock { demand -> (@Sendable () -> Void)? in
            demand.wanted = true
            defer { demand.start = nil }
            return demand.start
        }
        start?()
    }
}
