import Policies

// An ordered to-many (a one-to-many whose to-many is `isOrdered`): the members keep the order in
// which they were added or placed (an ordered many-to-many end: StoredObject+OrderedLinks.swift).
// Each member holds an order key beside its to-one (OrderKeys.swift),
// so adding a member at the end, inserting one at an index or moving one writes that member
// alone (and its owners, whose versions rise as for any membership change); `members(of:)`
// returns them by key, through the to-one's index on (to-one, key).

extension StoredObject {
    /// Places `member` at `index` of the ordered to-many `relationship` (taking it from its
    /// place, or from another owner, first): the members from `index` on come after it. For an
    /// ordered many-to-many end, `member` is linked if it was not (and goes last at the other
    /// end, if that end is ordered too) and placed here; only this end's order changes.
    ///
    /// ```swift
    /// try playlist.insertMember(song, at: 0, into: "songs")   // first
    /// try post.insertMember(tag, at: 1, into: "tags")         // an ordered many-to-many end
    /// ```
    ///
    /// - Throws: as ``members(of:)``, which reads the members first. Stops the process for a
    ///   relationship that is not an ordered to-many, or an index past the end.
    public func insertMember(_ member: StoredObject, at index: Int, into relationship: String) throws(ContextError) {
        if let end = orderedManyToManyEnd(relationship, "insertMember(_:at:into:)") {
            return try insertLink(member, at: index, end)
        }
        let (layout, inverse) = orderedToMany(relationship, "insertMember(_:at:into:)")
        var list = try members(of: relationship).filter { $0 !== member }
        guard index >= 0 && index <= list.count else {
            contextMisuse("insertMember(_:at:into:) at \(index) of \(entity.name).\(relationship), which has \(list.count) other members")
        }
        member.setDestination(self, of: layout.description.inverse)
        list.insert(member, at: index)
        try place(at: index, in: list, inverse)
    }

    /// Moves the member at `source` of the ordered to-many `relationship` to `destination` (an
    /// index of the list without it): Core Data's `moveObjects(at:to:)` for one member. On an
    /// ordered many-to-many end it is a change of this object only: the member is not updated.
    ///
    /// ```swift
    /// try playlist.moveMember(at: 3, to: 0, in: "songs")
    /// ```
    ///
    /// - Throws: as ``members(of:)``. Stops the process for a relationship that is not an
    ///   ordered to-many, or an index past the end.
    public func moveMember(at source: Int, to destination: Int, in relationship: String) throws(ContextError) {
        if let end = orderedManyToManyEnd(relationship, "moveMember(at:to:in:)") { return try moveLink(at: source, to: destination, end) }
        let (_, inverse) = orderedToMany(relationship, "moveMember(at:to:in:)")
        var list = try members(of: relationship)
        guard source >= 0 && source < list.count && destination >= 0 && destination < list.count else {
            contextMisuse("moveMember(at: \(source), to: \(destination), in:) of \(entity.name).\(relationship), which has \(list.count) members")
        }
        let member = list.remove(at: source)
        list.insert(member, at: destination)
        try place(at: destination, in: list, inverse)
    }

    /// Gives `list[index]` a key between its neighbours' in `list` (every member fresh keys when
    /// there is no room), and marks this owner changed.
    private func place(at index: Int, in list: [StoredObject], _ inverse: RelationshipLayout) throws(ContextError) {
        let position = inverse.orderPosition!
        let keys = list.map { object -> Int64? in
            if case .int(let key) = object.current[position] { return key }
            return nil
        }
        if let placed = OrderKeys.placing(at: index, among: keys) {
            list[index].setOrderKey(placed, at: position)
        } else {
            // No room (or members without keys): every member gets a fresh key, in this order.
            for (rank, member) in list.enumerated() { member.setOrderKey(OrderKeys.renumbered(rank), at: position) }
        }
        registeredOwner("insertMember(_:at:into:)").markMembershipChanged(of: storedID)
    }

    /// Gives `members` (the whole ordered to-many `layout`, just set) keys in their list order:
    /// kept when theirs already increase along it, fresh ones `step` apart otherwise.
    func placeInOrder(_ members: [StoredObject], _ layout: RelationshipLayout) {
        guard let context = owner, let destination = context.core.schema.entity(named: layout.description.destination),
              let position = destination.layout.relationship(named: layout.description.inverse)?.orderPosition else { return }
        let keys = members.map { member -> Int64? in
            if case .int(let key) = member.current[position] { return key }
            return nil
        }
        guard !OrderKeys.areIncreasing(keys) else { return }
        for (rank, member) in members.enumerated() { member.setOrderKey(OrderKeys.renumbered(rank), at: position) }
        context.markMembershipChanged(of: storedID)
    }

    /// Writes the order key at `position`; members' order is part of the graph the context's kept lists show.
    func setOrderKey(_ key: Int64?, at position: Int) {
        let value = key.map(AttributeValue.int) ?? .null
        guard current[position] != value else { return }
        write(value, at: position)
        noteGraphChange()
    }

    /// The to-many `name` and its inverse to-one, when the to-many is ordered.
    private func orderedToMany(_ name: String, _ operation: String) -> (RelationshipLayout, RelationshipLayout) {
        checkAccess()
        guard let layout = entity.layout.relationship(named: name), layout.isToMany, layout.description.isOrdered,
              let context = owner, let destination = context.core.schema.entity(named: layout.description.destination),
              let inverse = destination.layout.relationship(named: layout.description.inverse) else {
            contextMisuse("\(operation): entity \(entity.name) has no ordered to-many relationship \"\(name)\"")
        }
        return (layout, inverse)
    }

    /// After this object's to-one at `layout` changed: its order key goes after the new owner's
    /// last member (or is cleared, without an owner).
    func appendToOrder(_ layout: RelationshipLayout) {
        guard let position = layout.orderPosition, let context = owner else { return }
        guard let id = Self.referencedID(current[layout.storagePosition!]) else { return setOrderKey(nil, at: position) }
        setOrderKey(OrderKeys.after(context.lastOrderKey(of: id, layout, excluding: self)), at: position)
    }
}

extension ObjectContext {
    /// The highest order key among the members of the owner `id` (through the to-one `layout`) in
    /// this context's view, leaving out `member`: the store's last entry of the owner's range of
    /// the to-one's index and the registered members' own keys (a root context), or every
    /// member's key (a child, reading its parent's view).
    func lastOrderKey(of id: ObjectID, _ layout: RelationshipLayout, excluding member: StoredObject) -> Int64? {
        let entity = member.entity.layout, position = layout.orderPosition!
        func key(_ values: ObjectValues) -> Int64? {
            if case .int(let key) = values[position] { return key }
            return nil
        }
        var last: Int64? = nil
        func consider(_ key: Int64?) {
            if let key, key > (last ?? .min) { last = key }
        }
        guard parent == nil else {
            guard let owner = try? existingObject(with: id), let toMany = owner.entity.layout.relationship(named: layout.description.inverse),
                  let members = try? members(of: owner, toMany) else { return nil }
            for other in members where other !== member { consider(key(other.current)) }
            return last
        }
        let reference = AttributeValue.string(id.uriString)
        for other in heldReferences(to: id.uriString, entity: entity, position: layout.storagePosition!) where other !== member {
            consider(key(other.current))
        }
        if let index = entity.indexes.first(where: { $0.positions == [layout.storagePosition!, position] }), !id.isTemporaryID {
            var prefix: [UInt8] = []
            IndexKeyEncoding.append(reference, to: &prefix, cap: index.contentCap)
            var lastEntry: UInt64? = nil
            try? withReadView { (view) throws(ContextError) in
                do {
                    try view.forEach(in: index.tableName, from: prefix, to: IndexKeyEncoding.successor(ofPrefix: prefix), reverse: true) { key, _, _ in
                        lastEntry = IndexKeyEncoding.primaryKey(ofEntry: key)
                        return false
                    }
                } catch {
                    throw ContextError(readFailure: error)
                }
            }
            if let lastEntry {
                let lastID = ObjectID(entityName: entity.name, primaryKey: lastEntry)
                if let held = registeredObject(for: lastID), !held.isFaultStorage {
                    consider(key(held.ancestorValues))
                } else if let record = try? baseState(of: lastID, entity: member.entity) {
                    consider(key(record.values))
                }
            }
        }
        return last
    }
}
