import Policies

// An ordered many-to-many end: each end keeps its own order of its members, as a key per link
// at that end (OrderKeys.swift, ManyToManyEnd.swift). A new link goes after the end's last key
// (at each ordered end of the pair); `insertMember(_:at:into:)` and `moveMember(at:to:in:)` give
// the link the key between its new neighbours', `replaceMembers(of:with:)` the order given. A
// place is a change of the ordered end alone: the owner becomes updated (its record is written
// and its version checked and raised), the member does not, since no link changed (Core Data
// treats a reorder as a change of the ordered relationship's object only). Adding or removing a
// link still changes both ends.

extension StoredObject {
    /// The ordered many-to-many end `relationship` is; nil for a relationship of another kind.
    /// Stops the process for an unordered many-to-many, which keeps no order to place in.
    func orderedManyToManyEnd(_ relationship: String, _ operation: String) -> ManyToManyEnd? {
        checkAccess()
        guard let end = manyToManyEnd(relationship) else { return nil }
        guard end.isOrdered else {
            contextMisuse("\(operation): \(entity.name).\(relationship) is a many-to-many that keeps no order; declare it with isOrdered: true")
        }
        return end
    }

    /// `insertMember(_:at:into:)` on the ordered many-to-many end `end`: links `member` if it is
    /// not linked (appended at the other end, if ordered) and places it at `index` here.
    func insertLink(_ member: StoredObject, at index: Int, _ end: ManyToManyEnd) throws(ContextError) {
        let operation = "insertMember(_:at:into:)"
        let context = registeredOwner(operation)
        var list = try members(of: end.name).filter { $0 !== member }
        guard index >= 0 && index <= list.count else {
            contextMisuse("\(operation) at \(index) of \(entity.name).\(end.name), which has \(list.count) other members")
        }
        setLinked(member, end, linked: true, operation)
        list.insert(member, at: index)
        try context.placeLink(at: index, in: list, of: self, end)
    }

    /// `moveMember(at:to:in:)` on the ordered many-to-many end `end`.
    func moveLink(at source: Int, to destination: Int, _ end: ManyToManyEnd) throws(ContextError) {
        let context = registeredOwner("moveMember(at:to:in:)")
        var list = try members(of: end.name)
        guard source >= 0 && source < list.count && destination >= 0 && destination < list.count else {
            contextMisuse("moveMember(at: \(source), to: \(destination), in:) of \(entity.name).\(end.name), which has \(list.count) members")
        }
        list.insert(list.remove(at: source), at: destination)
        try context.placeLink(at: destination, in: list, of: self, end)
    }
}

extension ObjectContext {
    /// Gives `list[index]` (the whole list of `owner`'s ordered `end`, in its new order) a key
    /// between its neighbours' (every member a fresh key when there is no room).
    func placeLink(at index: Int, in list: [StoredObject], of owner: StoredObject, _ end: ManyToManyEnd) throws(ContextError) {
        let keys = try linkKeys(of: list, at: owner, end)
        if let placed = OrderKeys.placing(at: index, among: keys) {
            setPlace(owner, end, list[index], key: placed, was: keys[index])
        } else {
            for (rank, member) in list.enumerated() { setPlace(owner, end, member, key: OrderKeys.renumbered(rank), was: keys[rank]) }
        }
    }

    /// After `replaceMembers(of:with:)` made `members` the whole of `owner`'s ordered `end`: their
    /// keys are kept when they already increase along the list, fresh ones `step` apart otherwise.
    func placeLinksInOrder(_ members: [StoredObject], of owner: StoredObject, _ end: ManyToManyEnd) throws(ContextError) {
        let keys = try linkKeys(of: members, at: owner, end)
        guard !OrderKeys.areIncreasing(keys) else { return }
        for (rank, member) in members.enumerated() { setPlace(owner, end, member, key: OrderKeys.renumbered(rank), was: keys[rank]) }
    }

    /// After the link between `owner` (through `end`) and `member` was made: it goes last at
    /// each ordered end of the pair. A base that cannot be read leaves it unplaced here: the save
    /// then places it after the store's last key.
    func appendLink(_ owner: StoredObject, _ end: ManyToManyEnd, _ member: StoredObject) {
        for (from, fromEnd, to) in [(owner, end, member), (member, end.inverseEnd(core.schema), owner)] where fromEnd.isOrdered {
            let last: Int64?
            do {
                last = try lastLinkKey(of: from.storedID, owner: from, fromEnd)
            } catch {
                continue
            }
            setPlace(from, fromEnd, to, key: OrderKeys.after(last), was: nil)
            if owner === member { break }  // its own inverse: one end, one place
        }
    }

    /// Gives the link from `owner` through its ordered `end` to `member` the key `key` (it had
    /// `was`): a change of the owner only, which becomes updated.
    func setPlace(_ owner: StoredObject, _ end: ManyToManyEnd, _ member: StoredObject, key: Int64, was: Int64?) {
        guard key != was else { return }
        links.setPlace(owner, end.name, member, key: key)
        graphEpoch &+= 1
        if !owner.insertedFlag { markMembershipChanged(of: owner.storedID) }
    }
}
