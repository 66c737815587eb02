// Delete rules, applied at `delete(_:)` so that `deletedObjects` and the relationship values show
// them before the save; `deny` is checked by the save (ObjectContext+RelationshipSave.swift),
// since the relationship may be emptied before then.

extension ObjectContext {
    /// Applies each relationship's delete rule of `object`, which is marked deleted already (so a
    /// cascade that comes back to it ends).
    func applyDeleteRules(of object: StoredObject) {
        for relationship in object.entity.layout.relationships {
            if let end = core.schema.manyToManyEnd(object.entity.name, relationship.name) {
                applyLinkDeleteRule(of: object, end)
                continue
            }
            let rule = relationship.description.deleteRule
            if let position = relationship.storagePosition {
                // A to-one: its destination's to-many loses the object (it is derived from the
                // members' to-ones, so only the destination's version is to raise); a one-to-one
                // partner drops its own reference.
                guard let id = StoredObject.referencedID(object.current[position]) else { continue }
                switch rule {
                case .nullify:
                    if let end = core.schema.oneToOneEnd(object.entity.name, relationship.name) {
                        if let partner = try? existingObject(with: id), !partner.deletedFlag,
                           partner.current[end.inversePosition] == .string(object.storedID.uriString) {
                            partner.setReference(.null, at: end.inversePosition)
                        }
                    } else {
                        markMembershipChanged(of: id)
                    }
                case .cascade:
                    if let destination = try? existingObject(with: id) { delete(destination) }
                case .deny, .noAction:
                    break
                }
                continue
            }
            guard rule == .nullify || rule == .cascade else { continue }
            let members: [StoredObject]
            do {
                members = try fetch(object.memberRequest(relationship))
            } catch {
                deleteRuleFailure = deleteRuleFailure ?? error
                continue
            }
            for member in members {
                if rule == .cascade {
                    delete(member)
                } else {
                    member.setReference(.null, at: member.entity.layout.relationship(named: relationship.description.inverse)!.storagePosition!)
                }
            }
        }
    }
}
