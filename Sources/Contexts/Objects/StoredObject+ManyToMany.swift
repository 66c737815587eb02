import Policies

// Changing a many-to-many: a link is one fact with two ends, kept by the context
// (ContextLinks.swift), so adding `tag` to `post.tags` adds `post` to `tag.posts` at once. Both
// ends become updated (`membershipChangedFlag`): the save writes both records, raising and
// checking their versions, and the link's two entries in the same commit.

extension StoredObject {
    /// The many-to-many end `relationship` is, or nil for a relationship of another kind.
    func manyToManyEnd(_ relationship: String) -> ManyToManyEnd? {
        guard case .registered = lifecycle, let context = owner else { return nil }
        return context.core.schema.manyToManyEnd(entity.name, relationship)
    }

    /// Links or unlinks `member` through `end`, after the checks a to-one's change makes.
    func setLinked(_ member: StoredObject, _ end: ManyToManyEnd, linked: Bool, _ operation: String) {
        checkAccess()
        let context = registeredOwner(operation)
        context.checkOwnership(member, operation)
        guard member.entity.name == end.destination else {
            contextMisuse("\(entity.name).\(end.name) holds \(end.destination) objects, not \(member.storedID)")
        }
        context.setLinked(self, end, member, linked: linked)
    }

    /// Makes `members` the whole set: links the context sees and `kept` lacks go, the others come.
    func replaceLinks(_ end: ManyToManyEnd, with members: [StoredObject], keeping kept: Set<ObjectIdentifier>) throws(ContextError) {
        let context = registeredOwner("replaceMembers(of:with:)")
        for member in members {
            context.checkOwnership(member, "replaceMembers(of:with:)")
            guard member.entity.name == end.destination else {
                contextMisuse("\(entity.name).\(end.name) holds \(end.destination) objects, not \(member.storedID)")
            }
        }
        // Every ID the view holds, also of a member whose record is gone (its link goes too).
        for id in try context.linkIDs(of: storedID, owner: self, end) {
            let member = context.object(with: id)
            if !kept.contains(ObjectIdentifier(member)) { context.setLinked(self, end, member, linked: false) }
        }
        for member in members { context.setLinked(self, end, member, linked: true) }
        if end.isOrdered { try context.placeLinksInOrder(members, of: self, end) }
    }
}

extension ObjectContext {
    /// Records the link between `owner` and `member` through `end` as `linked`, at both ends;
    /// both become updated. A base that cannot be read counts as not knowing the link: the save
    /// writes it either way.
    func setLinked(_ owner: StoredObject, _ end: ManyToManyEnd, _ member: StoredObject, linked: Bool) {
        var based: Bool? = nil
        if links.change(owner, end, member) == nil {
            based = owner.insertedFlag || member.insertedFlag
                ? false : try? baseLink(owner.storedID, end, member.storedID, reading: owner)
        }
        guard links.set(owner, end, member, linked: linked, based: based) else { return }
        graphEpoch &+= 1
        if linked { appendLink(owner, end, member) }
        for object in owner === member ? [owner] : [owner, member] where !object.insertedFlag {
            markMembershipChanged(of: object.storedID)
        }
    }
}
