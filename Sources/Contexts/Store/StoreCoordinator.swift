import Foundation
import Locking
import Policies

/// What every context of one ObjectStore shares: the storage, the schema, the options, and the
/// lists of root contexts and pinned query generations. Core Data's persistent store
/// coordinator, for one store.
///
/// `Sendable`: every stored property is immutable or behind a lock.
final class StoreCoordinator: Sendable {
    let storage: any ObjectStorage
    let schema: Schema
    /// `schema.hasManyToMany`, read without copying the schema (a copy retained and released
    /// its tables: about 10 atomic operations, in every `members(of:)`).
    let hasManyToMany: Bool
    let options: ObjectStore.Options
    /// Every root context of this object store, held weakly: a root's save is merged
    /// automatically into the others that ask for it.
    let rootContexts = ConditionLock<[WeakContext]>([])
    /// The open pinned query generations: version and when each was pinned, by generation.
    let pinnedGenerations = ConditionLock<[ObjectIdentifier: PinnedGenerationInfo]>([:])
    /// Whether a root context merges saves made elsewhere yet (ObjectStore+SavesFromElsewhere.swift).
    let savesFromElsewhere = ConditionLock<SavesFromElsewhereDemand>(SavesFromElsewhereDemand())
    /// This open of the store, as history records name their writer (so its own remote-change
    /// watcher skips them).
    let origin = UUID().uuidString
    /// The requests checked and planned so far, by shape.
    let fetchPlans = FetchPlanCache()
    /// Objects resets let go of, for reads to refill (SpareObjects.swift).
    let spareObjects = SpareObjects()

    init(storage: any ObjectStorage, schema: Schema, options: ObjectStore.Options) {
        self.storage = storage
        self.schema = schema
        hasManyToMany = schema.hasManyToMany
        self.options = options
    }

    func entity(named name: String) throws(ContextError) -> EntityDescription {
        guard let entity = schema.entity(named: name) else { throw ContextError.unknownEntity(name) }
        return entity
    }

    /// A read view of the newest commit; the caller closes it.
    func readView() throws(ContextError) -> any StorageReadView {
        do { return try storage.readView() } catch { throw ContextError.storage(error) }
    }

    /// Hands out `count` fresh primary keys for `entityName`, in ascending order.
    func allocatePrimaryKeys(count: Int, for entityName: String) throws(ContextError) -> [UInt64] {
        do { return try storage.allocatePrimaryKeys(count: count, for: entityName) } catch { throw ContextError.storage(error) }
    }

    /// The committed values (by position in each entity) and record versions of several
    /// objects, read in one visit of `view`; nil for an object without a record (or without a
    /// primary key). Values are decoded straight from the store's buffers.
    func committedStates(
        of objects: [(id: ObjectID, entity: EntityDescription)], in view: any StorageReadView
    ) throws(ContextError) -> [(values: ObjectValues, version: UInt64)?] {
        var records = [(values: ObjectValues, version: UInt64)?](repeating: nil, count: objects.count)
        var keys: [StorageKey] = []
        var positions: [Int] = []
        keys.reserveCapacity(objects.count)
        positions.reserveCapacity(objects.count)
        for (position, object) in objects.enumerated() {
            guard let primaryKey = object.id.primaryKey else { continue }
            keys.append(StorageKey(table: object.entity.layout.tableName, key: StorageMapping.key(for: primaryKey)))
            positions.append(position)
        }
        guard !keys.isEmpty else { return records }
        do {
            try view.visitValues(forKeys: keys) { index, value, version in
                guard let value else { return }
                let position = positions[index]
                records[position] = (try ValueCodec.decode(value, layout: objects[position].entity.layout, of: objects[position].id), version)
            }
        } catch {
            throw ContextError(readFailure: error)
        }
        return records
    }

    /// The committed values (by position in `entity`) and record version of `id`, or nil when
    /// there is no record.
    func committedState(
        of id: ObjectID, entity: EntityDescription, in view: any StorageReadView
    ) throws(ContextError) -> (values: ObjectValues, version: UInt64)? {
        try committedStates(of: [(id, entity)], in: view)[0]
    }

    /// The committed values (by name) and record version of `id`, or nil when there is no
    /// record, on a fresh view of the newest commit.
    func committedState(of id: ObjectID) throws(ContextError) -> (values: PropertyValues, version: UInt64)? {
        guard let key = StorageMapping.storageKey(of: id) else { return nil }
        let view = try readView()
        defer { view.close() }
        let record: (value: [UInt8], version: UInt64)?
        do {
            record = try view.get(key.key, in: key.table)
        } catch {
            throw ContextError(readFailure: error)
        }
        guard let record else { return nil }
        do {
            return (try ValueCodec.decode(record.value), record.version)
        } catch {
            throw ContextError.corruptValue(id, error)
        }
    }
}
