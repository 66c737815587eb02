import Contexts

extension ObjectStore {
    /// Uses the store under `etcd.prefix` on an etcd v3 cluster with `schema`: the same
    /// contexts, saves and merge policies as on a local directory, shared by every process
    /// and host that opens the same cluster and prefix.
    ///
    /// ```swift
    /// let cluster = try EtcdConfiguration(url: "etcd://10.0.0.1:2379,10.0.0.2:2379/mytool")
    /// let objects = try ObjectStore(etcd: cluster, schema: schema)
    /// ```
    ///
    /// - Throws: ``ContextError/storage(_:)`` with code `.unreachable` when no member answers,
    ///   and what opening any store throws (schema migration, index builds).
    public convenience init(etcd: EtcdConfiguration, schema: Schema, options: Options = Options()) throws(ContextError) {
        let storage = EtcdStorage(configuration: etcd)
        do {
            try self.init(storage: storage, schema: schema, options: options)
        } catch {
            storage.close()
            throw error
        }
        // Saves of other processes and hosts, once a root context merges them: the watch
        // reads every commit on the prefix back, so it opens only then, from the revision
        // after the newest this storage has seen (nothing its contexts read is newer).
        let merge: @Sendable (RemoteCommit) -> Void = { [weak self] commit in
            self?.mergeSaveFromElsewhere(commit.didSave(location: etcd.url))
        }
        whenSavesFromElsewhereAreWanted { [weak storage] in storage?.startWatching(deliver: merge) }
    }

    /// Opens `location`: an `etcd://HOST:PORT[,...]/PREFIX` URL on etcd, anything else as a
    /// local directory.
    ///
    /// ```swift
    /// let objects = try ObjectStore(location: arguments[1], schema: schema)
    /// ```
    ///
    /// - Throws: ``ContextError/storage(_:)`` with code `.invalidInput` for a malformed etcd URL.
    public convenience init(location: String, schema: Schema, options: Options = Options()) throws(ContextError) {
        if EtcdConfiguration.isURL(location) {
            let configuration: EtcdConfiguration
            do { configuration = try EtcdConfiguration(url: location) } catch {
                throw ContextError.storage(StorageError(code: .invalidInput, operation: "open", message: error.description))
            }
            try self.init(etcd: configuration, schema: schema, options: options)
        } else {
            try self.init(directory: location, schema: schema, options: options)
        }
    }
}

extension RemoteCommit {
    /// The commit as another context's did-save.
    func didSave(location: String) -> ContextDidSaveNotification {
        var inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = []
        for (table, key, change) in changes {
            guard table.hasPrefix("entity:"), let primaryKey = StorageMapping.primaryKey(of: key) else { continue }
            let id = ObjectID(entityName: String(table.dropFirst("entity:".count)), primaryKey: primaryKey)
            switch change {
            case .inserted: inserted.append(id)
            case .updated: updated.append(id)
            case .deleted: deleted.append(id)
            }
        }
        return ContextDidSaveNotification(contextName: "saved elsewhere (\(location))", insertedObjectIDs: inserted,
                                          updatedObjectIDs: updated, deletedObjectIDs: deleted, commitVersion: UInt64(revision))
    }
}

extension EtcdConfiguration {
    /// The schema the store under this prefix recorded (its `meta:schema` record), or nil
    /// when it holds none: what tools read before opening it with the right schema.
    ///
    /// - Throws: ``Contexts/StorageError`` when the cluster cannot be read.
    package func recordedSchemaBytes() throws -> [UInt8]? {
        let storage = EtcdStorage(configuration: self)
        defer { storage.close() }
        let view = try storage.readView()
        defer { view.close() }
        var found: [UInt8]? = nil
        try view.visitValues(forKeys: [StorageKey(table: StoredSchema.table, key: StoredSchema.key)]) { _, value, _ in
            found = value.map { Array($0) }
        }
        return found
    }
}
