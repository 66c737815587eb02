import Policies

// Opening a store with a schema brings the store's indexes to the schema's in one commit: the
// indexes it declares and the store lacks are built from the entity tables, the ones the store
// has (its `meta:indexes` list) and the schema no longer declares are dropped, and the list is
// rewritten, all-or-nothing. So after a crash the store has either the old indexes or the new
// ones, never half of one. The list's records are conditioned, so two openers racing retry.
// Uniqueness constraints' tables are listed and built the same way; stored objects that break
// a new constraint fail the open with a typed error, and nothing is written.
// A schema migration (SchemaMigration.swift) shares the commit: the records it rewrites are
// what the indexes and constraints of their entity are rebuilt from.
//
// One commit bounds a build: its payload (about 30 bytes plus the key per entry) must stay
// under the engine's commit limit (1 GiB, about 20 million entries of short keys); past it the
// open fails with `ContextError.storage` whose code is `.tooLarge`, and nothing is written.

/// What an index build reports while it runs (``ObjectStore/Options/indexBuildProgress``).
public struct IndexBuildProgress: Sendable, CustomStringConvertible {
    /// The index's table, `index:<Entity>:<attr,attr>`.
    public let table: String
    /// What is happening: `"building"` with the entries so far, `"built"`, or `"dropped"`.
    public let phase: String
    /// Entries written (or removed) so far.
    public let entries: Int

    /// `index:Person:name: building, 10000 entries`.
    public var description: String { "\(table): \(phase), \(entries) entries" }
}

enum IndexReconciliation {
    /// How often a build reports progress, in entries.
    static let progressInterval = 100_000

    static func run(storage: any ObjectStorage, schema: Schema, options: ObjectStore.Options) throws(ContextError) {
        let progress = options.indexBuildProgress
        var attempts = 0
        while true {
            attempts += 1
            var batch = StorageBatch()
            var reports: [IndexBuildProgress] = []
            var migration: MigrationPlan? = nil
            do {
                let view = try storage.readView()
                defer { view.close() }
                migration = try SchemaMigration.plan(
                    view: view, schema: schema, migration: options.migration, progress: options.migrationProgress, into: &batch)
                let rewritten = migration?.rewritten ?? [:]
                var present: [String: UInt64] = [:]
                try view.forEach(in: StorageMapping.indexListTable, from: nil, to: nil, reverse: false) { key, _, version in
                    present[String(decoding: key, as: UTF8.self)] = version
                    return true
                }
                var declared: [String: (entity: EntityDescription, index: IndexLayout)] = [:]
                var constraints: [String: (entity: EntityDescription, constraint: UniquenessConstraintLayout)] = [:]
                for entity in schema.entities {
                    for index in entity.layout.indexes { declared[index.tableName] = (entity, index) }
                    for constraint in entity.layout.uniquenessConstraints { constraints[constraint.tableName] = (entity, constraint) }
                }
                let wanted = Set(declared.keys).union(constraints.keys)
                let toDrop = present.keys.filter { !wanted.contains($0) }.sorted()
                // A migrated entity's entries are rebuilt from its new values, in the same commit.
                let toBuild = declared.keys.filter { present[$0] == nil || rewritten[declared[$0]!.entity.name] != nil }.sorted()
                let constraintsToBuild = constraints.keys.filter {
                    present[$0] == nil || rewritten[constraints[$0]!.entity.name] != nil
                }.sorted()
                guard migration != nil || !toDrop.isEmpty || !toBuild.isEmpty || !constraintsToBuild.isEmpty else { return }
                for table in toDrop {
                    let removed = try clear(table, in: view, into: &batch)
                    batch.delete(Array(table.utf8), in: StorageMapping.indexListTable, if: .version(present[table]!))
                    reports.append(IndexBuildProgress(table: table, phase: "dropped", entries: removed))
                }
                for table in toBuild {
                    let (entity, index) = declared[table]!
                    // Entries a writer of another schema may have left are replaced, not kept.
                    _ = try clear(table, in: view, into: &batch)
                    var entries = 0
                    try forEachObject(of: entity.layout, in: view, rewritten: rewritten[entity.name]) { primaryKey, values in
                        batch.putUnversioned([], forKey: IndexKeyEncoding.entryKey(values, index: index, primaryKey: primaryKey), in: table)
                        entries += 1
                        if entries % progressInterval == 0 {
                            progress?(IndexBuildProgress(table: table, phase: "building", entries: entries))
                        }
                    }
                    batch.put(StorageMapping.indexFormat, forKey: Array(table.utf8), in: StorageMapping.indexListTable,
                              if: present[table].map { .version($0) } ?? .absent)
                    reports.append(IndexBuildProgress(table: table, phase: "built", entries: entries))
                }
                for table in constraintsToBuild {
                    let (entity, constraint) = constraints[table]!
                    _ = try clear(table, in: view, into: &batch)
                    let entries = try buildConstraint(constraint, of: entity, in: view, rewritten: rewritten[entity.name],
                                                      into: &batch, progress: progress)
                    batch.put(StorageMapping.indexFormat, forKey: Array(table.utf8), in: StorageMapping.indexListTable,
                              if: present[table].map { .version($0) } ?? .absent)
                    reports.append(IndexBuildProgress(table: table, phase: "built", entries: entries))
                }
            } catch {
                throw ContextError(readFailure: error)
            }
            let outcome: StorageCommitOutcome
            do {
                outcome = try storage.commit(batch, durability: .full)
            } catch {
                throw ContextError.storage(error)
            }
            switch outcome {
            case .committed:
                for report in migration?.reports ?? [] { options.migrationProgress?(report) }
                for report in reports { progress?(report) }
                return
            case .conditionsFailed(let failures):
                // Another opener changed the list meanwhile: look again.
                guard attempts < 8 else {
                    throw ContextError.storage(StorageError(
                        code: .conditionsFailed, operation: "index build",
                        message: "the store's index list kept changing: " + failures.map(\.description).joined(separator: "; ")))
                }
            }
        }
    }

    /// Puts one entry per stored object of `entity` with no null among the constraint's values
    /// into `batch`; returns how many. Two objects with the same values are an error, so a
    /// store never holds a constraint its data breaks.
    private static func buildConstraint(
        _ constraint: UniquenessConstraintLayout, of entity: EntityDescription, in view: any StorageReadView,
        rewritten: [(primaryKey: UInt64, values: ObjectValues)]?, into batch: inout StorageBatch,
        progress: (@Sendable (IndexBuildProgress) -> Void)?
    ) throws -> Int {
        let layout = entity.layout
        var owners: [[UInt8]: UInt64] = [:]
        try forEachObject(of: layout, in: view, rewritten: rewritten) { primaryKey, values in
            let id = ObjectID(entityName: layout.name, primaryKey: primaryKey)
            guard let entryKey = constraint.entryKey(values) else { return }
            guard entryKey.count <= StorageMapping.maxKeyBytes else {
                throw ContextError.uniquenessViolatedByStoredObjects(entity: layout.name, constraint: constraint.attributeNames, objectIDs: [id])
            }
            if let other = owners.updateValue(primaryKey, forKey: entryKey) {
                throw ContextError.uniquenessViolatedByStoredObjects(
                    entity: layout.name, constraint: constraint.attributeNames,
                    objectIDs: [ObjectID(entityName: layout.name, primaryKey: other), id])
            }
            batch.put(StorageMapping.key(for: primaryKey), forKey: entryKey, in: constraint.tableName, if: nil)
            if owners.count % progressInterval == 0 {
                progress?(IndexBuildProgress(table: constraint.tableName, phase: "building", entries: owners.count))
            }
        }
        return owners.count
    }

    /// Calls `body` with every stored object of `layout`'s entity, in key order: the values a
    /// migration in the same commit is writing when there is one (`rewritten`), else the table's.
    private static func forEachObject(
        of layout: EntityLayout, in view: any StorageReadView, rewritten: [(primaryKey: UInt64, values: ObjectValues)]?,
        _ body: (UInt64, ObjectValues) throws -> Void
    ) throws {
        if let rewritten {
            for (primaryKey, values) in rewritten { try body(primaryKey, values) }
            return
        }
        try view.forEach(in: layout.tableName, from: nil, to: nil, reverse: false) { key, value, _ in
            guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
            let values = try ValueCodec.decode(value, layout: layout, of: ObjectID(entityName: layout.name, primaryKey: primaryKey))
            try body(primaryKey, values)
            return true
        }
    }

    /// Deletes every entry of `table` into `batch`; returns how many.
    private static func clear(_ table: String, in view: any StorageReadView, into batch: inout StorageBatch) throws -> Int {
        var count = 0
        // Index entries are unversioned (SaveEntry+Indexes.swift); uniqueness entries are not.
        let unversioned = table.hasPrefix(StorageMapping.indexTablePrefix)
        try view.forEach(in: table, from: nil, to: nil, reverse: false) { key, _, _ in
            if unversioned { batch.deleteUnversioned(Array(key), in: table) } else { batch.delete(Array(key), in: table, if: nil) }
            count += 1
            return true
        }
        return count
    }
}
