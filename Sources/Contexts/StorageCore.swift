import KVEngine
import Locking
import Policies
import Synchronization

// Storage mapping (also in Docs/Contexts.md):
//
//   table "entity:<Entity>"   key = primary key as 8 bytes big-endian (so scans run in key
//                             order), value = ValueCodec bytes of the object's values
//   table "meta:sequences"    key = entity name (UTF-8), value = the next primary key to hand
//                             out, 8 bytes big-endian
//
// Entity names are identifiers, so they can never contain the ':' that separates the prefixes.
// The record version the engine keeps per key is the object's version.

/// What every context of one ObjectStore shares: the engine, the schema, the options, and the
/// primary-key allocator.
///
/// `Sendable`: every stored property is immutable or behind a lock.
final class StorageCore: Sendable {
    let store: Store
    let schema: Schema
    let options: ObjectStore.Options
    /// Serialises key allocation in this process, so contexts do not race on the sequence
    /// record (the commit is still conditional, which guards other ObjectStores on the Store).
    /// (It holds an unused Int: TSan misreads `inout` access to a zero-sized value under a
    /// lock as a race; see Testing.md.)
    let allocationLock = ConditionLock<Int>(0)
    /// Every root context of this object store, held weakly: a root's save is merged
    /// automatically into the others that ask for it.
    let rootContexts = ConditionLock<[WeakContext]>([])
    /// The open pinned query generations: version and when each was pinned, by generation.
    let pinnedGenerations = ConditionLock<[ObjectIdentifier: PinnedGenerationInfo]>([:])

    static let sequenceTable = "meta:sequences"

    init(store: Store, schema: Schema, options: ObjectStore.Options) {
        self.store = store
        self.schema = schema
        self.options = options
    }

    static func table(for entityName: String) -> String { "entity:" + entityName }

    static func key(for primaryKey: UInt64) -> [UInt8] {
        // An array literal: the compiler allocates it with its type known. Copying the
        // integer's bytes (`Array(_:)` of a buffer) took the generic collection copy, and
        // `Array(repeating:count:)` the runtime's generic allocation, each costing more than
        // the allocation itself, once per object a save writes.
        [UInt8(truncatingIfNeeded: primaryKey >> 56), UInt8(truncatingIfNeeded: primaryKey >> 48),
         UInt8(truncatingIfNeeded: primaryKey >> 40), UInt8(truncatingIfNeeded: primaryKey >> 32),
         UInt8(truncatingIfNeeded: primaryKey >> 24), UInt8(truncatingIfNeeded: primaryKey >> 16),
         UInt8(truncatingIfNeeded: primaryKey >> 8), UInt8(truncatingIfNeeded: primaryKey)]
    }

    /// The primary key of a stored key, nil when it is not 8 bytes (not ours).
    static func primaryKey(of key: [UInt8]) -> UInt64? {
        guard key.count == 8 else { return nil }
        return key.reduce(0) { ($0 << 8) | UInt64($1) }
    }

    static func primaryKey(of key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 8 else { return nil }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    func entity(named name: String) throws(ContextError) -> EntityDescription {
        guard let entity = schema.entity(named: name) else { throw ContextError.unknownEntity(name) }
        return entity
    }

    func snapshot() throws(ContextError) -> Snapshot {
        do { return try store.snapshot() } catch { throw ContextError.storage(error) }
    }

    /// The committed values (by position in `entity`) and record version of `id`, or nil when
    /// there is no record. The value is decoded straight from the engine's buffer.
    func committedRecord(
        of id: ObjectID, entity: EntityDescription, in snapshot: Snapshot
    ) throws(ContextError) -> (values: ObjectValues, version: UInt64)? {
        guard let primaryKey = id.primaryKey else { return nil }
        do {
            return try snapshot.withValue(forKey: Self.key(for: primaryKey), in: entity.layout.tableName) { value, version in
                guard let value else { return nil }
                return (try ValueCodec.decode(value, layout: entity.layout), version)
            }
        } catch let error as ValueCodecError {
            throw ContextError.corruptValue(id, error)
        } catch {
            throw storageError(error)
        }
    }

    /// The committed values (by name) and record version of `id`, or nil when there is no
    /// record, on a fresh snapshot of the latest commit.
    func committedRecord(of id: ObjectID) throws(ContextError) -> (values: PropertyValues, version: UInt64)? {
        guard let primaryKey = id.primaryKey else { return nil }
        let snapshot = try snapshot()
        defer { snapshot.close() }
        let record: Record?
        do {
            record = try snapshot.get(Self.key(for: primaryKey), in: Self.table(for: id.entityName))
        } catch {
            throw storageError(error)
        }
        guard let record else { return nil }
        do {
            return (try ValueCodec.decode(record.value), record.version)
        } catch {
            throw ContextError.corruptValue(id, error)
        }
    }
}
