
// Query generations (Core Data's NSQueryGenerationToken): a root context can read one version of
// the store for as long as it likes. Unpinned (the default), every read takes a fresh snapshot.
// Pinned, fetches, faults and existingObject read the pinned snapshot until the context
// advances: a save, a merge, a reset, or a new token. Advancing drops the snapshot and pins the
// then-current generation at the next read; registered objects keep their values (fetch again or
// refresh them). refresh(_:mergeChanges:) reads the latest commit either way.

extension ObjectContext {
    /// The query generation the context reads: nil when unpinned (every read sees the latest
    /// commit), otherwise the pinned generation.
    ///
    /// A context set to ``QueryGenerationToken/current`` that has not read since is pinned now by
    /// this call, so the token it returns can align other contexts
    /// (``setQueryGenerationFrom(_:)``). If pinning fails (the store is closed), it returns
    /// `.current` and the next read reports the error.
    ///
    /// ```swift
    /// try context.setQueryGenerationFrom(.current)
    /// let token = context.queryGenerationToken   // pinned at the current version
    /// try other.performAndWait { try other.setQueryGenerationFrom(token) }
    /// ```
    public var queryGenerationToken: QueryGenerationToken? {
        checkQueue()
        switch generationState {
        case .unpinned:
            return nil
        case .pinnedAtNextRead:
            guard let generation = try? PinnedGeneration(core: core) else { return .current }
            generationState = .pinned(generation)
            return QueryGenerationToken(generation: generation)
        case .pinned(let generation):
            return QueryGenerationToken(generation: generation)
        }
    }

    /// Pins the context to a query generation, aligns it with another context's, or unpins it.
    ///
    /// - `.current`: pinned lazily: the next read pins the generation current then.
    /// - a token from ``queryGenerationToken`` or ``ObjectStore/currentQueryGenerationToken()``:
    ///   every read uses that generation's snapshot (shared with whoever else holds it).
    /// - nil: unpinned; every read sees the latest commit.
    ///
    /// Registered objects keep their values; fetch again or refresh them to see the generation.
    /// A pinned context stays on its generation until it saves, merges a did-save, is reset, or
    /// is given a token again (each of which moves it to the generation current at its next read).
    ///
    /// ```swift
    /// try report.setQueryGenerationFrom(.current)
    /// let first = try report.fetch(request)
    /// // … other contexts save …
    /// let second = try report.fetch(request)   // the same values as `first`
    /// ```
    ///
    /// - Throws: ``QueryGenerationError/childContext(_:)`` for a child context (it reads through
    ///   its parent: pin the root), ``QueryGenerationError/otherStore(directory:)`` for a token of
    ///   another store.
    public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws(QueryGenerationError) {
        checkQueue()
        if parent != nil { throw QueryGenerationError.childContext(name) }
        guard let token else {
            generationState = .unpinned
            return
        }
        guard let generation = token.generation else {
            generationState = .pinnedAtNextRead
            return
        }
        guard generation.core.storage === core.storage else {
            throw QueryGenerationError.otherStore(directory: generation.core.storage.location)
        }
        generationState = .pinned(generation)
    }

    /// Moves a pinned context to the generation current at its next read (after a save, merge
    /// or reset); an unpinned context is unaffected.
    func advanceQueryGeneration() {
        if case .pinned = generationState { generationState = .pinnedAtNextRead }
    }
}

extension ObjectStore {
    /// A query generation pinned now, at the latest commit: give it to several contexts with
    /// ``ObjectContext/setQueryGenerationFrom(_:)`` so they all read the same version.
    ///
    /// ```swift
    /// let token = try objects.currentQueryGenerationToken()
    /// try await chart.perform { try chart.setQueryGenerationFrom(token) }
    /// try await table.perform { try table.setQueryGenerationFrom(token) }
    /// ```
    ///
    /// - Throws: ``ContextError/storage(_:)`` when the store cannot open a snapshot (closed).
    public func currentQueryGenerationToken() throws(ContextError) -> QueryGenerationToken {
        QueryGenerationToken(generation: try PinnedGeneration(core: coordinator))
    }

    /// The pinned query generations open now, and the oldest one's version and age: what
    /// pinning costs (each holds LMDB pages alive; the engine's `StoreStats.oldestSnapshotVersion`
    /// and `oldestSnapshotAge` include them, among all open snapshots).
    ///
    /// ```swift
    /// let pinned = objects.queryGenerationStats
    /// print(pinned.count, pinned.oldestVersion ?? 0, pinned.oldestAge ?? 0)
    /// ```
    public var queryGenerationStats: QueryGenerationStats {
        let now = ContinuousClock.now
        return coordinator.pinnedGenerations.withLock { generations in
            let oldest = generations.values.min {
                $0.version != $1.version ? $0.version < $1.version : $0.pinnedAt < $1.pinnedAt
            }
            return QueryGenerationStats(
                count: generations.count, oldestVersion: oldest?.version,
                oldestAge: oldest.map { Self.seconds(now - $0.pinnedAt) })
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
