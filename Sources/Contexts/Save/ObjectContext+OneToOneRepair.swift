import Policies

// One-to-one pairs in a root save. Both ends hold the fact, so what a commit writes must be
// symmetric, also where the context alone could not make it so: a change merged in from
// elsewhere under an unsaved one, or a policy that settled each end of a pair on its own.
//
// The rule (the contract leaves it to the project; Docs/MergePolicies.md): ends claim their
// partners in priority order: first the entries a policy just resolved, then those whose
// reference the save changes, then the rest, each group in save order. A claim stands when
// neither end is taken yet, and both ends then name each other; a later claim on a taken end is
// dropped (its reference written empty). An end whose reference changes takes the partner the
// store gives it into the save, so that partner is rewritten (and version-checked) too.

extension ObjectContext {
    /// Makes every one-to-one pair the entries write symmetric. `first`: the entries a policy
    /// just resolved. Returns whether it changed or added an entry.
    ///
    /// - Throws: ``ValidationError`` for a required end left empty; a read failure.
    @discardableResult
    func repairOneToOnePairs(in entries: inout [SaveEntry], first resolved: [Int]) throws -> Bool {
        var repair = OneToOneRepair(schema: core.schema)
        guard repair.needed(entries, resolved: resolved) else { return false }
        // Each pass adds only objects not in the save yet, so the passes end.
        while true {
            try repair.settle(&entries, resolved: resolved)
            let joined = try repair.joinStoredPartners(&entries) { id in try self.savedPartner(id) }
            if !joined { return repair.changed }
        }
    }

    /// The object `id` names, loaded, unless the store no longer holds it.
    private func savedPartner(_ id: ObjectID) throws(ContextError) -> StoredObject? {
        if let registered = registeredObject(for: id), !registered.isFaultStorage { return registered }
        do {
            return try existingObject(with: id)
        } catch {
            if case .objectNotFound = error { return nil }
            throw error
        }
    }
}

/// The state of one repair: which pair ends are settled, and whether an entry changed.
private struct OneToOneRepair {
    /// One end of a pair: an object (by its entry's ID URI) and its reference's position.
    struct End: Hashable {
        let uri: String
        let position: Int
    }

    let schema: Schema
    var changed = false

    init(schema: Schema) { self.schema = schema }

    /// Whether the save writes a one-to-one at all: a resolved entry, or a changed reference.
    func needed(_ entries: [SaveEntry], resolved: [Int]) -> Bool {
        if resolved.contains(where: { !schema.oneToOneEnds(of: entries[$0].object.entity.name).isEmpty }) { return true }
        return entries.indices.contains { !changedEnds(of: entries[$0]).isEmpty }
    }

    /// Settles every claim in priority order, rewriting the entries that lose theirs or must
    /// name their partner, and adding partners that are not in the save.
    mutating func settle(_ entries: inout [SaveEntry], resolved: [Int]) throws {
        var entryOfURI: [String: Int] = [:]
        for (index, entry) in entries.enumerated() { entryOfURI[entry.id.uriString] = index }
        let resolvedSet = Set(resolved)
        let changedEntries = entries.indices.filter { !resolvedSet.contains($0) && !changedEnds(of: entries[$0]).isEmpty }
        let changedSet = Set(changedEntries)
        let order = resolved + changedEntries + entries.indices.filter { !resolvedSet.contains($0) && !changedSet.contains($0) }
        var settled: [End: String?] = [:]
        for index in order {
            for end in schema.oneToOneEnds(of: entries[index].object.entity.name) {
                guard let values = Self.written(entries[index]) else { continue }
                let me = End(uri: entries[index].id.uriString, position: end.position)
                if let partner = settled[me] {
                    try write(partner.map(AttributeValue.string) ?? .null, at: end.position, of: &entries[index])
                    continue
                }
                guard case .string(let partnerURI) = values[end.position] else {
                    settled[me] = .some(nil)
                    continue
                }
                let partnerEnd = End(uri: partnerURI, position: end.inversePosition)
                let partnerEntry = entryOfURI[partnerURI]
                let partnerGone = partnerEntry.map { Self.written(entries[$0]) == nil } ?? false
                if partnerGone || (settled[partnerEnd].map { $0 != me.uri } ?? false) {
                    settled[me] = .some(nil)
                    try write(.null, at: end.position, of: &entries[index])
                    continue
                }
                settled[me] = partnerURI
                settled[partnerEnd] = me.uri
                if let partnerEntry {
                    try write(.string(me.uri), at: end.inversePosition, of: &entries[partnerEntry])
                }
                // A partner not in the save joins it in `joinStoredPartners`, which finds it as
                // the changed end's new reference.
            }
        }
    }

    /// Adds to the save, as updates, the objects a changed end names now or named in the
    /// store, which are not in it yet. Returns whether it added any.
    mutating func joinStoredPartners(
        _ entries: inout [SaveEntry], load: (ObjectID) throws -> StoredObject?
    ) throws -> Bool {
        var inSave = Set(entries.map(\.id.uriString))
        var added = false
        for index in entries.indices {
            for end in changedEnds(of: entries[index]) {
                let now = Self.written(entries[index])?[end.position] ?? .null
                let before = entries[index].ancestorValues[end.position]
                for value in [now, before] {
                    guard let id = StoredObject.referencedID(value), !inSave.contains(id.uriString) else { continue }
                    guard let partner = try load(id), !partner.deletedFlag, !partner.insertedFlag else {
                        // Gone from the store: the claim on it cannot stand.
                        if value == now { try write(.null, at: end.position, of: &entries[index]) }
                        continue
                    }
                    entries.append(SaveEntry(object: partner, id: partner.storedID, step: .update, values: partner.current,
                                             ancestorVersion: partner.ancestorVersion))
                    inSave.insert(id.uriString)
                    added = true
                    changed = true
                }
            }
        }
        return added
    }

    /// The one-to-one ends whose reference the entry writes differently from the store's.
    private func changedEnds(of entry: SaveEntry) -> [OneToOneEnd] {
        let ends = schema.oneToOneEnds(of: entry.object.entity.name)
        guard !ends.isEmpty, let values = Self.written(entry) else { return [] }
        switch entry.step {
        case .insert: return ends.filter { values[$0.position] != .null }
        case .takeStore: return []  // the store's own state
        default: break
        }
        let ancestor = entry.ancestorValues
        return ends.filter { values[$0.position] != ancestor[$0.position] }
    }

    /// The values the entry leaves in the store; nil when it leaves the object deleted.
    private static func written(_ entry: SaveEntry) -> ObjectValues? {
        switch entry.step {
        case .insert, .update: entry.values
        case .check: entry.ancestorValues
        case .takeStore(let values, _): values
        case .delete, .dropDeleted, .discardInsert: nil
        }
    }

    /// Makes the entry write `value` at `position`: an entry that wrote nothing becomes an
    /// update of the state it took.
    private mutating func write(_ value: AttributeValue, at position: Int, of entry: inout SaveEntry) throws {
        guard let values = Self.written(entry), values[position] != value else { return }
        switch entry.step {
        case .insert, .update:
            entry.values[position] = value
        case .check:
            entry.values = entry.ancestorValues
            entry.values[position] = value
            entry.step = .update
        case let .takeStore(stored?, version):
            entry.values = stored
            entry.values[position] = value
            entry.ancestorValues = stored
            entry.ancestorVersion = version
            entry.step = .update
        default:
            return
        }
        try entry.validate()
        changed = true
    }
}
