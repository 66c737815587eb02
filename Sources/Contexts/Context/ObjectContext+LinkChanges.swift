import Policies

// A context's many-to-many changes through the rest of its life: delete rules at `delete(_:)`,
// forgetting, refreshing and merging objects, and a child's save pushing its links to the parent.

/// One link a child's save hands its parent, or one place it gave a link at an ordered end.
/// Sendable: it crosses queues.
struct ChildLinkChange: Sendable {
    let owner: ObjectID
    let entity: String
    let relationship: String
    let member: ObjectID
    let linked: Bool
    /// For a place: the link's key at the owner's ordered end (`linked` is true).
    var place: Int64? = nil
}

extension ObjectContext {
    /// A many-to-many's delete rule, at `delete(_:)`: `nullify` unlinks every member (each
    /// becomes updated), `cascade` deletes them; `deny` is the save's to check; `noAction` leaves
    /// the links (the members keep naming the deleted object, and its entries name them).
    func applyLinkDeleteRule(of object: StoredObject, _ end: ManyToManyEnd) {
        guard end.deleteRule == .nullify || end.deleteRule == .cascade else { return }
        let members: [StoredObject]
        do {
            members = try linkedMembers(of: object, end)
        } catch {
            deleteRuleFailure = deleteRuleFailure ?? error
            return
        }
        for member in members {
            if end.deleteRule == .cascade { delete(member) } else { setLinked(object, end, member, linked: false) }
        }
    }

    /// The object leaves the context: what its ends read goes, and the places it gave; an
    /// insert's links go with it (it never existed). A stored object's link changes stay, so a
    /// save that would link to an object this context found deleted fails with `objectNotFound`,
    /// as a to-one's reference does.
    func forgetLinks(of object: StoredObject) {
        links.forgetReads(of: object)
        links.dropPlaces(of: object)
        if object.insertedFlag { links.dropChanges(involving: object) }
    }

    /// A refresh or merge moves the object's ancestor to the base's: its links' ancestor becomes
    /// the store's. Without merging, its link changes go too, at both ends.
    func refreshLinks(of object: StoredObject, mergeChanges: Bool) {
        links.forgetReads(of: object)
        if !mergeChanges {
            links.dropChanges(involving: object)
            graphEpoch &+= 1
        }
    }

    /// This context's link changes, once per link, by ID, then its places (the keys it gave
    /// links at ordered ends: the parent's view is this child's base, so they mean the same there).
    func pendingLinkChanges() -> [ChildLinkChange] {
        var changes: [ChildLinkChange] = []
        links.forEachLink { owner, relationship, member, linked in
            changes.append(ChildLinkChange(owner: owner.storedID, entity: owner.entity.name, relationship: relationship,
                                           member: member.storedID, linked: linked))
        }
        links.forEachPlace { owner, relationship, member, key in
            changes.append(ChildLinkChange(owner: owner.storedID, entity: owner.entity.name, relationship: relationship,
                                           member: member.storedID, linked: true, place: key))
        }
        return changes
    }

    /// Applies a child's link changes here, as `addMember`/`removeMember` would (after its
    /// inserts and changes): both ends become updated here; a place makes its owner updated.
    func applyChildLinkChanges(_ changes: [ChildLinkChange]) {
        checkQueue()
        for change in changes {
            guard let end = core.schema.manyToManyEnd(change.entity, change.relationship) else { continue }
            guard let owner = heldOrFault(change.owner), let member = heldOrFault(change.member) else { continue }
            if let key = change.place {
                setPlace(owner, end, member, key: key, was: nil)
            } else {
                setLinked(owner, end, member, linked: change.linked)
            }
        }
    }

    /// The registered object of `id`, or a fault of it; nil for a temporary ID this context does
    /// not hold (an insert the child made and deleted).
    private func heldOrFault(_ id: ObjectID) -> StoredObject? {
        if let held = registeredObject(for: id) { return held }
        return id.isTemporaryID ? nil : object(with: id)
    }
}
