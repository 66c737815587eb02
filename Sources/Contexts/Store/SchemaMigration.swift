import Policies

// Opening a store with a schema other than the one it recorded (StoredSchema.swift) migrates
// it, Core Data's lightweight migration: the differences are computed from the two schemas
// (entities and attributes matched by name, or by a renaming identifier naming the recorded
// one), and every stored object of an entity that changed is rewritten, eagerly, in the same
// single conditional commit that rewrites the schema record and rebuilds the entity's indexes
// and constraint entries (IndexReconciliation.swift). A crash before that commit is durable
// leaves the old records, the old schema record and the old indexes; after it, all new. Two
// openers racing condition on the schema record, and the loser looks again.
//
// Rewritten, not defaulted on read: a stored null is an absent property, so a record cannot
// tell "never had the new attribute" from "set to null", and a lazily applied default would
// overwrite the second. The price is one commit holding every rewritten record (the engine's
// limit is 1 GiB; past it the open fails with `.tooLarge` and writes nothing).
//
// A type change, a new required attribute without a default, and an optional attribute made
// required without a default block the open with `ContextError.incompatibleSchema`, listing
// every difference, unless `ObjectStore.Options.migration` is set: then it is called with
// each stored object of every entity that changed, and what it leaves must fit the new schema.

/// One stored object being migrated, handed to ``ObjectStore/Options/migration``: the values
/// as stored, and the values to store, which the closure may change.
///
/// ```swift
/// options.migration = { record in
///     if record.entityName == "Person", case .string(let text) = record.storedValues["age"] ?? .null {
///         record.values["age"] = Int64(text).map(AttributeValue.int) ?? .int(0)
///     }
/// }
/// ```
public struct MigrationRecord: Sendable {
    /// The schema the store recorded (without renaming identifiers).
    ///
    /// ```swift
    /// record.storedSchema.entity(named: "Person")?.attribute(named: "age")?.type   // .string
    /// ```
    public let storedSchema: Schema
    /// The schema being opened.
    ///
    /// ```swift
    /// record.schema.entity(named: "Person")?.attribute(named: "age")?.type   // .int
    /// ```
    public let schema: Schema
    /// The object's entity in ``schema``.
    ///
    /// ```swift
    /// record.entityName   // "Person"
    /// ```
    public let entityName: String
    /// The object's ID in the migrated store (the primary key never changes).
    ///
    /// ```swift
    /// record.objectID.primaryKey   // 1
    /// ```
    public let objectID: ObjectID
    /// The values as stored, by the recorded schema's attribute names (absent = null).
    ///
    /// ```swift
    /// record.storedValues["age"]   // .string("42")
    /// ```
    public let storedValues: PropertyValues
    /// The values that will be stored, by ``schema``'s attribute names: the automatic
    /// migration's result (renamed values moved, defaults filled, removed attributes gone,
    /// values of a changed type copied unchanged). Change them; each must have its
    /// attribute's type, required attributes must be set, and no other name may remain.
    ///
    /// ```swift
    /// record.values["email"] = .string("unknown@example.com")
    /// ```
    public var values: PropertyValues
}

/// What a migration reports while it runs (``ObjectStore/Options/migrationProgress``).
///
/// ```swift
/// options.migrationProgress = { progress in print(progress) }   // Person: migrating, 10000 records
/// ```
public struct MigrationProgress: Sendable, CustomStringConvertible {
    /// The entity (its name in the schema being opened; the recorded name for a removed one).
    ///
    /// ```swift
    /// progress.entity   // "Person"
    /// ```
    public let entity: String
    /// `"migrating"` with the records so far, `"migrated"` once committed, or `"deleted"`
    /// for a removed entity's records once committed.
    ///
    /// ```swift
    /// progress.phase   // "migrating"
    /// ```
    public let phase: String
    /// Records rewritten (or deleted) so far.
    ///
    /// ```swift
    /// progress.records   // 10000
    /// ```
    public let records: Int

    /// `Person: migrating, 10000 records`.
    ///
    /// ```swift
    /// print(progress)
    /// ```
    public var description: String { "\(entity): \(phase), \(records) records" }
}

/// What the open's commit does besides index work: computed by ``SchemaMigration/plan``.
struct MigrationPlan {
    /// The differences found (empty for a first record of the schema).
    var differences: [SchemaDifference] = []
    /// By entity name (the new schema's): the values of every object after the migration, in
    /// primary-key order. Index builds read these instead of the entity's table.
    var rewritten: [String: [(primaryKey: UInt64, values: ObjectValues)]] = [:]
    /// Reported once the commit is durable.
    var reports: [MigrationProgress] = []
}

enum SchemaMigration {
    /// How often a migration reports progress, in records.
    static let progressInterval = 10_000

    /// How one entity of the new schema is filled from the recorded one.
    private struct EntityMapping {
        let entity: EntityDescription
        let stored: EntityDescription
        /// For each attribute of `entity`, by position: the recorded attribute's name it takes
        /// its values from, or nil for an added one.
        let sources: [String?]
        /// For each attribute, by position: the value a stored null becomes (`.null` to keep it).
        let fills: [AttributeValue]
        /// Whether any difference concerns this entity.
        let changed: Bool
    }

    /// Puts the migration's writes into `batch` (the records of changed entities, the schema
    /// record) and returns what index builds need; nil when the store's schema record already
    /// describes `schema`.
    ///
    /// - Throws: ``ContextError/incompatibleSchema(_:)`` for a difference only a closure can
    ///   migrate, when there is none; ``ContextError/migrationFailed(_:reason:)`` when the
    ///   closure throws or leaves values that do not fit; read failures.
    static func plan(
        view: any StorageReadView, schema: Schema, migration: (@Sendable (inout MigrationRecord) throws -> Void)?,
        progress: (@Sendable (MigrationProgress) -> Void)?, into batch: inout StorageBatch
    ) throws -> MigrationPlan? {
        guard let (bytes, version) = try view.get(StoredSchema.key, in: StoredSchema.table) else {
            // A new store, or one made before schemas were recorded: its records are taken to
            // be this schema's, as before.
            batch.put(StoredSchema.encode(schema), forKey: StoredSchema.key, in: StoredSchema.table, if: .absent)
            return MigrationPlan()
        }
        let stored: StoredSchema
        do {
            stored = try StoredSchema.decode(bytes)
        } catch {
            throw ContextError.storage(error)
        }
        guard stored.versionHash != StoredSchema.versionHash(of: schema) else { return nil }
        var plan = MigrationPlan()
        let (mappings, removed) = map(from: stored.schema, to: schema, differences: &plan.differences)
        if migration == nil, plan.differences.contains(where: { !$0.isAutomatic }) {
            throw ContextError.incompatibleSchema(plan.differences)
        }
        for mapping in mappings where mapping.changed {
            let rewritten = try rewrite(mapping, storedSchema: stored.schema, schema: schema, view: view,
                                        migration: migration, progress: progress, into: &batch)
            plan.rewritten[mapping.entity.name] = rewritten
            plan.reports.append(MigrationProgress(entity: mapping.entity.name, phase: "migrated", records: rewritten.count))
        }
        for entity in removed {
            var count = 0
            try view.forEach(in: entity.layout.tableName, from: nil, to: nil, reverse: false) { key, _, _ in
                batch.delete(Array(key), in: entity.layout.tableName, if: nil)
                count += 1
                return true
            }
            if try view.get(Array(entity.name.utf8), in: StorageMapping.sequenceTable) != nil {
                batch.delete(Array(entity.name.utf8), in: StorageMapping.sequenceTable, if: nil)
            }
            plan.reports.append(MigrationProgress(entity: entity.name, phase: "deleted", records: count))
        }
        try migrateLinks(from: stored.schema, to: schema, renamed: mappings.map { ($0.stored.name, $0.entity.name) },
                         view: view, into: &batch)
        batch.put(StoredSchema.encode(schema), forKey: StoredSchema.key, in: StoredSchema.table, if: .version(version))
        return plan
    }

    /// Moves the link tables of a renamed entity's many-to-manys to its new name, and clears
    /// those of many-to-manys the schema no longer has (so one declared again later starts empty).
    /// An end that stays ordered keeps its keys (and its order table, moved with it); one made
    /// unordered drops them; one made ordered keeps its links unplaced (in primary-key order,
    /// before any placed later). `renamed`: the recorded and new name of every entity kept.
    private static func migrateLinks(
        from stored: Schema, to schema: Schema, renamed: [(stored: String, new: String)], view: any StorageReadView,
        into batch: inout StorageBatch
    ) throws {
        let newName = Dictionary(renamed, uniquingKeysWith: { first, _ in first })
        for entity in stored.entities {
            for end in stored.manyToManyEnds(of: entity.name) {
                let kept = newName[entity.name].flatMap { name in
                    schema.manyToManyEnd(name, end.name).flatMap { $0.destination == newName[end.destination] ? $0 : nil }
                }
                let keepsKeys = end.isOrdered && kept?.isOrdered == true
                if kept?.linkTable == end.linkTable && (keepsKeys || !end.isOrdered) { continue }
                try view.forEach(in: end.linkTable, from: nil, to: nil, reverse: false) { key, value, _ in
                    if let kept {
                        batch.putUnversioned(keepsKeys ? Array(value) : [], forKey: Array(key), in: kept.linkTable)
                    }
                    if kept?.linkTable != end.linkTable { batch.deleteUnversioned(Array(key), in: end.linkTable) }
                    return true
                }
                guard let orderTable = end.orderTable, kept?.orderTable != orderTable else { continue }
                try view.forEach(in: orderTable, from: nil, to: nil, reverse: false) { key, _, _ in
                    if keepsKeys, let moved = kept?.orderTable { batch.putUnversioned([], forKey: Array(key), in: moved) }
                    batch.deleteUnversioned(Array(key), in: orderTable)
                    return true
                }
            }
        }
    }

    /// Matches `schema`'s entities and attributes with `stored`'s and lists the differences;
    /// returns the mappings of entities that exist in both, and the recorded entities removed.
    private static func map(
        from stored: Schema, to schema: Schema, differences: inout [SchemaDifference]
    ) -> ([EntityMapping], [EntityDescription]) {
        var used = Set<String>()
        var mappings: [EntityMapping] = []
        for entity in schema.entities {
            // A renaming identifier wins when it names a recorded entity, as in Core Data.
            let source = entity.renamingIdentifier.flatMap { stored.entity(named: $0) } ?? stored.entity(named: entity.name)
            guard let source, !used.contains(source.name) else {
                differences.append(.entityAdded(entity.name))
                continue
            }
            used.insert(source.name)
            let before = differences.count
            if source.name != entity.name { differences.append(.entityRenamed(from: source.name, to: entity.name)) }
            var usedAttributes = Set<String>()
            var sources: [String?] = []
            var fills: [AttributeValue] = []
            for attribute in entity.layout.attributes {
                let old = attribute.renamingIdentifier.flatMap { source.attribute(named: $0) } ?? source.attribute(named: attribute.name)
                guard let old, !usedAttributes.contains(old.name) else {
                    sources.append(nil)
                    fills.append(attribute.defaultValue)
                    differences.append(attribute.isOptional || attribute.defaultValue != .null
                        ? .attributeAdded(entity: entity.name, attribute: attribute.name)
                        : .requiredAttributeAdded(entity: entity.name, attribute: attribute.name))
                    continue
                }
                usedAttributes.insert(old.name)
                sources.append(old.name)
                if old.name != attribute.name {
                    differences.append(.attributeRenamed(entity: entity.name, from: old.name, to: attribute.name))
                }
                if old.type != attribute.type {
                    differences.append(.typeChanged(entity: entity.name, attribute: attribute.name, from: old.type, to: attribute.type))
                }
                if old.isOptional, !attribute.isOptional {
                    differences.append(.becameRequired(entity: entity.name, attribute: attribute.name,
                                                       hasDefault: attribute.defaultValue != .null))
                    fills.append(attribute.defaultValue)
                } else {
                    if !old.isOptional, attribute.isOptional {
                        differences.append(.becameOptional(entity: entity.name, attribute: attribute.name))
                    }
                    fills.append(.null)
                }
            }
            for old in source.layout.attributes where !usedAttributes.contains(old.name) {
                differences.append(.attributeRemoved(entity: entity.name, attribute: old.name))
            }
            mappings.append(EntityMapping(entity: entity, stored: source, sources: sources, fills: fills,
                                          changed: differences.count > before))
        }
        let removed = stored.entities.filter { !used.contains($0.name) }
        for entity in removed { differences.append(.entityRemoved(entity.name)) }
        return (mappings, removed)
    }

    /// Puts every stored object of `mapping`'s entity, migrated, into `batch` (moving it to
    /// the new table when the entity was renamed); returns the new values in key order.
    private static func rewrite(
        _ mapping: EntityMapping, storedSchema: Schema, schema: Schema, view: any StorageReadView,
        migration: (@Sendable (inout MigrationRecord) throws -> Void)?, progress: (@Sendable (MigrationProgress) -> Void)?,
        into batch: inout StorageBatch
    ) throws -> [(primaryKey: UInt64, values: ObjectValues)] {
        let entity = mapping.entity, layout = entity.layout
        let oldTable = mapping.stored.layout.tableName, moved = oldTable != layout.tableName
        var rows: [(primaryKey: UInt64, values: ObjectValues)] = []
        try view.forEach(in: oldTable, from: nil, to: nil, reverse: false) { key, value, _ in
            guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
            let id = ObjectID(entityName: entity.name, primaryKey: primaryKey)
            let storedValues: PropertyValues
            do throws(ValueCodecError) {
                storedValues = try ValueCodec.decode(value)
            } catch {
                throw ContextError.corruptValue(ObjectID(entityName: mapping.stored.name, primaryKey: primaryKey), error)
            }
            var values = PropertyValues()
            for (position, attribute) in entity.layout.attributes.enumerated() {
                var value = mapping.sources[position].flatMap { storedValues[$0] } ?? .null
                if value == .null { value = mapping.fills[position] }
                if value != .null { values[attribute.name] = value }
            }
            if let migration {
                var record = MigrationRecord(storedSchema: storedSchema, schema: schema, entityName: entity.name,
                                             objectID: id, storedValues: storedValues, values: values)
                do {
                    try migration(&record)
                } catch {
                    throw ContextError.migrationFailed(id, reason: "the migration closure threw \(error)")
                }
                values = record.values
            }
            try check(values, of: entity, id: id)
            let encoded = ValueCodec.encode(values)
            batch.put(encoded, forKey: Array(key), in: layout.tableName, if: nil)
            if moved { batch.delete(Array(key), in: oldTable, if: nil) }
            rows.append((primaryKey, ObjectValues(values, layout: layout)))
            if rows.count % progressInterval == 0 {
                progress?(MigrationProgress(entity: entity.name, phase: "migrating", records: rows.count))
            }
            return true
        }
        if moved, let (next, _) = try view.get(Array(mapping.stored.name.utf8), in: StorageMapping.sequenceTable) {
            batch.put(next, forKey: Array(entity.name.utf8), in: StorageMapping.sequenceTable, if: nil)
            batch.delete(Array(mapping.stored.name.utf8), in: StorageMapping.sequenceTable, if: nil)
        }
        return rows
    }

    /// Throws unless `values` fit `entity`: only its attributes, each of its type, required ones set.
    private static func check(_ values: PropertyValues, of entity: EntityDescription, id: ObjectID) throws(ContextError) {
        for (name, value) in values where value != .null {
            guard let attribute = entity.attribute(named: name) else {
                throw ContextError.migrationFailed(id, reason: "\(name) is not an attribute of \(entity.name)")
            }
            guard attribute.type.accepts(value) else {
                throw ContextError.migrationFailed(id, reason: "\(entity.name).\(name) is of type \(attribute.type), not \(value)")
            }
        }
        for attribute in entity.layout.attributes where !attribute.isOptional && (values[attribute.name] ?? .null) == .null {
            throw ContextError.migrationFailed(id, reason: "\(entity.name).\(attribute.name) is required and has no value")
        }
    }
}
