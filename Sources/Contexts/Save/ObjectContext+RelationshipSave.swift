import Policies

// What a root save does for relationships, around the save of ObjectContext+Save.swift:
//
// - before collecting the save set: every changed to-one's destinations (old and new) are loaded
//   and marked, so both ends are in the save (written, versioned, conflict-checked); a `deny`
//   that still has destinations fails the save with a validation error, before anything is written;
// - after allocating keys: references to objects inserted by the same save take their permanent IDs;
// - after each conflict round: a reference to an object the policy left deleted is removed (or
//   cascades), and a delete that won against a store update applies its rules again to the members
//   that update added, so no stored to-one points at a deleted object;
// - before the first commit and after each conflict round: one-to-one pairs are made symmetric
//   (ObjectContext+OneToOneRepair.swift).

extension ObjectContext {
    /// The pre-pass: marks the ends of every changed to-one and checks the `deny` rules.
    ///
    /// - Throws: ``ValidationError`` for a denied delete; ``ContextError/objectNotFound(_:)`` for a
    ///   new reference to an object the store no longer holds and this context does not either.
    func prepareRelationshipsForSave() throws {
        if let failure = deleteRuleFailure.take() { throw failure }
        if core.hasManyToMany { try prepareLinksForSave() }
        for object in objectsInOrder where !object.isFaultStorage && !object.entity.layout.relationships.isEmpty {
            if object.deletedFlag {
                if object.entity.layout.hasDenyRule { try checkDenyRules(of: object) }
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
            } else if let end = core.schema.manyToManyEnd(object.entity.name, relationship.name) {
                destinations = try linkIDs(of: object.storedID, owner: object, end).count
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

    /// Adds to the save the members the store holds of each object that `candidates` deletes:
    /// a nullify rule writes each one without its to-one, a cascade deletes it (and goes on from
    /// it). Read from the latest commit: a member this context does not see (it holds an older
    /// state of it, or never read it) is still a member in the store. Returns whether it added any.
    ///
    /// The owner's delete is conditioned on its version and every membership change raises it,
    /// so the commit fails if the store's members change before it.
    ///
    /// `deletedAreDeletes`: every object deleted in this context is in `entries` as a delete (so
    /// before any conflict round: the save made one entry per changed object). Then a member
    /// the context deleted, a cascade's usual member, is settled without a lookup: its entry
    /// is a delete already.
    @discardableResult
    func includeStoreMembers(ofDeletesAmong candidates: [Int], in entries: inout [SaveEntry], deletedAreDeletes: Bool = false) throws -> Bool {
        // Only deletes of owners with a to-many (or a one-to-one end) have members to add: a
        // cascade's members, mostly to-ones, are not listed (about 40 instructions each).
        let hasOneToOne = core.schema.hasOneToOne
        var worklist: [Int] = []
        for index in candidates where entries[index].isDelete
            && (hasOneToOne || entries[index].object.withLayout({ $0.hasToMany })) {
            worklist.append(index)
        }
        guard !worklist.isEmpty else { return false }
        // Many-to-many links look entries up by object whatever their step.
        let skipsDeleted = deletedAreDeletes && !core.hasManyToMany
        /// Whether `object` is one this context deleted, settled as a delete already.
        func settled(_ object: StoredObject) -> Bool { skipsDeleted && object.deletedFlag && !object.isFaultStorage }
        var entryOfObject: [ObjectIdentifier: Int] = [:]
        entryOfObject.reserveCapacity(entries.count)
        // By index, not by element: iterating the entries copied each one (a retain and a release
        // of all it holds). Settled objects' entries are never looked up. While deletes are
        // settled, an entry's object is settled exactly when the entry is a delete (the save made
        // an entry of each changed object, a delete of each deleted one, and no other kind is of a
        // deleted object): told by the entry, not by its object (a cascade's 10,000, each out of
        // the cache). Pinned by the assertion, which the tests run.
        for index in entries.indices {
            assert(!skipsDeleted || entries[index].isDelete == settled(entries[index].object),
                   "an entry of a settled delete that is not a delete, or the reverse")
            if skipsDeleted && entries[index].isDelete { continue }
            entryOfObject[ObjectIdentifier(entries[index].object)] = index
        }
        // By destination entity, made when first needed (from the entries as they were then:
        // entries added later are not settled ones).
        var settledByEntity: [String: SettledDeletes] = [:]
        func settledKeys(of entityName: String, in entries: [SaveEntry]) -> SettledDeletes {
            guard skipsDeleted else { return SettledDeletes() }
            if let made = settledByEntity[entityName] { return made }
            let made = SettledDeletes(entries, entityName: entityName, settled: settled)
            settledByEntity[entityName] = made
            return made
        }
        var added = false
        while let index = worklist.popLast() {
            let owner = entries[index].object
            guard hasOneToOne || owner.withLayout({ $0.hasToMany }) else { continue }
            let relationships = owner.entity.layout.relationships
            for position in relationships.indices {
                // A to-many's members, or the objects whose one-to-one end names the owner (looked
                // up only in a schema that has one-to-ones: a cascade's members are mostly to-ones).
                guard relationships[position].isToMany
                    || (core.schema.hasOneToOne && core.schema.oneToOneEnd(owner.entity.name, relationships[position].name) != nil)
                else { continue }
                let relationship = relationships[position]
                if let end = core.schema.manyToManyEnd(owner.entity.name, relationship.name) {
                    if try includeStoreLinks(of: index, end, in: &entries, entryOfObject: &entryOfObject, worklist: &worklist) { added = true }
                    continue
                }
                let rule = relationship.description.deleteRule
                guard rule != .noAction else { continue }
                // A cascade's members read whole at the delete, at the version the store is still
                // at, and all settled: every member the store holds is settled (CascadeReads.swift).
                let stored = try storeMembers(of: entries[index].id, relationship, unlessReadAt: { version in
                    rule == .cascade && skipsDeleted && cascadeReads.covers(owner, relationship.name, at: version, settled: settled)
                })
                if rule == .deny {
                    let memberIDs = stored.keys.map { ObjectID(entityName: stored.entityName, primaryKey: $0) }
                    // Members this context moved away count no more (`checkDenyRules` counted its view).
                    let remaining = memberIDs.filter { id in
                        guard let member = registeredObject(for: id) else { return true }
                        if settled(member) { return false }
                        guard let existing = entryOfObject[ObjectIdentifier(member)] else { return true }
                        return !entries[existing].writesNoReference(to: entries[index].id, relationship)
                    }
                    if !remaining.isEmpty {
                        throw ValidationError(objectID: entries[index].id, entityName: owner.entity.name, attributeName: relationship.name,
                                              problem: .deleteDenied(destinations: remaining.count))
                    }
                    continue
                }
                guard !stored.keys.isEmpty else { continue }
                var settledMembers = settledKeys(of: stored.entityName, in: entries)
                for key in stored.keys {
                    if settledMembers.contains(key) { continue }
                    let id = ObjectID(entityName: stored.entityName, primaryKey: key)
                    if let registered = registeredObject(for: id), settled(registered) { continue }
                    // Gone meanwhile (nil): the commit's conditions tell.
                    guard let member = try loadedMember(id) else { continue }
                    if let existing = entryOfObject[ObjectIdentifier(member)] {
                        // A member this save moves elsewhere is not cascaded (its own version check
                        // guards the move); one still pointing here is, or is nullified below.
                        if rule == .cascade && !entries[existing].isDelete
                            && !entries[existing].writesNoReference(to: entries[index].id, relationship) {
                            entries[existing].step = .delete
                            worklist.append(existing)
                        }
                        continue
                    }
                    added = true
                    if rule == .cascade || member.deletedFlag {
                        entries.append(SaveEntry(object: member, id: member.storedID, step: .delete,
                                                 values: SaveEntry.nullValues(for: member), ancestorVersion: member.ancestorVersion))
                    } else {
                        var values = member.current
                        if let position = member.entity.layout.relationship(named: relationship.description.inverse)?.storagePosition {
                            values[position] = .null
                        }
                        entries.append(SaveEntry(object: member, id: member.storedID, step: .update, values: values,
                                                 ancestorVersion: member.ancestorVersion))
                    }
                    entries[entries.count - 1].ownerEntry = index
                    entryOfObject[ObjectIdentifier(member)] = entries.count - 1
                    if entries[entries.count - 1].isDelete { worklist.append(entries.count - 1) }
                }
            }
        }
        return added
    }

    /// The member `id` loaded in this context; nil when the store no longer holds it.
    func loadedMember(_ id: ObjectID) throws(ContextError) -> StoredObject? {
        do {
            return try existingObject(with: id)
        } catch {
            if case .objectNotFound = error { return nil }
            throw error
        }
    }

    /// The objects whose to-one (the inverse of `relationship`) names `owner` in the latest
    /// commit, read through that to-one's index: their entity and their primary keys (IDs are
    /// made only for the members not settled already). None when `known` says the members at
    /// the latest commit's version need no reading (asked only when the owner's reference is
    /// whole in the index: a cut one's entries are shared with other owners).
    private func storeMembers(
        of owner: ObjectID, _ relationship: RelationshipLayout, unlessReadAt known: (UInt64) -> Bool = { _ in false }
    ) throws(ContextError) -> (entityName: String, keys: [UInt64]) {
        let destination = try core.entity(named: relationship.description.destination)
        let inverse = relationship.description.inverse
        // The to-one's system index: on the to-one alone, or (ordered) on it and its order key.
        guard let index = destination.layout.indexes.first(where: { $0.attributeNames.first == inverse }) else {
            return (destination.name, [])
        }
        var prefix: [UInt8] = []
        let whole = IndexKeyEncoding.append(.string(owner.uriString), to: &prefix, cap: index.contentCap)
        let view = try core.readView()
        defer { view.close() }
        if whole && known(view.version) { return (destination.name, []) }
        var keys: [UInt64] = []
        do {
            try view.forEach(in: index.tableName, from: prefix, to: IndexKeyEncoding.successor(ofPrefix: prefix), reverse: false) { key, _, _ in
                if let primaryKey = IndexKeyEncoding.primaryKey(ofEntry: key) { keys.append(primaryKey) }
                return true
            }
        } catch {
            throw ContextError(readFailure: error)
        }
        return (destination.name, keys)
    }

    /// After a conflict round's resolutions: the graph the next commit writes has no reference to
    /// an object it leaves deleted. `resolved`: the entries the policy just resolved.
    func repairReferences(
        in entries: inout [SaveEntry], resolved: [Int], theirs: [(values: ObjectValues, version: UInt64)?]
    ) throws {
        // Members nullified or cascaded for a delete the policy cancelled are left as they are;
        // owners come before their members, so a cancelled cascade cancels all the way down.
        for index in entries.indices {
            guard let owner = entries[index].ownerEntry else { continue }
            switch (entries[owner].step, entries[index].step) {
            case (.delete, _), (.dropDeleted, _): continue
            // A member the policy just resolved to the store's state keeps it: its ancestor may
            // be an older read (a one-to-one repair reads what the entry takes as the truth).
            case (_, .takeStore): continue
            default: entries[index].step = .takeStore(values: entries[index].ancestorValues, version: entries[index].ancestorVersion)
            }
        }
        // Deletes that won against a store update: that update may have added members.
        try includeStoreMembers(ofDeletesAmong: resolved, in: &entries)
        try includeRestoredDestinations(of: resolved, theirs: theirs, in: &entries)
        try nullifyReferencesToDeleted(in: &entries)
        if core.schema.hasOneToOne { try repairOneToOnePairs(in: &entries, first: resolved) }
        if core.hasManyToMany { repairLinks(in: &entries) }
    }

    /// A resolution may write a reference the store's record does not hold (overwrite writes our
    /// unchanged to-one back over the store's nullified one): its destination joins the save,
    /// so that the next commit checks it still exists (an update/delete conflict on it if not).
    /// A destination this context no longer holds and the store does not either loses the reference.
    private func includeRestoredDestinations(
        of resolved: [Int], theirs: [(values: ObjectValues, version: UInt64)?], in entries: inout [SaveEntry]
    ) throws {
        var entryOfID: [ObjectID: Int] = [:]
        for (index, entry) in entries.enumerated() { entryOfID[entry.id] = index }
        for (position, index) in resolved.enumerated() {
            switch entries[index].step {
            case .insert, .update: break
            default: continue
            }
            for relationship in entries[index].object.entity.layout.relationships {
                guard let slot = relationship.storagePosition,
                      let id = StoredObject.referencedID(entries[index].values[slot]),
                      entries[index].values[slot] != theirs[position]?.values[slot], entryOfID[id] == nil else { continue }
                let destination: StoredObject
                if let registered = registeredObject(for: id), !registered.isFaultStorage {
                    destination = registered
                } else if let loaded = try loadedMember(id) {
                    destination = loaded
                } else {
                    entries[index].values[slot] = .null
                    try entries[index].validate()
                    continue
                }
                if destination.deletedFlag || destination.insertedFlag { continue }
                entries.append(SaveEntry(object: destination, id: destination.storedID, step: .update, values: destination.current,
                                         ancestorVersion: destination.ancestorVersion))
                entryOfID[id] = entries.count - 1
            }
        }
    }

    /// Removes from what the entries write every reference to an object they delete.
    func nullifyReferencesToDeleted(in entries: inout [SaveEntry]) throws {
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

extension SaveEntry {
    var isDelete: Bool {
        if case .delete = step { return true }
        return false
    }

    /// Whether the entry writes the object without naming `owner` in the inverse of `relationship`.
    func writesNoReference(to owner: ObjectID, _ relationship: RelationshipLayout) -> Bool {
        if case .delete = step { return true }
        guard let position = object.entity.layout.relationship(named: relationship.description.inverse)?.storagePosition else { return false }
        switch step {
        case .insert, .update: return values[position] != .string(owner.uriString)
        default: return false
        }
    }
}
