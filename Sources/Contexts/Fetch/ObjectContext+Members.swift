import Policies

// Reading a to-many's members, and keeping them with their owner (MemberCache.swift): a read of
// the members is a fetch through the inverse to-one's index, kept at the stamp it was read at;
// a prefetch reads the members of all its owners with one fetch and keeps every owner's list.
// A root context keeps lists; a child, whose base is its parent's changing view, fetches each time.

extension ObjectContext {
    /// The members of `owner`'s to-many `relationship`, as a fetch of them returns them: the
    /// kept list when it is current, otherwise fetched (and kept).
    func members(of owner: StoredObject, _ relationship: RelationshipLayout) throws(ContextError) -> [StoredObject] {
        if let stamp = memberCacheStamp(), let kept = memberCache.members(of: owner, relationship.name, at: stamp) {
            return kept
        }
        return try readingKept(relationship.name) { () throws(ContextError) in
            let members = try fetch(owner.memberRequest(relationship))
            return ([members], MemberCache.Lists(owners: [owner], lists: [members]))
        }.members.first ?? []
    }

    /// The members of `owner`'s to-many `relationship` as `fetch(owner.memberRequest(relationship))`
    /// returns them, read now (not kept in `memberCache`): a delete rule's read. Through a
    /// ``MemberPrefetch`` when nothing in memory can change its answer: a cascade's 10,000
    /// members were each tested against the predicate, looked up twice in the registry and
    /// given a copy of the owner's reference (about 1,900 instructions a member of
    /// relationship-cascade). `wholeAt`: the version the store's members were read whole at
    /// (by the prefetch), nil when the fetch answered. `namesOwnerExactly`: each member's
    /// inverse to-one is known to hold the owner's URI byte for byte (``MemberPrefetch/Read``).
    func readMembers(of owner: StoredObject, _ relationship: RelationshipLayout) throws(ContextError)
        -> (members: [StoredObject], wholeAt: UInt64?, namesOwnerExactly: Bool) {
        // An inserted owner's members are all in memory.
        if !owner.insertedFlag {
            let destination = try core.entity(named: relationship.description.destination)
            if let prefetch = MemberPrefetch.make(self, owners: [owner], relationship, members: destination),
               let read = try prefetch.run() {
                return (read.members.count == 1 ? read.members[0] : Array(read.members.joined()), read.version, read.namesOwnersExactly)
            }
        }
        return (try fetch(owner.memberRequest(relationship)), nil, false)
    }

    /// Fetches the members of `relationship` of every one of `owners` (objects of one entity) in
    /// one fetch (or one pass, ``MemberPrefetch``) and keeps each owner's list, in the order its own fetch would return it: the
    /// combined fetch is in base order too (primary key, then pending inserts in registration
    /// order), and each owner's members keep their relative order. Returns all the members, as
    /// lists whose concatenation is that fetch's order.
    func prefetchMembers(of owners: [StoredObject], _ relationship: RelationshipLayout) throws(ContextError) -> [[StoredObject]] {
        let destination = try core.entity(named: relationship.description.destination)
        guard let position = destination.layout.relationship(named: relationship.description.inverse)?.storagePosition else {
            throw ContextError.unknownAttribute(entity: destination.name, attribute: relationship.description.inverse)
        }
        return try readingKept(relationship.name) { () throws(ContextError) in
            if let prefetch = MemberPrefetch.make(self, owners: owners, relationship, members: destination),
               let read = try prefetch.run() {
                return (read.members, MemberCache.Lists(owners: owners, lists: read.lists))
            }
            let uris = owners.map(\.storedID.uriString)
            // Sorted by order key for an ordered to-many: each owner's members keep their relative order.
            let members = try fetch(FetchRequest(entityName: destination.name, predicate: .isIn(relationship.description.inverse, uris.map(AttributeValue.string)),
                                                 sortDescriptors: OrderKeys.sort(relationship)))
            var ownerOfReference: [String: Int] = [:]
            ownerOfReference.reserveCapacity(owners.count)
            for (index, uri) in uris.enumerated() { ownerOfReference[uri] = index }
            var lists = [[StoredObject]](repeating: [], count: owners.count)
            for member in members {
                // The fetch matched the reference as a string, as the per-owner fetch would.
                guard case .string(let reference) = member.current[position], let index = ownerOfReference[reference] else { continue }
                lists[index].append(member)
            }
            return ([members], MemberCache.Lists(owners: owners, lists: lists))
        }.members
    }

    /// Runs `read` (fetches of members) and keeps, as `relationship`, the owners' lists it returns, when no commit
    /// came between the base versions before and after it: then its reads saw exactly that
    /// version. The lists are stamped with the epoch after the read (its own registrations
    /// moved it, and the lists include them).
    func readingKept(
        _ relationship: String, _ read: () throws(ContextError) -> (members: [[StoredObject]], lists: MemberCache.Lists)
    ) throws(ContextError) -> (members: [[StoredObject]], lists: MemberCache.Lists) {
        let before = memberCacheStamp()
        let result = try read()
        if let before, let after = memberCacheStamp(), after.baseVersion == before.baseVersion {
            memberCache.keep(result.lists, relationship, at: after)
        }
        return result
    }

    /// The stamp the member lists read now would carry; nil when lists are not kept (a child
    /// context; a context pinned at its next read, whose reads pin then; a failed version read).
    func memberCacheStamp() -> MemberCache.Stamp? {
        guard parent == nil else { return nil }
        let version: UInt64
        switch generationState {
        case .pinned(let generation):
            version = generation.view.version
        case .unpinned:
            // What a read view made now reads at, at least; a later commit only raises it.
            guard let latest = try? core.storage.commitVersion() else { return nil }
            version = latest
        case .pinnedAtNextRead:
            return nil
        }
        return MemberCache.Stamp(graphEpoch: graphEpoch, baseVersion: version)
    }
}

extension ObjectContext {
    /// The list kept for `owner`'s to-many `relationship` that `members(of:)` would answer with
    /// now, or nil when it would fetch: what tests look at to tell the cache is used.
    package func keptMembers(of owner: StoredObject, _ relationship: String) -> [StoredObject]? {
        checkQueue()
        guard let stamp = memberCacheStamp() else { return nil }
        return memberCache.members(of: owner, relationship, at: stamp)
    }
}
