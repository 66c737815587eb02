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
        var written: [Int: [(end: String, member: ObjectID, linked: Bool)]] = [:]
        for (index, entry) in entries.enumerated() {
            for write in entry.linkWrites {
                if conflicting.contains(index) {
                    written[index, default: []].append((write.end.name, write.memberEntry.map { entries[$0].id } ?? write.memberID, write.linked))
                }
                if let member = write.memberEntry, conflicting.contains(member) {
                    written[member, default: []].append((write.end.inverse, entry.id, write.linked))
                }
            }
        }
        for (position, index) in round.entryIndices.enumerated() {
            let conflict = round.conflicts[position]
            guard conflict.kind == .updateUpdate || conflict.kind == .updateDelete else { continue }
            let entry = entries[index]
            var ancestor = PropertyValues(), ours = PropertyValues(), theirs = PropertyValues()
            for end in core.schema.manyToManyEnds(of: entry.object.entity.name) {
                var changed: [ObjectID: Bool] = [:]
                for write in written[index] ?? [] where write.end == end.name { changed[write.member] = write.linked }
                let read = links.readMembers(of: entry.object, end.name)
                guard !changed.isEmpty || read != nil, let key = entry.id.primaryKey else { continue }
                let stored = conflict.storeValues == nil ? [] : try storedLinks(of: key, end, among: read == nil ? Array(changed.keys) : nil, in: view)
                var members = Set(changed.keys)
                if let read {
                    for member in read.union(stored) { members.insert(ObjectID(entityName: end.destination, primaryKey: member)) }
                }
                for member in members.sorted(by: { $0.uriString < $1.uriString }) {
                    let inStore = member.primaryKey.map(stored.contains) ?? false
                    let wasRead = read.map { set in member.primaryKey.map(set.contains) ?? false }
                    let isOurs = changed[member] ?? wasRead ?? inStore
                    let wasAncestor = wasRead ?? changed[member].map { !$0 } ?? inStore
                    if changed[member] == nil && wasAncestor == isOurs && isOurs == inStore { continue }
                    let name = Self.linkProperty(end.name, member)
                    if wasAncestor { ancestor[name] = .bool(true) }
                    if isOurs { ours[name] = .bool(true) }
                    if inStore { theirs[name] = .bool(true) }
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

    /// The members of the owner `key` in `view`: all of them, or (`among`) which of those are.
    private func storedLinks(of key: UInt64, _ end: ManyToManyEnd, among candidates: [ObjectID]?, in view: any StorageReadView) throws -> Set<UInt64> {
        guard let candidates else { return Set(try Self.storedLinks(of: key, end, in: view)) }
        let keys = candidates.compactMap(\.primaryKey)
        var found = Set<UInt64>()
        try view.visitValues(forKeys: keys.map { StorageKey(table: end.linkTable, key: StorageMapping.linkKey(owner: key, member: $0)) }) { position, value, _ in
            if value != nil { found.insert(keys[position]) }
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
                guard settled.insert(SettledLink(entries[index].id, end, member)).inserted else { continue }
                removeWrites(between: index, end, member, in: &entries)
                guard let decided = decisions[position] else { continue }
                let linked = decided.value(of: property) != .null
                guard linked != (conflict.storeValues.map { $0.value(of: property) != .null } ?? false) else { continue }
                let memberEntry = try entryForLink(to: member, entryOfID: &entryOfID, in: &entries)
                if linked && memberEntry == nil { continue }  // the store no longer holds it
                entries[index].linkWrites.append(LinkWrite(end: end, memberEntry: memberEntry, memberID: member, linked: linked))
            }
            // An object that takes the store's state or is deleted changes none of its other links.
            if decisions[position] == nil { dropUnsettledWrites(touching: index, settled: &settled, in: &entries) }
        }
    }

    /// Removes the writes of the link between the entry `index` (through `end`) and `member`.
    private func removeWrites(between index: Int, _ end: ManyToManyEnd, _ member: ObjectID, in entries: inout [SaveEntry]) {
        let snapshot = entries
        let id = entries[index].id
        entries[index].linkWrites.removeAll { write in
            write.end.name == end.name && Self.memberID(of: write, in: snapshot) == member && !Self.unlinksForDelete(write, index, snapshot)
        }
        for other in entries.indices where other != index && !entries[other].linkWrites.isEmpty && snapshot[other].id == member {
            entries[other].linkWrites.removeAll { write in
                write.end.name == end.inverse && Self.memberID(of: write, in: snapshot) == id && !Self.unlinksForDelete(write, other, snapshot)
            }
        }
    }

    /// Drops every write touching the entry `index` whose link no earlier resolution settled.
    private func dropUnsettledWrites(touching index: Int, settled: inout Set<SettledLink>, in entries: inout [SaveEntry]) {
        let snapshot = entries
        for other in entries.indices where !entries[other].linkWrites.isEmpty {
            entries[other].linkWrites.removeAll { write in
                let member = Self.memberID(of: write, in: snapshot)
                guard other == index || write.memberEntry == index, !Self.unlinksForDelete(write, other, snapshot) else { return false }
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

/// A link by both of its ends (each a table and an object), the same from either end.
struct SettledLink: Hashable {
    let first: String
    let second: String

    init(_ owner: ObjectID, _ end: ManyToManyEnd, _ member: ObjectID) {
        let one = end.linkTable + " " + owner.uriString, other = end.inverseLinkTable + " " + member.uriString
        (first, second) = one < other ? (one, other) : (other, one)
    }
}
