import Policies

// Reading many-to-many links. A context's view of an end is its base's links (a root's: one range
// of the end's link table, read at the commit its reads read; a child's: its parent's view) with
// its own pending changes laid over them, leaving out objects it deleted. A root context keeps
// what each end read as the links' ancestor (ContextLinks), and the member lists in its
// MemberCache like a one-to-many's. An ordered end's members come in order of their links' keys
// at that end (ObjectContext+LinkOrder.swift).

extension ObjectContext {
    /// The members' IDs of the end `end` of the object `id` (`owner` when registered here), in
    /// this context's view: stored members by primary key, then new ones in the order they were
    /// linked (for an ordered end: in the order of their keys at that end).
    func linkIDs(of id: ObjectID, owner: StoredObject?, _ end: ManyToManyEnd) throws(ContextError) -> [ObjectID] {
        try linkIDs(of: [(id, owner)], end)[0]
    }

    /// ``linkIDs(of:owner:_:)`` of several owners, their base read together (one read view, or
    /// one visit to the parent).
    func linkIDs(of owners: [(id: ObjectID, owner: StoredObject?)], _ end: ManyToManyEnd) throws(ContextError) -> [[ObjectID]] {
        try linkEntries(of: owners, end).map { $0.map(\.id) }
    }

    /// ``linkIDs(of:_:)`` with each link's order key at an ordered end.
    func linkEntries(of owners: [(id: ObjectID, owner: StoredObject?)], _ end: ManyToManyEnd) throws(ContextError) -> [[LinkEntry]] {
        let base = try baseLinkEntries(of: owners.map(\.id), end)
        var lists: [[LinkEntry]] = []
        lists.reserveCapacity(owners.count)
        for (position, (_, owner)) in owners.enumerated() {
            if let owner, parent == nil, !owner.storedID.isTemporaryID {
                var keys: [UInt64: Int64] = [:]
                for entry in base[position] { if let key = entry.orderKey, let member = entry.id.primaryKey { keys[member] = key } }
                links.noteRead(Set(base[position].compactMap(\.id.primaryKey)), keys: keys, of: owner, end.name)
            }
            var stored = Set(base[position].lazy.map(\.id).filter { !$0.isTemporaryID })
            var new = base[position].map(\.id).filter(\.isTemporaryID)
            if let owner {
                for change in links.changes(of: owner, end.name) {
                    let id = change.member.storedID
                    if change.linked {
                        if id.isTemporaryID { if !new.contains(id) { new.append(id) } } else { stored.insert(id) }
                    } else {
                        stored.remove(id)
                        new.removeAll { $0 == id }
                    }
                }
            }
            let visible = stored.sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) } + new
            let entries = visible.filter { registeredObject(for: $0)?.deletedFlag != true }.map { LinkEntry(id: $0, orderKey: nil) }
            lists.append(end.isOrdered ? inOrder(entries, base: base[position], owner: owner, end) : entries)
        }
        return lists
    }

    /// The base's links of each owner: the store's (a root, at the commit its reads read) or
    /// the parent's view (a child).
    private func baseLinkEntries(of owners: [ObjectID], _ end: ManyToManyEnd) throws(ContextError) -> [[LinkEntry]] {
        if let parent {
            return try parent.synchronously { () throws(ContextError) -> [[LinkEntry]] in
                try parent.linkEntries(of: owners.map { ($0, parent.registeredObject(for: $0)) }, end)
            }
        }
        let keys = owners.map(\.primaryKey)
        guard keys.contains(where: { $0 != nil }) else { return owners.map { _ in [] } }
        return try withReadView { (view) throws(ContextError) -> [[LinkEntry]] in
            var lists: [[LinkEntry]] = []
            lists.reserveCapacity(owners.count)
            for key in keys {
                guard let key else { lists.append([]); continue }
                lists.append(try Self.storedLinkEntries(of: key, end, in: view).map { link in
                    LinkEntry(id: ObjectID(entityName: end.destination, primaryKey: link.member), orderKey: link.orderKey)
                })
            }
            return lists
        }
    }

    /// The members' primary keys of the owner `key` in `view`, in primary-key order.
    static func storedLinks(of key: UInt64, _ end: ManyToManyEnd, in view: any StorageReadView) throws(ContextError) -> [UInt64] {
        try storedLinkEntries(of: key, end, in: view).map(\.member)
    }

    /// ``storedLinks(of:_:in:)`` with each link's order key at an ordered end (nil: not placed, or unordered).
    static func storedLinkEntries(
        of key: UInt64, _ end: ManyToManyEnd, in view: any StorageReadView
    ) throws(ContextError) -> [(member: UInt64, orderKey: Int64?)] {
        let prefix = StorageMapping.key(for: key)
        var members: [(member: UInt64, orderKey: Int64?)] = []
        let ordered = end.isOrdered
        do {
            try view.forEach(in: end.linkTable, from: prefix, to: IndexKeyEncoding.successor(ofPrefix: prefix), reverse: false) { key, value, _ in
                if let member = StorageMapping.linkMember(of: key) {
                    members.append((member, ordered ? StorageMapping.orderKey(ofLinkValue: value) : nil))
                }
                return true
            }
        } catch {
            throw ContextError(readFailure: error)
        }
        return members
    }

    /// Whether this context's view links `owner` to `member` through `end`, by ID (a child asks its parent).
    func visibleLink(_ owner: ObjectID, _ end: ManyToManyEnd, _ member: ObjectID) throws(ContextError) -> Bool {
        let ownerObject = registeredObject(for: owner), memberObject = registeredObject(for: member)
        if ownerObject?.deletedFlag == true || memberObject?.deletedFlag == true { return false }
        if let ownerObject, let memberObject, let pending = links.change(ownerObject, end, memberObject) { return pending }
        return try baseLink(owner, end, member, reading: ownerObject)
    }

    /// Whether the base links `owner` to `member` (a point read of one entry). `reading`: the
    /// owner, whose known read the answer updates.
    func baseLink(_ owner: ObjectID, _ end: ManyToManyEnd, _ member: ObjectID, reading: StoredObject? = nil) throws(ContextError) -> Bool {
        if let parent {
            return try parent.synchronously { () throws(ContextError) in try parent.visibleLink(owner, end, member) }
        }
        guard let ownerKey = owner.primaryKey, let memberKey = member.primaryKey else { return false }
        let linked = try withReadView { (view) throws(ContextError) -> Bool in
            do {
                return try view.get(StorageMapping.linkKey(owner: ownerKey, member: memberKey), in: end.linkTable) != nil
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        if let reading { links.noteRead(linked: linked, member: memberKey, of: reading, end.name) }
        return linked
    }

    /// The members of `owner`'s many-to-many `end`, loaded: the kept list when it is current,
    /// otherwise read (and kept). An ID whose record the base no longer holds (a `noAction`
    /// delete's link) is left out.
    func linkedMembers(of owner: StoredObject, _ end: ManyToManyEnd) throws(ContextError) -> [StoredObject] {
        if let stamp = memberCacheStamp(), let kept = memberCache.members(of: owner, end.name, at: stamp) { return kept }
        return try prefetchLinkedMembers(of: [owner], end)
    }

    /// Reads the members of `end` of every one of `owners` (objects of one entity): their links
    /// in one pass, then every member not loaded here in one read; keeps each owner's list.
    /// Returns all the members.
    func prefetchLinkedMembers(of owners: [StoredObject], _ end: ManyToManyEnd) throws(ContextError) -> [StoredObject] {
        let destination = try core.entity(named: end.destination)
        return try readingKept(end.name) { () throws(ContextError) in
            let lists = try linkIDs(of: owners.map { ($0.storedID, $0) }, end)
            var toRead: [(id: ObjectID, entity: EntityDescription)] = []
            var seen = Set<ObjectID>()
            for id in lists.joined() where seen.insert(id).inserted {
                if let held = registeredObject(for: id), !held.isFaultStorage { continue }
                toRead.append((id, destination))
            }
            var loaded: [ObjectID: StoredObject] = [:]
            for (position, record) in try baseStates(of: toRead).enumerated() {
                guard let record else { continue }
                let id = toRead[position].id
                if let fault = registeredObject(for: id) {
                    load(record, into: fault)
                    loaded[id] = fault
                } else {
                    loaded[id] = registerLoaded(record, entity: destination)
                }
            }
            var all: [StoredObject] = []
            var kept = MemberCache.Lists(owners: owners, lists: [])
            kept.lists.reserveCapacity(owners.count)
            for ids in lists {
                let members = ids.compactMap { id -> StoredObject? in
                    if let object = loaded[id] { return object }
                    guard let held = registeredObject(for: id), !held.isFaultStorage else { return nil }
                    return held
                }
                all.append(contentsOf: members)
                kept.lists.append(members)
            }
            return ([all], kept)
        }.members.first ?? []
    }

    /// How many members each owner of `end` has in this context's view (owners with none are
    /// absent): the base's count with this context's changes and deletes applied.
    func visibleLinkCounts(_ end: ManyToManyEnd) throws(ContextError) -> [ObjectID: Int] {
        // This context's changes of the end, by (owner, member) ID.
        var pending: [LinkPair: Bool] = [:]
        links.forEachLink { owner, relationship, member, linked in
            if relationship == end.name && owner.entity.name == end.entity {
                pending[LinkPair(owner: owner.storedID, member: member.storedID)] = linked
            } else if relationship == end.inverse && owner.entity.name == end.destination {
                pending[LinkPair(owner: member.storedID, member: owner.storedID)] = linked
            }
        }
        var counts: [ObjectID: Int]
        var basePending: [LinkPair: Bool] = [:]
        if let parent {
            counts = try parent.synchronously { () throws(ContextError) in try parent.visibleLinkCounts(end) }
            for pair in pending.keys { basePending[pair] = try baseLink(pair.owner, end, pair.member) }
        } else {
            counts = [:]
            try withReadView { (view) throws(ContextError) in
                do {
                    try view.forEach(in: end.linkTable, from: nil, to: nil, reverse: false) { key, _, _ in
                        guard let owner = StorageMapping.linkOwner(of: key), let member = StorageMapping.linkMember(of: key) else { return true }
                        let ownerID = ObjectID(entityName: end.entity, primaryKey: owner)
                        counts[ownerID, default: 0] += 1
                        if !pending.isEmpty {
                            let pair = LinkPair(owner: ownerID, member: ObjectID(entityName: end.destination, primaryKey: member))
                            if pending[pair] != nil { basePending[pair] = true }
                        }
                        return true
                    }
                } catch {
                    throw ContextError(readFailure: error)
                }
            }
        }
        for (pair, linked) in pending where linked != (basePending[pair] ?? false) {
            counts[pair.owner, default: 0] += linked ? 1 : -1
        }
        // Members deleted here belong to nothing: each owner still linked to one loses it (a
        // nullify rule unlinked them already, as changes).
        let inverse = end.inverseEnd(core.schema)
        for object in objectsInOrder where object.deletedFlag && object.entity.name == end.destination {
            for owner in try linkIDs(of: object.storedID, owner: object, inverse) { counts[owner, default: 0] -= 1 }
        }
        return counts.filter { $0.value > 0 }
    }
}

/// One member of an end in a context's view, with the link's order key at an ordered end (nil:
/// an unordered end, or a link not placed yet).
struct LinkEntry: Hashable {
    let id: ObjectID
    let orderKey: Int64?
}

/// A link by its ends' IDs.
struct LinkPair: Hashable {
    let owner: ObjectID
    let member: ObjectID
}
