import Policies

// What a root save does for many-to-many links, around the save of ObjectContext+Save.swift:
//
// - the pre-pass: both ends of every changed link are loaded and marked updated (so both are
//   written, versioned and checked); a link to an object this context found deleted fails the
//   save with `objectNotFound`, as a to-one's reference does;
// - collecting: each changed link becomes a `LinkWrite` of one end's entry (with its keys at
//   ordered ends), and each place of a link that stands a `placesOnly` write; a deleted object's
//   links as the store holds them (read at the latest commit, exact under the delete's version
//   condition) are removed, and its delete rule nullifies, cascades or denies their members;
// - after a conflict round (ObjectContext+LinkConflicts.swift settles the resolved objects'
//   links): no link to an object the commit leaves deleted, and both ends of every link written;
// - after the commit: the links' ancestor follows what was written, and the changes are done.

extension ObjectContext {
    /// The pre-pass: loads and marks both ends of every changed link, and the owner of every
    /// place (a reorder changes the ordered end alone).
    ///
    /// - Throws: ``ContextError/objectNotFound(_:)`` for a link to an object the store no longer
    ///   holds and this context does not either.
    func prepareLinksForSave() throws {
        links.forEachPlace { owner, _, _, _ in
            guard case .registered = owner.lifecycle, owner.link === link, !owner.insertedFlag, !owner.deletedFlag else { return }
            markMembershipChanged(of: owner.storedID)
        }
        try links.forEachLink { owner, _, member, linked in
            for object in owner === member ? [owner] : [owner, member] {
                guard case .registered = object.lifecycle, object.link === link else {
                    if linked { throw ContextError.objectNotFound(object.storedID) }
                    continue
                }
                if object.isFaultStorage {
                    do {
                        _ = try existingObject(with: object.storedID)
                    } catch ContextError.objectNotFound(_) where !linked {
                        continue
                    }
                }
                if !object.insertedFlag && !object.deletedFlag { object.membershipChangedFlag = true }
            }
        }
    }

    /// Makes each changed link a write of its owner's entry. Returns whether it added an entry (an
    /// end the pre-pass could not mark, which should not happen).
    func planLinkWrites(in entries: inout [SaveEntry]) throws -> Bool {
        guard !links.hasNoChanges else { return false }
        var entryOf: [ObjectIdentifier: Int] = [:]
        for (index, entry) in entries.enumerated() { entryOf[ObjectIdentifier(entry.object)] = index }
        var added = false
        func entry(of object: StoredObject) -> Int? {
            if let index = entryOf[ObjectIdentifier(object)] { return index }
            guard case .registered = object.lifecycle, object.link === link, !object.isFaultStorage,
                  !object.deletedFlag else { return nil }
            entries.append(SaveEntry(object: object, id: object.storedID, step: object.insertedFlag ? .insert : .update,
                                     values: object.current, ancestorVersion: object.ancestorVersion))
            entryOf[ObjectIdentifier(object)] = entries.count - 1
            added = true
            return entries.count - 1
        }
        links.forEachLink { owner, relationship, member, linked in
            guard let end = core.schema.manyToManyEnd(owner.entity.name, relationship), let ownerEntry = entry(of: owner) else { return }
            let memberEntry = entry(of: member)
            // A deleted end's links are its delete's to remove (`includeStoreLinks`).
            if entries[ownerEntry].isDelete || memberEntry.map({ entries[$0].isDelete }) == true { return }
            if linked && memberEntry == nil { return }
            entries[ownerEntry].linkWrites.append(LinkWrite(
                end: end, memberEntry: memberEntry, memberID: member.storedID, linked: linked,
                position: links.place(owner, relationship, member), inversePosition: links.place(member, end.inverse, owner)))
        }
        // Reorders of links that stand: the owner's alone.
        links.forEachPlace { owner, relationship, member, key in
            guard let end = core.schema.manyToManyEnd(owner.entity.name, relationship), links.change(owner, end, member) == nil,
                  let ownerEntry = entryOf[ObjectIdentifier(owner)], !entries[ownerEntry].isDelete,
                  entryOf[ObjectIdentifier(member)].map({ entries[$0].isDelete }) != true else { return }
            entries[ownerEntry].linkWrites.append(LinkWrite(
                end: end, memberEntry: entryOf[ObjectIdentifier(member)], memberID: member.storedID, linked: true,
                position: key, placesOnly: true))
        }
        return added
    }

    /// For the deleted entry `index`: removes its links of `end` as the store holds them (at the
    /// latest commit) and applies the end's delete rule to their members: `nullify` writes each
    /// (unlinked), `cascade` deletes each (and goes on from it), `deny` fails unless this save
    /// unlinked or deletes them all, `noAction` leaves them (both entries of each link).
    /// Returns whether it added an entry.
    func includeStoreLinks(
        of index: Int, _ end: ManyToManyEnd, in entries: inout [SaveEntry], entryOfObject: inout [ObjectIdentifier: Int],
        worklist: inout [Int]
    ) throws -> Bool {
        entries[index].linkWrites.removeAll { $0.end.name == end.name }
        guard let ownerKey = entries[index].id.primaryKey else { return false }
        let owner = entries[index].object
        let view = try core.readView()
        let memberKeys: [UInt64]
        do {
            defer { view.close() }
            memberKeys = try Self.storedLinks(of: ownerKey, end, in: view)
        }
        var added = false
        var remaining = 0
        for key in memberKeys {
            let memberID = ObjectID(entityName: end.destination, primaryKey: key)
            var member = registeredObject(for: memberID)
            var existing = member.flatMap { entryOfObject[ObjectIdentifier($0)] }
            // A link this context removed, or to a member this save deletes, is gone either way.
            let unlinkedHere = member.map { links.change(owner, end, $0) == false } ?? false
            let memberDeleted = existing.map { entries[$0].isDelete } ?? false
            switch end.deleteRule {
            case .deny:
                if !unlinkedHere && !memberDeleted { remaining += 1 }
            case .noAction:
                break
            case .nullify, .cascade:
                if let existing {
                    if end.deleteRule == .cascade && !memberDeleted && !unlinkedHere {
                        entries[existing].step = .delete
                        worklist.append(existing)
                    }
                } else if let loaded = try loadedMember(memberID) {
                    member = loaded
                    let step: SaveEntry.Step = end.deleteRule == .cascade || loaded.deletedFlag ? .delete : .update
                    entries.append(SaveEntry(object: loaded, id: loaded.storedID, step: step, values: loaded.current,
                                             ancestorVersion: loaded.ancestorVersion))
                    entries[entries.count - 1].ownerEntry = index
                    existing = entries.count - 1
                    entryOfObject[ObjectIdentifier(loaded)] = existing
                    if entries[entries.count - 1].isDelete { worklist.append(entries.count - 1) }
                    added = true
                }
            }
            // noAction leaves the link (both entries) naming the deleted object.
            if end.deleteRule == .noAction && !unlinkedHere && !memberDeleted { continue }
            entries[index].linkWrites.append(LinkWrite(end: end, memberEntry: existing, memberID: memberID, linked: false))
        }
        if remaining > 0 {
            throw ValidationError(objectID: entries[index].id, entityName: owner.entity.name, attributeName: end.name,
                                  problem: .deleteDenied(destinations: remaining))
        }
        return added
    }

    /// After a conflict round's resolutions and repairs: no write links an object the commit
    /// leaves deleted, a delete the policy cancelled unlinks nothing for it, and both ends of
    /// every remaining write are written (an end that took the store's state is written as it).
    func repairLinks(in entries: inout [SaveEntry]) {
        for index in entries.indices {
            // Members nullified or cascaded for a cancelled delete are left as the store holds them.
            if entries[index].ownerEntry != nil, case .takeStore = entries[index].step { entries[index].linkWrites = [] }
        }
        let stays = entries.map(\.leavesObject)
        for index in entries.indices where !entries[index].linkWrites.isEmpty {
            switch entries[index].step {
            case .takeStore(values: nil, version: _), .dropDeleted, .discardInsert:
                entries[index].linkWrites = []
                continue
            default:
                break
            }
            entries[index].linkWrites.removeAll { write in
                write.linked && !(stays[index] && (write.memberEntry.map { stays[$0] } ?? true))
            }
        }
        var mustWrite = Set<Int>()
        for (index, entry) in entries.enumerated() where !entry.linkWrites.isEmpty {
            mustWrite.insert(index)
            // A place changes its owner alone.
            for write in entry.linkWrites where !write.placesOnly { if let member = write.memberEntry { mustWrite.insert(member) } }
        }
        for index in mustWrite.sorted() {
            switch entries[index].step {
            case .check:
                entries[index].values = entries[index].ancestorValues
                entries[index].step = .update
            case let .takeStore(stored?, version):
                entries[index].values = stored
                entries[index].ancestorValues = stored
                entries[index].ancestorVersion = version
                entries[index].step = .update
            default:
                continue
            }
        }
    }

    /// After the commit: the links' ancestor is what it wrote (after a conflict, the store's:
    /// what each end read is forgotten), and the changes are done.
    func finishLinks(_ entries: [SaveEntry], hadConflicts: Bool) {
        if hadConflicts {
            links.forgetAllReads()
        } else {
            for entry in entries where !entry.linkWrites.isEmpty {
                guard let owner = entry.id.primaryKey else { continue }
                for write in entry.linkWrites {
                    let memberID = write.memberEntry.map { entries[$0].id } ?? write.memberID
                    guard let member = memberID.primaryKey else { continue }
                    links.noteRead(linked: write.linked, member: member, orderKey: write.position, of: entry.object, write.end.name)
                    if let memberEntry = write.memberEntry, !write.placesOnly {
                        links.noteRead(linked: write.linked, member: owner, orderKey: write.inversePosition,
                                       of: entries[memberEntry].object, write.end.inverse)
                    }
                }
            }
        }
        links.removeAllChanges()
        graphEpoch &+= 1
    }
}
