import Foundation
import Policies

/// A prefetch of a to-many's members for many owners, read in one pass over the inverse
/// to-one's index instead of one fetch of `inverse IN (every owner)` (ObjectContext+Members).
///
/// Each owner's entries are one key range of that index (its reference's bytes), in primary-key
/// order, so each owner's list comes out of its range in the order its own fetch returns it:
/// no predicate to test, no reference to hash back to its owner, no sort of candidates or of
/// the owners' keys. Each member's reference is its owner's string, shared, not a copy.
///
/// It answers only when nothing in memory can change that answer: a root context holding no
/// object of the members' entity (so no in-memory values, pending insert or delete, or fault to
/// load), an unordered to-many, an index on exactly the inverse, distinct owners whose
/// references the index keeps whole. Otherwise `make` is nil and the fetch answers.
struct MemberIndexWalk {
    private let context: ObjectContext
    private let members: EntityDescription
    private let index: IndexLayout
    private let owners: [StoredObject]
    /// Each owner's reference (its ID's URI), and that reference's key prefix in the index.
    private let references: [String]
    private let prefixes: [[UInt8]]
    /// The owners' positions in their prefixes' order: the index's.
    private let order: [Int]

    /// The walk for `owners`' members of `relationship`, or nil when the fetch must answer.
    static func make(
        _ context: ObjectContext, owners: [StoredObject], _ relationship: RelationshipLayout, members: EntityDescription
    ) -> MemberIndexWalk? {
        let inverse = relationship.description.inverse
        guard context.parent == nil, !relationship.description.isOrdered,
              let index = members.layout.indexes.first(where: { $0.attributeNames == [inverse] })
        else { return nil }
        // Any registered member (fault, loaded, inserted or deleted) is the fetch's to handle.
        let layout = members.layout
        guard !context.objectsInOrder.contains(where: { $0.entity.layout === layout }) else { return nil }
        var distinct = Set<ObjectIdentifier>(minimumCapacity: owners.count)
        var references: [String] = [], prefixes: [[UInt8]] = []
        references.reserveCapacity(owners.count)
        prefixes.reserveCapacity(owners.count)
        for owner in owners {
            guard distinct.insert(ObjectIdentifier(owner)).inserted else { return nil }
            let reference = owner.storedID.uriString
            var prefix: [UInt8] = []
            // A reference cut at the cap shares its entries with others: the fetch tests them.
            guard IndexKeyEncoding.append(.string(reference), to: &prefix, cap: index.contentCap) else { return nil }
            references.append(reference)
            prefixes.append(prefix)
        }
        var order = Array(prefixes.indices)
        // Through the buffers: the arrays' subscripts retained and released each prefix per comparison.
        prefixes.withUnsafeBufferPointer { prefixes in
            order.sort { left, right in
                prefixes[left].withUnsafeBytes { left in prefixes[right].withUnsafeBytes { placement(of: left, $0) < 0 } }
            }
        }
        return MemberIndexWalk(context: context, members: members, index: index, owners: owners,
                               references: references, prefixes: prefixes, order: order)
    }

    /// The primary keys of the owners' entries, owner after owner in `order`, and where each
    /// owner's end (one per owner, in `order`).
    ///
    /// The owners' ranges are walked in key order by one cursor walk, which passes over the few
    /// entries of other owners between them and starts again at the next owner's range only
    /// after many: a walk for each owner's ten members cost about 1,000 instructions a member.
    private func entries(in view: any StorageReadView) throws -> (keys: [UInt64], ends: [Int]) {
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

    /// Reads every owner's members, registers them, and returns them all with each owner's list.
    func run() throws(ContextError) -> (members: [StoredObject], lists: [(StoredObject, [StoredObject])]) {
        let layout = members.layout
        var made: [StoredObject] = []
        var lists = [[StoredObject]](repeating: [], count: owners.count)
        try context.withReadView { (view) throws(ContextError) in
            do {
                // Every owner's entries first (their primary keys, and where each owner's end),
                // then the records in one visit.
                let (keys, ends) = try entries(in: view)
                made.reserveCapacity(keys.count)
                // Each list made at its size: grown by appends, ten members reallocated it four times.
                for (walked, owner) in order.enumerated() {
                    lists[owner].reserveCapacity(ends[walked] - (walked == 0 ? 0 : ends[walked - 1]))
                }
                var walked = 0
                try view.visitRecords(in: layout.tableName, primaryKeys: keys) { (position, value, version) throws(ContextError) in
                    while position >= ends[walked] { walked += 1 }
                    let owner = order[walked]
                    guard let value else { return }  // an entry whose record is gone: as the fetch, skipped
                    let id = ObjectID(entityName: layout.name, primaryKey: keys[position])
                    let values: ObjectValues
                    do throws(ValueCodecError) {
                        values = try ValueCodec.decode(value, layout: layout, sharing: references[owner])
                    } catch {
                        throw ContextError.corruptValue(id, error)
                    }
                    let object = StoredObject(entity: members, id: id, values: values, version: version)
                    context.attach(object)
                    made.append(object)
                    lists[owner].append(object)
                }
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        // Registered together, as a fetch's objects are: a walk that fails registers nothing.
        context.register(made: made)
        return (made, Array(zip(owners, lists)))
    }
}
