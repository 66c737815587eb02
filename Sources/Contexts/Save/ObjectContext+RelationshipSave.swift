import Policies

// What a root save does for relationships, around the save of ObjectContext+Save.swift:
//
// - before collecting the save set: every changed to-one's destinations (old and new) are loaded
//   and marked, so both ends are in the save (written, versioned, conflict-checked); a `deny`
//   that still has destinations fails the save with a validation error, before anything is written;
// - after allocating keys: references to objects inserted by the same save take their permanent IDs;
// - after each conflict round: a reference to an object the policy left deleted is removed (or
//   cascades), and a delete that won against a store update applies its rules again to the members
//   that update added, so no stored to-one points at a deleted object.

extension ObjectContext {
    /// The pre-pass: marks the ends of every changed to-one and checks the `deny` rules.
    ///
    /// - Throws: ``ValidationError`` for a denied delete; ``ContextError/objectNotFound(_:)`` for a
    ///   new reference to an object the store no longer holds and this context does not either.
    func prepareRelationshipsForSave() throws {
        if let failure = deleteRuleFailure.take() { throw failure }
        for object in objectsInOrder where !object.isFaultStorage && !object.entity.layout.relationships.isEmpty {
            if object.deletedFlag {
                try checkDenyRules(of: object)
                continue
            }
            guard object.insertedFlag || object.hasChangedValues else { continue }
            let ancestor = object.insertedFlag ? nil : object.ancestorValues
            for relationship in object.entity.layout.relationships {
                guard let position = relationship.storagePosition else { continue }
                let new = object.current[position]
                let old = ancestor?[position] ?? .null
                guard new != old else { continue }
                if let id = StoredObject.referencedID(old) { markMembershipChanged(of: id) }
                if let id = StoredObject.referencedID(new) {
                    // The new end must exist: it is in the save's conflict check, as a change.
                    let destination = try existingObject(with: id)
                    if !destination.insertedFlag && !destination.deletedFlag { destination.membershipChangedFlag = true }
                }
            }
        }
    }

    private func checkDenyRules(of object: StoredObject) throws {
        for relationship in object.entity.layout.relationships where relationship.description.deleteRule == .deny {
            let destinations: Int
            if let position = relationship.storagePosition {
                let id = StoredObject.referencedID(object.current[position])
                destinations = id.map { registeredObject(for: $0)?.deletedFlag == true ? 0 : 1 } ?? 0
            } else {
                destinations = try count(for: object.memberRequest(relationship))
            }
            if destinations > 0 {
                throw ValidationError(objectID: object.storedID, entityName: object.entity.name,
                                      attributeName: relationship.name, problem: .deleteDenied(destinations: destinations))
            }
        }
    }

    /// Rewrites references to the save's inserted objects from their temporary IDs to the
    /// permanent ones they are about to take.
    func resolveTemporaryReferences(in entries: inout [SaveEntry], insertedEntries: [Int]) {
        var permanent: [String: String] = [:]
        for index in insertedEntries where entries[index].object.storedID.isTemporaryID {
            permanent[entries[index].object.storedID.uriString] = entries[index].id.uriString
        }
        guard !permanent.isEmpty else { return }
        for index in entries.indices {
            let layout = entries[index].object.entity.layout
            for relationship in layout.relationships {
                guard let position = relationship.storagePosition,
                      case .string(let uri) = entries[index].values[position], let replacement = permanent[uri] else { continue }
                entries[index].values[position] = .string(replacement)
            }
        }
    }

    /// After a conflict round's resolutions: the graph the next commit writes has no reference to
    /// an object it leaves deleted. `resolved`: the entries the policy just resolved.
    func repairReferences(in entries: inout [SaveEntry], resolved: [Int]) throws {
        // Deletes that won against a store update: that update may have added members.
        var worklist = resolved.filter { if case .delete = entries[$0].step { true } else { false } }
        var entryOfObject: [ObjectIdentifier: Int] = [:]
        for (index, entry) in entries.enumerated() { entryOfObject[ObjectIdentifier(entry.object)] = index }
        while let index = worklist.popLast() {
            let object = entries[index].object
            for relationship in object.entity.layout.relationships where relationship.isToMany {
                let rule = relationship.description.deleteRule
                guard rule != .noAction else { continue }
                let members = try fetch(object.memberRequest(relationship))
                if rule == .deny, !members.isEmpty {
                    throw ValidationError(objectID: entries[index].id, entityName: object.entity.name,
                                          attributeName: relationship.name, problem: .deleteDenied(destinations: members.count))
                }
                for member in members {
                    let existing = entryOfObject[ObjectIdentifier(member)]
                    if rule == .cascade {
                        if let existing {
                            entries[existing].step = .delete
                        } else {
                            entries.append(SaveEntry(object: member, id: member.storedID, step: .delete,
                                                     values: member.current, ancestorVersion: member.ancestorVersion))
                            entryOfObject[ObjectIdentifier(member)] = entries.count - 1
                            worklist.append(entries.count - 1)
                        }
                    } else if existing == nil {
                        // Nullified by the pass below, like any reference to a deleted object.
                        entries.append(SaveEntry(object: member, id: member.storedID, step: .update,
                                                 values: member.current, ancestorVersion: member.ancestorVersion))
                        entryOfObject[ObjectIdentifier(member)] = entries.count - 1
                    }
                }
            }
        }
        var gone = Set<String>()
        for entry in entries {
            switch entry.step {
            case .delete, .dropDeleted, .takeStore(values: nil, version: _): gone.insert(entry.id.uriString)
            default: break
            }
        }
        guard !gone.isEmpty else { return }
        for index in entries.indices {
            let layout = entries[index].object.entity.layout
            switch entries[index].step {
            case .insert, .update:
                for relationship in layout.relationships {
                    guard let position = relationship.storagePosition,
                          case .string(let uri) = entries[index].values[position], gone.contains(uri) else { continue }
                    entries[index].values[position] = .null
                    try entries[index].validate()
                }
            case let .takeStore(values?, version):
                // A cancelled delete (a cascade the store's update stopped) keeps the store's
                // record, whose to-one may name an object this commit deletes: write it nullified.
                var repaired = values
                for relationship in layout.relationships {
                    guard let position = relationship.storagePosition,
                          case .string(let uri) = values[position], gone.contains(uri) else { continue }
                    repaired[position] = .null
                }
                guard repaired != values else { continue }
                entries[index].values = repaired
                entries[index].ancestorValues = values
                entries[index].ancestorVersion = version
                entries[index].step = .update
                try entries[index].validate()
            default:
                continue
            }
        }
    }
}
