// Reading and trimming the persistent history (Core Data's NSPersistentHistoryChangeRequest):
// a range read and a range delete of `meta:history`, whose keys are commit versions.

extension ObjectStore {
    /// The transactions recorded after `token`, oldest first: Core Data's
    /// `fetchHistory(after:)`. Works in any process that can read the store, whether or not
    /// this object store tracks history itself.
    ///
    /// ```swift
    /// let transactions = try objects.fetchHistory(after: lastToken)
    /// lastToken = transactions.last?.token ?? lastToken
    /// ```
    ///
    /// - Parameter limit: at most this many (the oldest ones); nil for every one.
    /// - Throws: ``ContextError/storage(_:)``, with code `.corrupt` for a record that does not
    ///   decode (nothing is skipped).
    public func fetchHistory(after token: HistoryToken = .start, limit: Int? = nil) throws(ContextError) -> [HistoryTransaction] {
        try coordinator.history(after: token, limit: limit)
    }

    /// Deletes every transaction before `token` (those whose token is lower), in commits of at
    /// most 1,000 records; returns how many. Core Data's `deleteHistory(before:)`: the history
    /// is as large as the application lets it grow.
    ///
    /// ```swift
    /// try objects.deleteHistory(before: oldestTokenAnyReaderStillNeeds)
    /// ```
    ///
    /// - Throws: ``ContextError/storage(_:)``; the transactions deleted by the commits before
    ///   the failure stay deleted, the others stay.
    @discardableResult
    public func deleteHistory(before token: HistoryToken) throws(ContextError) -> Int {
        var deleted = 0
        while true {
            let view = try coordinator.readView()
            var keys: [[UInt8]] = []
            do {
                try view.forEach(in: StorageMapping.historyTable, from: nil, to: StorageMapping.key(for: token.version),
                                 reverse: false) { key, _, _ in
                    keys.append(Array(key))
                    return keys.count < 1_000
                }
            } catch {
                view.close()
                throw ContextError(readFailure: error)
            }
            view.close()
            guard !keys.isEmpty else { return deleted }
            var batch = StorageBatch()
            for key in keys { batch.delete(key, in: StorageMapping.historyTable, if: nil) }
            do {
                _ = try coordinator.storage.commit(batch, durability: options.saveDurability)
            } catch {
                throw ContextError.storage(error)
            }
            deleted += keys.count
        }
    }

    /// The position after the newest commit: `fetchHistory(after:)` with it returns only
    /// transactions committed later. Core Data's `currentPersistentHistoryToken`.
    ///
    /// ```swift
    /// let token = try objects.currentHistoryToken()
    /// ```
    ///
    /// - Throws: ``ContextError/storage(_:)``.
    public func currentHistoryToken() throws(ContextError) -> HistoryToken {
        do { return HistoryToken(version: try coordinator.storage.commitVersion()) } catch { throw ContextError.storage(error) }
    }

    /// The history transactions other writers commit (other processes, other ObjectStores on
    /// the same engine store), as the watcher sees them: each once, in commit order, starting
    /// after `token` (the transactions recorded since then come first), or, when nil, with the
    /// ones committed after this call. This object store's own saves are not in it. Needs
    /// ``Options-swift.struct/observesRemoteChanges``; without it, this stops the process with
    /// a message. The stream ends when the store closes.
    ///
    /// ```swift
    /// for await transaction in objects.remoteChanges(after: lastToken) {
    ///     try await view.perform { try view.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
    ///     lastToken = transaction.token
    /// }
    /// ```
    public func remoteChanges(after token: HistoryToken? = nil) -> AsyncStream<HistoryTransaction> {
        guard let remoteChangeWatcher else {
            contextMisuse("ObjectStore.remoteChanges needs ObjectStore.Options.observesRemoteChanges = true when the store is opened")
        }
        return remoteChangeWatcher.stream(after: token)
    }
}
