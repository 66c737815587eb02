import Policies

// Reading an ordered many-to-many end: its members come in the order of their links' keys at
// that end (ManyToManyEnd.swift): the base's keys, with the places this context gave on top
// (ContextLinks), a link not placed yet (made before the end was ordered) first, ties by
// primary key and then in the order the links were made. The last key of an end, where an
// append goes, is one entry of its order table, or the parent's answer in a child.

extension ObjectContext {
    /// `visible` (an ordered end's members in this context's view, stored ones by primary key
    /// then new ones) in the order of their keys: `base`'s, or the place this context gave.
    func inOrder(_ visible: [LinkEntry], base: [LinkEntry], owner: StoredObject?, _ end: ManyToManyEnd) -> [LinkEntry] {
        var keyOf: [ObjectID: Int64] = [:]
        for entry in base { if let key = entry.orderKey { keyOf[entry.id] = key } }
        if let owner {
            for place in links.places(of: owner, end.name) { keyOf[place.member.storedID] = place.key }
        }
        let keyed = visible.enumerated().map { rank, entry in (rank: rank, entry: LinkEntry(id: entry.id, orderKey: keyOf[entry.id])) }
        return keyed.sorted { first, second in
            switch (first.entry.orderKey, second.entry.orderKey) {
            case let (one?, other?) where one != other: return one < other
            case (nil, _?): return true
            case (_?, nil): return false
            default: return first.rank < second.rank
            }
        }.map(\.entry)
    }

    /// The keys `members` (registered here) have at `owner`'s ordered end in this context's view,
    /// in that order (nil: not a member, or not placed yet).
    func linkKeys(of members: [StoredObject], at owner: StoredObject, _ end: ManyToManyEnd) throws(ContextError) -> [Int64?] {
        var keyOf: [ObjectID: Int64] = [:]
        for entry in try linkEntries(of: [(owner.storedID, owner)], end)[0] {
            if let key = entry.orderKey { keyOf[entry.id] = key }
        }
        return members.map { keyOf[$0.storedID] }
    }

    /// The highest key of the ordered end `end` of the object `id` (`owner` when registered
    /// here) in this context's view: the last entry of the owner's range of the order table (at
    /// the commit its reads read) or the parent's answer, and the places given here. It may be a
    /// link's this context removed: a key after it is after every member all the same.
    func lastLinkKey(of id: ObjectID, owner: StoredObject?, _ end: ManyToManyEnd) throws(ContextError) -> Int64? {
        var last = owner.flatMap { links.highestPlace(of: $0, end.name) }
        let base: Int64?
        if let parent {
            base = try parent.synchronously { () throws(ContextError) in
                try parent.lastLinkKey(of: id, owner: parent.registeredObject(for: id), end)
            }
        } else if let key = id.primaryKey, end.isOrdered {
            base = try withReadView { (view) throws(ContextError) -> Int64? in
                do {
                    return try Self.lastOrderKey(of: key, end, in: view)
                } catch {
                    throw ContextError(readFailure: error)
                }
            }
        } else {
            base = nil
        }
        if let base, base > (last ?? .min) { last = base }
        return last
    }
}
