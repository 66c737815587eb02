import Policies

// Delete rules, applied at `delete(_:)` so that `deletedObjects` and the relationship values show
// them before the save; `deny` is checked by the save (ObjectContext+RelationshipSave.swift),
// since the relationship may be emptied before then.

extension ObjectContext {
    /// A to-many's owner whose delete rule is deleting one of its members: the member's to-one
    /// back to it (at `position`) names an object deleted already. A class: each member's
    /// delete binds it once (a struct of the object and the string retained and released both).
    final class CascadeOwner {
        let object: StoredObject
        /// The position of the inverse to-one in the members' values.
        let position: Int
        /// The owner's ID URI (a `.string`), which that to-one holds while it names the owner.
        let reference: AttributeValue

        init(object: StoredObject, position: Int, reference: AttributeValue) {
            self.object = object
            self.position = position
            self.reference = reference
        }
    }

    /// Applies each relationship's delete rule of `object`, which is marked deleted already (so a
    /// cascade that comes back to it ends). `owner`: the owner whose cascade deletes `object`.
    func applyDeleteRules(of object: StoredObject, cascadedFrom owner: CascadeOwner? = nil) {
        let relationships = object.entity.layout.relationships
        for offset in relationships.indices {
            // The to-one back to the cascading owner, deleted already: its rule comes to what the
            // general path below does for it (a cascade ends at the owner, a nullify raises the
            // owner's version), without reading the owner's ID out of the URI per member, nor
            // decoding the member's record (`value(at:equals:)` compares in it).
            if let owner, relationships[offset].storagePosition == owner.position,
               object.value(at: owner.position, equals: owner.reference) {
                if relationships[offset].description.deleteRule == .nullify && !owner.object.insertedFlag {
                    owner.object.membershipChangedFlag = true
                }
                continue
            }
            let relationship = relationships[offset]
            if core.hasManyToMany, let end = core.schema.manyToManyEnd(object.entity.name, relationship.name) {
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
                    if core.schema.hasOneToOne, let end = core.schema.oneToOneEnd(object.entity.name, relationship.name) {
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
            let members: [StoredObject], wholeAt: UInt64?, namesOwnerExactly: Bool
            do {
                (members, wholeAt, namesOwnerExactly) = try readMembers(of: object, relationship)
            } catch {
                deleteRuleFailure = deleteRuleFailure ?? error
                continue
            }
            let inverse = members.first?.entity.layout.relationship(named: relationship.description.inverse)?.storagePosition
            if rule == .cascade, let inverse {
                // The members' own string when they share one (a MemberPrefetch's): a decoded
                // member's comparison with it is then at once, not byte by byte.
                var uri = object.storedID.uriString
                if case .string(let held) = members[0].value(at: inverse), held == uri { uri = held }
                deleteCascaded(members, from: CascadeOwner(object: object, position: inverse, reference: .string(uri)),
                               namingOwner: namesOwnerExactly)
                if let wholeAt { cascadeReads.keep(members, of: object, relationship.name, readAt: wholeAt) }
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

    /// `delete(member, cascadedFrom: owner)` of each of `members`, a cascade's. A member whose
    /// only relationship is the to-one back to the owner, naming it, is deleted here: its rule
    /// for that to-one is the one `applyDeleteRules` applies (a cascade ends at the owner, a
    /// nullify raises the owner's version), decided once for all. Reading each member's
    /// relationships and the owner's fields cost about 190 instructions a member.
    ///
    /// The members deleted here move the graph epoch once, before anything can read it (the
    /// next member deleted the general way, or the return), not once each (74 instructions a
    /// member): nothing in between reads it.
    ///
    /// `namingOwner`: each member's to-one is known to hold the owner's reference byte for byte
    /// (as the read that made them found it), so it is not compared again (about 100
    /// instructions a member).
    private func deleteCascaded(_ members: [StoredObject], from owner: CascadeOwner, namingOwner: Bool) {
        guard let layout = members.first?.layout else { return }
        let position = owner.position, reference = owner.reference, ownerObject = owner.object
        let back = layout.relationships.first { $0.storagePosition == position }
        let sole = layout.relationships.count == 1 && back != nil
        let raisesOwnerVersion = back?.description.deleteRule == .nullify && !ownerObject.insertedFlag
        checkQueue()
        var epochToMove = false
        for index in members.indices {
            // `delete(_:cascadedFrom:)`'s steps for a saved, loaded member not deleted yet. The
            // member is used without a count of its own (the list holds it): iterating the list
            // retained and released each.
            let deletedHere = Unmanaged.passUnretained(members[index])._withUnsafeGuaranteedRef { member in
                guard sole, member.withLayout({ $0 === layout }), !member.deletedFlag, !member.insertedFlag, !member.isFaultStorage
                else { return false }
                // `checkOwnership`'s usual answer here, without its call (its misuse reports are out of line).
                if case .registered = member.lifecycle, member.link === link {} else { checkOwnership(member, "delete(_:)") }
                guard namingOwner || member.value(at: position, equals: reference) else { return false }
                member.setDeletedLeavingEpoch()
                if raisesOwnerVersion { ownerObject.membershipChangedFlag = true }
                return true
            }
            if deletedHere {
                epochToMove = true
                continue
            }
            if epochToMove {
                graphEpoch &+= 1
                epochToMove = false
            }
            delete(members[index], cascadedFrom: owner)
        }
        if epochToMove { graphEpoch &+= 1 }
    }
}
