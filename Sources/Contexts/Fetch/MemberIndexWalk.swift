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
        return MemberIndexWalk(context: context, members: members, index: index, owners: owners,
                               references: references, prefixes: prefixes)
    }

    /// Reads every owner's members, registers them, and returns them all with each owner's list.
    func run() throws(ContextError) -> (members: [StoredObject], lists: [(StoredObject, [StoredObject])]) {
        let layout = members.layout
        var made: [StoredObject] = [], ids: [ObjectID] = []
        var lists = [[StoredObject]](repeating: [], count: owners.count)
        try context.withReadView { (view) throws(ContextError) in
            do {
                // Every owner's entries first (their primary keys, and where each owner's end),
                // then the records in one visit.
                var keys: [UInt64] = [], ends: [Int] = []
                ends.reserveCapacity(owners.count)
                for prefix in prefixes {
                    try view.forEach(in: index.tableName, from: prefix, to: IndexKeyEncoding.successor(ofPrefix: prefix),
                                     reverse: false) { entry, _, _ in
                        if let primaryKey = IndexKeyEncoding.primaryKey(ofEntry: entry) { keys.append(primaryKey) }
                        return true
                    }
                    ends.append(keys.count)
                }
                made.reserveCapacity(keys.count)
                ids.reserveCapacity(keys.count)
                var owner = 0
                try view.visitRecords(in: layout.tableName, primaryKeys: keys) { (position, value, version) throws(ContextError) in
                    while position >= ends[owner] { owner += 1 }
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
                    ids.append(id)
                    lists[owner].append(object)
                }
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        // Registered together, as a fetch's objects are: a walk that fails registers nothing.
        context.register(made: made, ids: ids)
        return (made, Array(zip(owners, lists)))
    }
}
