// How objects map onto a store's tables (also in Docs/Contexts.md):
//
//   table "entity:<Entity>"   key = primary key as 8 bytes big-endian (so scans run in key
//                             order), value = ValueCodec bytes of the object's values
//   table "meta:sequences"    key = entity name (UTF-8), value = the next primary key to hand
//                             out, 8 bytes big-endian
//   table "index:<Entity>:<a,b>"  one per declared index: key = IndexKeyEncoding of the
//                             object's values of a, b, … then its primary key (8 bytes
//                             big-endian), value empty; written in the commit of the record
//   table "unique:<Entity>:<a,b>"  one per uniqueness constraint: key = IndexKeyEncoding of
//                             the object's values of a, b, … (uncut, no primary key: one
//                             entry per value), value = the owner's primary key (8 bytes
//                             big-endian); none for an object with a null among them. A save
//                             puts it on condition "absent", so a duplicate fails the commit
//   table "link:<Entity>:<r>"  one per end of a many-to-many relationship r: key = the
//                             owner's primary key then the member's (8 + 8 bytes big-endian,
//                             so an owner's members are one range), value empty; every link
//                             is in both ends' tables, written unversioned in the commit that
//                             writes (and version-checks) both ends' records. For an ordered
//                             end the value is the link's order key at that end (8 bytes,
//                             `orderKeyBytes`), or empty for a link not placed yet
//   table "order:<Entity>:<r>"  one per ordered end of a many-to-many r: key = the owner's
//                             primary key, the link's order key, the member's primary key
//                             (8 + 8 + 8 bytes, byte order = key order), value empty; one entry
//                             per placed link of the end, so an owner's last key is one entry
//   table "meta:indexes"      key = an index or constraint table's name (UTF-8), value =
//                             [indexFormat]: the tables the store has built (and keeps), so an
//                             open with another schema knows what to build or drop
//   table "meta:schema"       key = "schema", value = the schema the records are in, as JSON
//                             (StoredSchema.swift): an open with another schema migrates them
//   table "meta:history"      key = the commit version of a save, 8 bytes big-endian, value =
//                             what the save wrote, as JSON (HistoryRecord.swift); written in the
//                             save's own commit, only by stores that track history
//
// Entity names are identifiers, so they can never contain the ':' that separates the prefixes.
// The record version the store keeps per key is the object's version.

/// Tables, keys and primary keys: the one place that knows how objects are laid out in a store
/// (`package`: the etcd backend's key allocator uses the same sequence records).
package enum StorageMapping {
    package static let sequenceTable = "meta:sequences"

    package static func table(for entityName: String) -> String { "entity:" + entityName }

    static let indexListTable = "meta:indexes"

    /// Persistent history: one record per tracked save (HistoryRecord.swift).
    static let historyTable = "meta:history"

    /// The one index format so far: the value of its `meta:indexes` record.
    static let indexFormat: [UInt8] = [1]

    /// Entity and attribute names are identifiers, so neither ':' nor ',' can be part of one.
    static func indexTable(entity: String, attributes: [String]) -> String {
        "index:" + entity + ":" + attributes.joined(separator: ",")
    }

    static let indexTablePrefix = "index:"

    /// A many-to-many end's links (ManyToManyEnd.swift).
    static func linkTable(entity: String, relationship: String) -> String {
        "link:" + entity + ":" + relationship
    }

    /// The key of the link from `owner` to `member` in the owner's end's table.
    static func linkKey(owner: UInt64, member: UInt64) -> [UInt8] {
        key(for: owner) + key(for: member)
    }

    /// The member's primary key of a link key, nil when it is not one.
    static func linkMember(of key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 16 else { return nil }
        return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    }

    /// The owner's primary key of a link key, nil when it is not one.
    static func linkOwner(of key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 16 else { return nil }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// An ordered many-to-many end's order entries (ManyToManyEnd.swift).
    static func linkOrderTable(entity: String, relationship: String) -> String {
        "order:" + entity + ":" + relationship
    }

    /// An order key as 8 bytes whose byte order is the keys' order: big-endian, sign bit flipped.
    /// Frozen: stored as an ordered end's link value and inside its order entries' keys.
    static func orderKeyBytes(_ orderKey: Int64) -> [UInt8] {
        key(for: UInt64(bitPattern: orderKey) ^ (1 << 63))
    }

    /// The order key of an ordered end's link value; nil for an empty value (a link not placed yet).
    static func orderKey(ofLinkValue value: UnsafeRawBufferPointer) -> Int64? {
        guard value.count == 8 else { return nil }
        return Int64(bitPattern: UInt64(bigEndian: value.loadUnaligned(as: UInt64.self)) ^ (1 << 63))
    }

    /// The key of the order entry of the link from `owner` to `member` at `orderKey`.
    static func linkOrderKey(owner: UInt64, orderKey: Int64, member: UInt64) -> [UInt8] {
        key(for: owner) + orderKeyBytes(orderKey) + key(for: member)
    }

    /// The order key and member of an order entry's key, nil when it is not one.
    static func linkOrderEntry(of key: UnsafeRawBufferPointer) -> (orderKey: Int64, member: UInt64)? {
        guard key.count == 24, let orderKey = orderKey(ofLinkValue: UnsafeRawBufferPointer(rebasing: key[8..<16])) else { return nil }
        return (orderKey, UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
    }

    static func uniquenessTable(entity: String, attributes: [String]) -> String {
        "unique:" + entity + ":" + attributes.joined(separator: ",")
    }

    /// The longest key the engine stores (LMDB's limit): index entries are kept under it.
    static let maxKeyBytes = 511

    package static func key(for primaryKey: UInt64) -> [UInt8] {
        // An array literal: the compiler allocates it with its type known (the generic copy
        // of the integer's bytes cost more than the allocation, once per object saved).
        [UInt8(truncatingIfNeeded: primaryKey >> 56), UInt8(truncatingIfNeeded: primaryKey >> 48),
         UInt8(truncatingIfNeeded: primaryKey >> 40), UInt8(truncatingIfNeeded: primaryKey >> 32),
         UInt8(truncatingIfNeeded: primaryKey >> 24), UInt8(truncatingIfNeeded: primaryKey >> 16),
         UInt8(truncatingIfNeeded: primaryKey >> 8), UInt8(truncatingIfNeeded: primaryKey)]
    }

    /// The primary key of a stored key, nil when it is not 8 bytes (not ours).
    package static func primaryKey(of key: [UInt8]) -> UInt64? {
        guard key.count == 8 else { return nil }
        return key.reduce(0) { ($0 << 8) | UInt64($1) }
    }

    static func primaryKey(of key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 8 else { return nil }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// The storage key of an object's record.
    static func storageKey(of id: ObjectID) -> StorageKey? {
        id.primaryKey.map { StorageKey(table: table(for: id.entityName), key: key(for: $0)) }
    }
}
