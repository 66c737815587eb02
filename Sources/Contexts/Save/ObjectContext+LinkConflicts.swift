import Policies

// Many-to-many links in a conflict. The fact is the set of links, merged link by link (the
// contract's choice): each link of a conflicting object that any side holds differently is one
// more property of the conflict, named `relationship[member ID URI]`, `true` when linked and absent
// (null) when not. So a policy resolves links as it resolves attributes, with no path of its own:
// storeTrump and objectTrump keep both sides' additions and removals, and where both sides
// changed one link the trumping side's state wins; overwrite writes the object's links as this
// context holds them (those it last read, with its changes); rollback takes the store's; error
// fails. A link's ancestor is what this context last read of it from that end (ContextLinks);
// unread, it is the state before this context's change, or the store's when unchanged (so a link
// nobody here read or changed is not in the conflict).
//
// A link has two ends, and both may conflict: the first resolved end (in the round's order)
// settles it, and the other end's resolution of that link is not used.
//
// At an ordered end the property's value is the link's order key there (`.int`; `true` for a
// link not placed yet), so a link's place merges like an attribute too: moves of different
// links are all kept, a link both sides moved goes where the winning side put it. A place is
// the ordered end's own: the other end's settling of the link leaves it to this end's
// resolution (a `placesOnly` write).

extension ObjectContext {
    /// The property naming the link to `member` through `relationship`.
    static func linkProperty(_ relationship: String, _ member: ObjectID) -> String {
        relationship + "[" + member.uriString + "]"
    }

    /// The relationship and member a link property names; nil for an attribute.
    static func linkOf(property: String) -> (relationship: String, member: ObjectID)? {
        guard property.last == "]", let open = property.firstIndex(of: "["),
              let member = ObjectID(uriString: String(property[property.index(after: open)..<property.index(before: property.endIndex)]))
        else { return nil }
        return (String(property[..<open]), member)
    }

    /// Adds the link properties of every update/update and update/delete conflict of the round,
    /// read in `view` (the view the conflicts' records were read in).
    func addLinkProperties(to round: inout ConflictRound, entries: [SaveEntry], view: any StorageReadView) throws {
        let conflicting = Set(round.entryIndices)
        // The links each conflicting entry's commit would change, from its own side.
        var written: [Int: [(end: String, member: ObjectID, change: WrittenLink)]] = [:]
        for (index, entry) in entries.enumerated() {
            for write in entry.linkWrites {
                if conflicting.contains(index) {
                    written[index, default: []].append((write.end.name, write.memberEntry.map { entries[$0].id } ?? write.memberID,
                                                        WrittenLink(linked: write.linked, position: write.position, placesOnly: write.placesOnly)))
                }
                if let member = write.memberEntry, conflicting.contains(member), !write.placesOnly {
                    written[member, default: []].append((write.end.inverse, entry.id,
                                                         WrittenLink(linked: write.linked, position: write.inversePosition, placesOnly: false)))
                }
            }
        }
        for (position, index) in round.entryIndices.enumerated() {
            let conflict = round.conflicts[position]
            guard conflict.kind == .updateUpdate || conflict.kind == .updateDelete else { continue }
            let entry = entries[index]
            var ancestor = PropertyValues(), ours = PropertyValues(), theirs = PropertyValues()
            for end in core.schema.manyToManyEnds(of: entry.object.entity.name) {
                var changed: [ObjectID: WrittenLink] = [:]
                for write in written[index] ?? [] where write.end == end.name { changed[write.member] = write.change }
                let read = links.readMembers(of: entry.object, end.name)
                guard !changed.isEmpty || read != nil, let key = entry.id.primaryKey else { continue }
                let stored = conflict.storeValues == nil
                    ? [:] : try storedLinks(of: key, end, among: read == nil ? Array(changed.keys) : nil, in: view)
                var members = Set(changed.keys)
                if let read {
                    for member in read.union(stored.keys) { members.insert(ObjectID(entityName: end.destination, primaryKey: member)) }
                }
                for member in members.sorted(by: { $0.uriString < $1.uriString }) {
                    let states = linkStates(of: member, end, owner: entry.object, changed: changed[member], read: read, stored: stored)
                    if changed[member] == nil && states.ancestor == states.ours && states.ours == states.theirs { continue }
                    let name = Self.linkProperty(end.name, member)
                    if let value = states.ancestor { ancestor[name] = value }
                    if let value = states.ours { ours[name] = value }
                    if let value = states.theirs { theirs[name] = value }
                }
            }
            guard !ancestor.isEmpty || !ours.isEmpty || !theirs.isEmpty else { continue }
            func adding(_ links: PropertyValues, to values: PropertyValues) -> PropertyValues {
                values.merging(links) { _, link in link }
            }
            round.conflicts[position] = MergeConflict(
                objectID: conflict.objectID, kind: conflict.kind,
                ancestorValues: adding(ancestor, to: conflict.ancestorValues), ancestorVersion: conflict.ancestorVersion,
                ourValues: conflict.ourValues.map { adding(ours, to: $0) }, storeValues: conflict.storeValues.map { adding(theirs, to: $0) },
                storeVersion: conflict.storeVersion)
        }
    }

    /// One link's state as ancestor, ours and theirs: nil when unlinked, `true` when linked (at
    /// an ordered end: its key there, `true` for a link not placed yet). `changed`: what this
    /// save writes of it; `read`: what the end last read; `stored`: the store's links of the end.
    private func linkStates(
        of member: ObjectID, _ end: ManyToManyEnd, owner: StoredObject, changed: WrittenLink?, read: Set<UInt64>?,
        stored: [UInt64: Int64?]
    ) -> (ancestor: AttributeValue?, ours: AttributeValue?, theirs: AttributeValue?) {
        func state(_ orderKey: Int64?) -> AttributeValue { orderKey.map(AttributeValue.int) ?? .bool(true) }
        let theirs = member.primaryKey.flatMap { stored[$0] }.map(state)
        // What the end read (when it read the end): a key it did not note (a point read) is taken to be the store's.
        var readState: AttributeValue? = nil
        if let read, let key = member.primaryKey, read.contains(key) {
            readState = links.readKey(of: owner, end.name, member: key).map(AttributeValue.int) ?? theirs ?? .bool(true)
        }
        let known = read != nil
        guard let changed else {
            let ours = known ? readState : theirs
            return (ours, ours, theirs)
        }
        let ours = changed.linked ? changed.position.map(AttributeValue.int) ?? readState ?? theirs ?? .bool(true) : nil
        // Unread, a link stood before a reorder or an unlink, and not before an addition.
        let ancestor = known ? readState : (changed.linked && !changed.placesOnly ? nil : theirs ?? .bool(true))
        return (ancestor, ours, theirs)
    }

    /// The links of the owner `key` in `view` with their keys at an ordered end: all of them, or
    /// (`among`) those of the candidates.
    private func storedLinks(
        of key: UInt64, _ end: ManyToManyEnd, among candidates: [ObjectID]?, in view: any StorageReadView
    ) throws -> [UInt64: Int64?] {
        var found: [UInt64: Int64?] = [:]
        guard let candidates else {
            for link in try Self.storedLinkEntries(of: key, end, in: view) { found[link.member] = .some(link.orderKey) }
            return found
        }
        let keys = candidates.compactMap(\.primaryKey)
        try view.visitValues(forKeys: keys.map { StorageKey(table: end.linkTable, key: StorageMapping.linkKey(owner: key, member: $0)) }) { position, value, _ in
            if let value { found[keys[position]] = .some(end.isOrdered ? StorageMapping.orderKey(ofLinkValue: value) : nil) }
        }
        return found
    }

    /// Takes the link properties out of the round's resolutions (what is left is the object's
    /// own) and returns, per conflict, the link states a written object's values give (nil for
    /// one that takes the store's state or is deleted).
    func takeLinkDecisions(from resolutions: inout [Resolution], round: ConflictRound) -> [PropertyValues?] {
        resolutions.indices.map { position in
            guard case .write(let values) = resolutions[position], round.conflicts[position].kind != .constraint else { return nil }
            resolutions[position] = .write(values.filter { Self.linkOf(property: $0.key) == nil })
            return values
        }
    }

    /// Settles the links of the round's resolved objects, after their resolutions are applied: a
    /// written object's links take the states its values gave them (`decisions`); one that takes
    /// the store's state, or is deleted, writes none of its own (a delete removes them all:
    /// `includeStoreLinks`). A delete's unlinking of its members stands whatever they resolve to:
    /// no link may name a deleted object.
    func settleLinks(_ decisions: [PropertyValues?], round: ConflictRound, in entries: inout [SaveEntry]) throws {
        var settled = Set<SettledLink>()
        var entryOfID: [ObjectID: Int] = [:]
        for (index, entry) in entries.enumerated() { entryOfID[entry.id] = index }
        for (position, index) in round.entryIndices.enumerated() {
            let conflict = round.conflicts[position]
            guard conflict.kind != .constraint else { continue }
            var properties = Set(conflict.ancestorValues.keys)
            properties.formUnion(conflict.ourValues?.keys ?? [:].keys)
            properties.formUnion(conflict.storeValues?.keys ?? [:].keys)
            let entity = entries[index].object.entity.name
            for property in properties.sorted() {
                guard let (relationship, member) = Self.linkOf(property: property),
                      let end = core.schema.manyToManyEnd(entity, relationship) else { continue }
                let decided = decisions[position]?.value(of: property)
                let stored = conflict.storeValues?.value(of: property) ?? .null
                guard settled.insert(SettledLink(entries[index].id, end, member)).inserted else {
                    // The other end settled the link; its key at this ordered end is this end's own.
                    if end.isOrdered { replacePlace(at: index, end, member, decided: decided, stored: stored, entryOfID: entryOfID, in: &entries) }
                    continue
                }
                removeWrites(between: index, end, member, in: &entries)
                guard let decided else { continue }
                let linked = decided != .null
                guard linked != (stored != .null) else {
                    if linked && end.isOrdered {
                        replacePlace(at: index, end, member, decided: decided, stored: stored, entryOfID: entryOfID, in: &entries)
                    }
                    continue
                }
                let memberEntry = try entryForLink(to: member, entryOfID: &entryOfID, in: &entries)
                if linked && memberEntry == nil { continue }  // the store no longer holds it
                var key: Int64? = nil
                if case .int(let value) = decided { key = value }
                entries[index].linkWrites.append(LinkWrite(end: end, memberEntry: memberEntry, memberID: member, linked: linked,
                                                           position: key))
            }
            // An object that takes the store's state or is deleted changes none of its other links.
            if decisions[position] == nil { dropUnsettledWrites(touching: index, settled: &settled, in: &entries) }
        }
    }

    /// Removes the writes of the link between the entry `index` (through `end`) and `member`
    /// (but the member's place of the link at its own ordered end: that end's to resolve).
    private func removeWrites(between index: Int, _ end: ManyToManyEnd, _ member: ObjectID, in entries: inout [SaveEntry]) {
        let snapshot = entries
        let id = entries[index].id
        entries[index].linkWrites.removeAll { write in
            write.end.name == end.name && Self.memberID(of: write, in: snapshot) == member && !Self.unlinksForDelete(write, index, snapshot)
        }
        for other in entries.indices where other != index && !entries[other].linkWrites.isEmpty && snapshot[other].id == member {
            entries[other].linkWrites.removeAll { write in
                write.end.name == end.inverse && Self.memberID(of: write, in: snapshot) == id && !write.placesOnly
                    && !Self.unlinksForDelete(write, other, snapshot)
            }
        }
    }

    /// Replaces the place the entry `index` gives the link to `member` at its ordered `end` by
    /// the resolution's: the key `decided` gives, when it differs from the store's (`stored`).
    private func replacePlace(
        at index: Int, _ end: ManyToManyEnd, _ member: ObjectID, decided: AttributeValue?, stored: AttributeValue,
        entryOfID: [ObjectID: Int], in entries: inout [SaveEntry]
    ) {
        let snapshot = entries
        entries[index].linkWrites.removeAll { write in
            write.placesOnly && write.end.name == end.name && Self.memberID(of: write, in: snapshot) == member
        }
        guard let decided, case .int(let key) = decided, decided != stored else { return }
        entries[index].linkWrites.append(LinkWrite(end: end, memberEntry: entryOfID[member], memberID: member, linked: true,
                                                   position: key, placesOnly: true))
    }

    /// Drops every write touching the entry `index` whose link no earlier resolution settled.
    /// Its own places go (without settling their links); another end's places of links with it stay.
    private func dropUnsettledWrites(touching index: Int, settled: inout Set<SettledLink>, in entries: inout [SaveEntry]) {
        let snapshot = entries
        for other in entries.indices where !entries[other].linkWrites.isEmpty {
            entries[other].linkWrites.removeAll { write in
                let member = Self.memberID(of: write, in: snapshot)
                guard other == index || write.memberEntry == index, !Self.unlinksForDelete(write, other, snapshot) else { return false }
                if write.placesOnly { return other == index }
                return settled.insert(SettledLink(snapshot[other].id, write.end, member)).inserted
            }
        }
    }

    /// Whether `write` (of the entry `owner`) unlinks an object the commit deletes: that stands.
    static func unlinksForDelete(_ write: LinkWrite, _ owner: Int, _ entries: [SaveEntry]) -> Bool {
        !write.linked && (entries[owner].isDelete || write.memberEntry.map { entries[$0].isDelete } == true)
    }

    /// The ID a write links to.
    static func memberID(of write: LinkWrite, in entries: [SaveEntry]) -> ObjectID {
        write.memberEntry.map { entries[$0].id } ?? write.memberID
    }

    /// The entry of `id`, added as an update of the object as this context holds it when it is
    /// not in the save; nil when the store no longer holds it.
    private func entryForLink(to id: ObjectID, entryOfID: inout [ObjectID: Int], in entries: inout [SaveEntry]) throws -> Int? {
        if let index = entryOfID[id] { return index }
        guard let member = try loadedMember(id), !member.deletedFlag, !member.insertedFlag else { return nil }
        entries.append(SaveEntry(object: member, id: member.storedID, step: .update, values: member.current,
                                 ancestorVersion: member.ancestorVersion))
        entryOfID[id] = entries.count - 1
        return entries.count - 1
    }
}

/// What a save writes of one link, seen from one end.
struct WrittenLink {
    let linked: Bool
    /// The key at this end, when given.
    let position: Int64?
    let placesOnly: Bool
}

/// A link by both of its ends (each a table and an object), the same from either end.
struct SettledLink: Hashable {
    let first: String
    let second: String

    init(_ owner: ObjectID, _ end: ManyToManyEnd, _ member: ObjectID) {
        let one = end.linkTable + " " + owner.uriString, other = end.inverseLinkTable + " " + member.uriString
        (first, second) = one < other ? (one, other) : (other, one)
    }
}
