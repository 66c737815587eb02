// Many-to-many links in a save: each link the commit changes is a `LinkWrite` kept with the entry
// of one of its ends. The batch gets its two entries (one per end's table: ManyToManyEnd.swift)
// after the record and index operations, unversioned, like index entries: the link never makes a
// save conflict itself, the records of both ends do (every write has both ends in the save,
// written, so their versions rise and are checked).

/// One link a save writes (or removes), from the entry it is kept with (the owner).
struct LinkWrite {
    /// The owner's end of the relationship.
    let end: ManyToManyEnd
    /// The member's entry, when it is in the save: its ID is the entry's (a new object's
    /// permanent ID is allocated after the write is planned, and may be again in a round).
    var memberEntry: Int?
    /// The member's ID when it has no entry (and as planned, otherwise).
    let memberID: ObjectID
    var linked: Bool
    /// The link's order key at the owner's end, when that end is ordered and the key is given
    /// (nil: the stored key stays, or a new link goes after the end's last).
    var position: Int64? = nil
    /// The same at the member's end.
    var inversePosition: Int64? = nil
    /// Whether the write only places a link that stands at the owner's ordered end (a reorder:
    /// a change of the owner alone, written only if the store still holds the link).
    var placesOnly = false
}

extension SaveEntry {
    /// Whether the entry's operation writes its record (puts or deletes it).
    var writesRecord: Bool {
        switch step {
        case .insert, .update, .delete: true
        case .check, .takeStore, .dropDeleted, .discardInsert: false
        }
    }

    /// Whether the entry leaves the object in the store.
    var leavesObject: Bool {
        switch step {
        case .insert, .update, .check: true
        case .takeStore(let values, _): values != nil
        case .delete, .dropDeleted, .discardInsert: false
        }
    }
}

extension ObjectContext {
    /// Appends every entry's link writes: two unversioned puts for a link, two deletes for an
    /// unlink. A write whose ends are not both written is
    /// left out: it would change a link without raising the versions that guard it
    /// (`repairLinks` keeps that from happening after a conflict round). The halves at ordered
    /// ends, which carry keys and order entries, go through `OrderedLinkWrites`.
    func appendLinkOperations(of entries: [SaveEntry], to batch: inout StorageBatch) throws {
        var ordered = OrderedLinkWrites()
        for entry in entries where !entry.linkWrites.isEmpty && entry.writesRecord {
            guard let owner = entry.id.primaryKey else { continue }
            for write in entry.linkWrites {
                let memberID = write.memberEntry.map { entries[$0].id } ?? write.memberID
                guard let member = memberID.primaryKey else { continue }
                let inverse = write.end.inverseEnd(core.schema)
                if write.placesOnly {
                    ordered.place(owner: owner, write.end, member: member, key: write.position)
                } else if write.linked {
                    guard entry.leavesObject, let memberEntry = write.memberEntry,
                          entries[memberEntry].writesRecord && entries[memberEntry].leavesObject else { continue }
                    if write.end.isOrdered {
                        ordered.link(owner: owner, write.end, member: member, key: write.position)
                    } else {
                        batch.putUnversioned([], forKey: StorageMapping.linkKey(owner: owner, member: member), in: write.end.linkTable)
                    }
                    if inverse.isOrdered {
                        ordered.link(owner: member, inverse, member: owner, key: write.inversePosition)
                    } else {
                        batch.putUnversioned([], forKey: StorageMapping.linkKey(owner: member, member: owner), in: write.end.inverseLinkTable)
                    }
                } else {
                    batch.deleteUnversioned(StorageMapping.linkKey(owner: owner, member: member), in: write.end.linkTable)
                    batch.deleteUnversioned(StorageMapping.linkKey(owner: member, member: owner), in: write.end.inverseLinkTable)
                    if write.end.isOrdered { ordered.unlink(owner: owner, write.end, member: member) }
                    if inverse.isOrdered { ordered.unlink(owner: member, inverse, member: owner) }
                }
            }
        }
        if !ordered.isEmpty { try appendOrderedLinkOperations(ordered, to: &batch) }
    }
}
