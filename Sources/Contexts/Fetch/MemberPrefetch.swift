import Foundation
import Policies

/// A prefetch of a to-many's members for many owners, read in one pass instead of one fetch of
/// `inverse IN (every owner)` (ObjectContext+Members): no predicate to test, no candidates to
/// rank, each member's reference its owner's string, shared, not a copy (``OwnerReferences``).
///
/// The pass is one of two:
/// - a walk of the owners' ranges of the inverse to-one's index, then their records by key:
///   each owner's entries are in primary-key order, so its list comes out in the order its own
///   fetch returns it;
/// - when the owners are most of their entity's objects (so most members are theirs), a scan
///   of the members' table in primary-key order, each record's owner read from its reference:
///   no index entry and no search per member.
///
/// It answers only when nothing in memory can change that answer: a root context holding no
/// object of the members' entity (so no in-memory values, pending insert or delete, or fault to
/// load), an unordered to-many, an index on exactly the inverse, distinct owners whose
/// references the index keeps whole (for a walk). Otherwise `make` or `run` is nil and the
/// fetch answers.
struct MemberPrefetch {
    private let context: ObjectContext
    private let members: EntityDescription
    private let index: IndexLayout
    private let owners: [StoredObject]
    private let references: OwnerReferences
    /// Where the members' records hold their to-one.
    private let inversePosition: Int

    /// The prefetch of `owners`' members of `relationship`, or nil when the fetch must answer.
    static func make(
        _ context: ObjectContext, owners: [StoredObject], _ relationship: RelationshipLayout, members: EntityDescription
    ) -> MemberPrefetch? {
        let inverse = relationship.description.inverse
        guard context.parent == nil, !relationship.description.isOrdered,
              let index = members.layout.indexes.first(where: { $0.attributeNames == [inverse] }),
              let inversePosition = members.layout.relationship(named: inverse)?.storagePosition,
              let references = OwnerReferences(owners: owners)
        else { return nil }
        // Any registered member (fault, loaded, inserted or deleted) is the fetch's to handle.
        let layout = members.layout
        guard !context.objectsInOrder.contains(where: { $0.entity.layout === layout }) else { return nil }
        return MemberPrefetch(context: context, members: members, index: index, owners: owners, references: references,
                              inversePosition: inversePosition)
    }

    /// Reads every owner's members, registers them, and returns them all with each owner's
    /// list and the version read at; nil (nothing read or registered) when the fetch must
    /// answer after all.
    func run() throws(ContextError) -> (members: [StoredObject], lists: [(StoredObject, [StoredObject])], version: UInt64)? {
        var made: [StoredObject] = []
        var lists = [[StoredObject]](repeating: [], count: owners.count)
        var version: UInt64 = 0
        let answered = try context.withReadView { (view) throws(ContextError) -> Bool in
            version = view.version
            do {
                if try scans(view) {
                    try scan(view, made: &made, lists: &lists)
                    return true
                }
                // The owners' key prefixes in the index, made only for a walk.
                var prefixes: [[UInt8]] = []
                prefixes.reserveCapacity(owners.count)
                for reference in references.references {
                    var prefix: [UInt8] = []
                    // A reference cut at the cap shares its entries with others: the fetch tests them.
                    guard IndexKeyEncoding.append(.string(reference), to: &prefix, cap: index.contentCap) else { return false }
                    prefixes.append(prefix)
                }
                try walk(view, prefixes: prefixes, made: &made, lists: &lists)
                return true
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        guard answered else { return nil }
        // Registered together, as a fetch's objects are: a read that fails registers nothing.
        context.register(made: made)
        return (made, Array(zip(owners, lists)), version)
    }

    /// Whether the scan reads less: the owners are at least half of their entity's records, so
    /// (members spread evenly) at least half the members' records are theirs.
    ///
    /// A single owner (a delete rule's read) has its entries counted to make sure: one owner of
    /// two departments may hold 3 people of 100,000, which the scan would all decode.
    private func scans(_ view: any StorageReadView) throws -> Bool {
        guard let ownerTable = owners.first?.entity.layout.tableName,
              try 2 * owners.count >= view.estimatedCount(in: ownerTable)
        else { return false }
        guard owners.count == 1 else { return true }
        var prefix: [UInt8] = []
        guard IndexKeyEncoding.append(.string(references.references[0]), to: &prefix, cap: index.contentCap) else { return false }
        let entries = try view.countKeys(in: index.tableName, from: prefix, to: IndexKeyEncoding.successor(ofPrefix: prefix), where: nil)
        return try 2 * entries >= view.estimatedCount(in: members.layout.tableName)
    }

    /// The scan: every record of the members' table, in primary-key order, kept when its
    /// reference names an owner.
    private func scan(_ view: any StorageReadView, made: inout [StoredObject], lists: inout [[StoredObject]]) throws {
        let layout = members.layout
        let sharing = references.sharing(at: inversePosition)
        try view.forEach(in: layout.tableName, from: nil, to: nil, reverse: false) { key, value, version in
            guard let primaryKey = StorageMapping.primaryKey(of: key) else { return true }
            references.lastFound = nil
            references.looked = false
            let values = try decode(value, primaryKey: primaryKey, sharing: sharing)
            var owner = references.lastFound
            // A record the lean decoder passed to the general one: its reference read as a string.
            if !references.looked, case .string(let reference) = values[inversePosition] { owner = references.owner(of: reference) }
            guard let owner else { return true }
            let object = make(primaryKey, values, version)
            made.append(object)
            lists[owner].append(object)
            return true
        }
    }

    /// The walk: the owners' index ranges, then their records by key.
    private func walk(_ view: any StorageReadView, prefixes: [[UInt8]], made: inout [StoredObject], lists: inout [[StoredObject]]) throws {
        var order = Array(prefixes.indices)
        // Through the buffers: the arrays' subscripts retained and released each prefix per comparison.
        prefixes.withUnsafeBufferPointer { prefixes in
            order.sort { left, right in
                prefixes[left].withUnsafeBytes { left in prefixes[right].withUnsafeBytes { Self.placement(of: left, $0) < 0 } }
            }
        }
        // Every owner's entries first (their primary keys, and where each owner's end), then
        // the records in one visit.
        let (keys, ends) = try entries(in: view, prefixes: prefixes, order: order)
        made.reserveCapacity(keys.count)
        // Each list made at its size: grown by appends, ten members reallocated it four times.
        for (walked, owner) in order.enumerated() {
            lists[owner].reserveCapacity(ends[walked] - (walked == 0 ? 0 : ends[walked - 1]))
        }
        let sharing = references.sharing(at: inversePosition)
        var walked = 0
        try view.visitRecords(in: members.layout.tableName, primaryKeys: keys) { position, value, version in
            while position >= ends[walked] { walked += 1 }
            guard let value else { return }  // an entry whose record is gone: as the fetch, skipped
            let object = make(keys[position], try decode(value, primaryKey: keys[position], sharing: sharing), version)
            made.append(object)
            lists[order[walked]].append(object)
        }
    }

    /// A member's values from its record.
    private func decode(_ value: UnsafeRawBufferPointer, primaryKey: UInt64, sharing: SharedStrings) throws(ContextError) -> ObjectValues {
        do throws(ValueCodecError) {
            return try ValueCodec.decode(value, layout: members.layout, sharing: sharing)
        } catch {
            throw ContextError.corruptValue(ObjectID(entityName: members.layout.name, primaryKey: primaryKey), error)
        }
    }

    /// A member read with `values` at record `version`, attached to the context (registered later).
    private func make(_ primaryKey: UInt64, _ values: ObjectValues, _ version: UInt64) -> StoredObject {
        let object = StoredObject(entity: members, id: ObjectID(entityName: members.layout.name, primaryKey: primaryKey),
                                  values: values, version: version)
        context.attach(object)
        return object
    }

    /// The primary keys of the owners' entries, owner after owner in `order`, and where each
    /// owner's end (one per owner, in `order`).
    ///
    /// The owners' ranges are walked in key order by one cursor walk, which passes over the few
    /// entries of other owners between them and starts again at the next owner's range only
    /// after many: a walk for each owner's ten members cost about 1,000 instructions a member.
    private func entries(in view: any StorageReadView, prefixes: [[UInt8]], order: [Int]) throws -> (keys: [UInt64], ends: [Int]) {
        var keys: [UInt64] = [], ends: [Int] = []
        ends.reserveCapacity(order.count)
        guard let last = order.last else { return (keys, ends) }
        let upper = IndexKeyEncoding.successor(ofPrefix: prefixes[last])
        var next = 0  // the position in `order` of the owner whose range is next or being walked
        while next < order.count {
            var skipped = 0
            var restart = false
            try view.forEach(in: index.tableName, from: prefixes[order[next]], to: upper, reverse: false) { entry, _, _ in
                while true {
                    let placement = Self.placement(of: entry, prefixes[order[next]])
                    if placement == 0 {
                        if let primaryKey = IndexKeyEncoding.primaryKey(ofEntry: entry) { keys.append(primaryKey) }
                        return true
                    }
                    if placement < 0 {
                        // Another owner's entry, before this owner's range.
                        skipped += 1
                        restart = skipped > Self.passedOverLimit
                        return !restart
                    }
                    ends.append(keys.count)
                    next += 1
                    skipped = 0
                    if next == order.count { return false }
                }
            }
            // The walk reached the index's end: the owners left have no entries.
            if !restart {
                while next < order.count {
                    ends.append(keys.count)
                    next += 1
                }
            }
        }
        return (keys, ends)
    }

    /// Entries of other owners passed over before the walk starts again at the next owner's
    /// range: a step to the next entry costs a few hundred instructions, a new walk about ten times that.
    private static let passedOverLimit = 8

    /// 0 when `entry` starts with `prefix`; below 0 when it sorts before the prefix's range,
    /// above 0 after it.
    private static func placement(of entry: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Int {
        prefix.withUnsafeBytes { placement(of: entry, $0) }
    }

    private static func placement(of entry: UnsafeRawBufferPointer, _ prefix: UnsafeRawBufferPointer) -> Int {
        let common = min(entry.count, prefix.count)
        let order = common == 0 ? 0 : Int(memcmp(entry.baseAddress!, prefix.baseAddress!, common))
        if order != 0 { return order }
        return entry.count < prefix.count ? -1 : 0
    }
}
