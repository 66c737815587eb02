import Policies

// Fetching through an index, in a root context. The result is the scan's (ObjectContext+Fetch,
// `forEachVisible`), built from other reads:
//
// - stored objects: the index ranges' entries, then their records by key (one `visitValues`
//   per batch), each tested against the whole predicate;
// - registered objects (other than faults): their index entries are passed over, since they
//   answer with their in-memory values: each is tested in memory and, as in a scan, returned
//   only when its record exists in the read view; pending deletes are left out;
// - pending inserts: tested in memory, after the stored objects;
// - base order (ties of a sort, and no sort): primary key, then pending inserts in order.
//
// So the plan decides only what is read. Faults met are loaded from the same read view.

extension ObjectContext {
    /// The plan a fetch of `request` runs with here; nil for a scan.
    func indexPlan(for request: FetchRequest, entity: EntityDescription) -> IndexPlan? {
        // A child reads its parent's view, which has no index: it scans that view.
        guard parent == nil, request.usesIndexes else { return nil }
        return IndexPlan.make(for: request, entity: entity)
    }

    /// The matching objects as `matches(for:entity:)` finds them before sorting: in base order.
    func indexedCandidates(
        _ plan: IndexPlan, request: FetchRequest, entity: EntityDescription, predicate: ResolvedPredicate?
    ) throws(ContextError) -> [Candidate] {
        let layout = entity.layout
        let inMemory = heldMatches(of: entity, predicate: predicate)
        // The candidates found and, position by position, their primary keys: ranked in place
        // below, not copied into a second array.
        var found: [Candidate] = []
        var primaryKeys: [UInt64] = []
        try withReadView { (view) throws(ContextError) in
            do {
                var keys: [StorageKey] = []
                var matched = 0
                /// Reads the records of the keys gathered, tests them, and empties the list.
                func readGathered() throws {
                    guard !keys.isEmpty else { return }
                    found.reserveCapacity(found.count + keys.count)
                    primaryKeys.reserveCapacity(found.count + keys.count)
                    try view.visitValues(forKeys: keys) { position, value, version in
                        guard let value, let primaryKey = StorageMapping.primaryKey(of: keys[position].key) else { return }
                        let id = ObjectID(entityName: layout.name, primaryKey: primaryKey)
                        let values: ObjectValues
                        do throws(ValueCodecError) {
                            values = try ValueCodec.decode(value, layout: layout)
                        } catch {
                            throw ContextError.corruptValue(id, error)
                        }
                        let candidate: Candidate
                        if let fault = inMemory.holdsObjects ? registry[id] : nil {
                            load(BaseState(id: id, values: values, version: version), into: fault)
                            candidate = Candidate(source: .registered(fault), values: fault.current, baseOrder: 0)
                        } else {
                            candidate = Candidate(source: .stored(id, version: version), values: values, baseOrder: 0)
                        }
                        guard predicate?.evaluate(candidate.values, layout: layout) ?? true else { return }
                        matched += 1
                        found.append(candidate)
                        primaryKeys.append(primaryKey)
                    }
                    keys.removeAll(keepingCapacity: true)
                }
                /// Gathers an entry's record key, unless a registered object answers for it.
                func gather(_ entry: UnsafeRawBufferPointer) {
                    guard let primaryKey = IndexKeyEncoding.primaryKey(ofEntry: entry) else { return }
                    if inMemory.holdsObjects, let object = registry[ObjectID(entityName: layout.name, primaryKey: primaryKey)],
                       !object.isFaultStorage || object.deletedFlag || object.insertedFlag {
                        return  // answered in memory, or left out as the scan leaves it
                    }
                    keys.append(StorageKey(table: layout.tableName, key: StorageMapping.key(for: primaryKey)))
                }

                if let order = plan.order, let limit = request.fetchLimit {
                    // In sort order, until enough stored objects match and the entries after
                    // them sort strictly later (the same first sort value is read to its end).
                    let needed = max(request.fetchOffset, 0) + max(limit, 0)
                    var range = plan.ranges.first
                    var boundary: [UInt8]? = nil
                    // The walk's last entry, copied into one buffer kept across entries (a copy
                    // of its own per entry was an allocation each).
                    var last: [UInt8] = []
                    // An exact plan's entries all match (registered objects aside, passed over): its
                    // first chunk is the page itself; a predicate that rejects some gets slack.
                    var chunk = plan.exact ? max(needed, 1) : max(needed + 8, 32)
                    // The entry after a full chunk, looked at and not gathered: when it sorts
                    // strictly after the page (or there is none), no second walk is needed to
                    // find that out. (A sorted page of unique names walked twice, the second
                    // time for that one entry.)
                    var next: [UInt8] = []
                    while let current = range {
                        var seen = 0
                        var passedBoundary = false
                        var hasNext = false
                        try view.forEach(
                            in: plan.index.tableName, from: current.lower.isEmpty ? nil : current.lower, to: current.upper,
                            reverse: !order.ascending
                        ) { entry, _, _ in
                            if let boundary, !entry.starts(with: boundary) {
                                passedBoundary = true
                                return false
                            }
                            if seen == chunk {
                                hasNext = true
                                next.removeAll(keepingCapacity: true)
                                next.append(contentsOf: entry)
                                return false
                            }
                            seen += 1
                            last.removeAll(keepingCapacity: true)
                            last.append(contentsOf: entry)
                            gather(entry)
                            return true
                        }
                        try readGathered()
                        // The next walk would begin at `next`: nothing after the range's end.
                        guard !passedBoundary, seen == chunk, hasNext else { break }
                        if boundary == nil && matched >= needed {
                            boundary = last.withUnsafeBytes { Array(last.prefix(IndexKeyEncoding.length(ofValues: order.sortValues, in: $0))) }
                        }
                        if let boundary, !next.starts(with: boundary) { break }  // as the next walk would find
                        range = order.ascending
                            ? IndexPlan.KeyRange(lower: last + [0], upper: current.upper)
                            : IndexPlan.KeyRange(lower: current.lower, upper: last)
                        chunk *= 2
                    }
                } else {
                    for range in plan.ranges {
                        try view.forEach(
                            in: plan.index.tableName, from: range.lower.isEmpty ? nil : range.lower, to: range.upper, reverse: false
                        ) { entry, _, _ in
                            gather(entry)
                            return true
                        }
                    }
                    try readGathered()
                }
                try existing(inMemory.held, in: view) { object in
                    found.append(Candidate(source: .registered(object), values: object.current, baseOrder: 0))
                    primaryKeys.append(object.storedID.primaryKey ?? 0)
                }
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        // Base order is primary-key order: each candidate's rank by primary key. A walk in sort
        // order stays in walk order, though: `matches` sorts by the sort descriptors, base order
        // breaking ties, so the order of this array never changes the result, and its sort then
        // finds the walk's entries sorted already instead of shuffled by primary key. (Sorting
        // positions, not candidates, also keeps the candidates where they are.)
        var candidates: [Candidate]
        if primaryKeys.indices.dropFirst().allSatisfy({ primaryKeys[$0 - 1] < primaryKeys[$0] }) {
            // Walked in primary-key order already (one match, or one value's entries): each
            // candidate's rank is its position, with no ranking arrays to make.
            for rank in found.indices { found[rank].baseOrder = rank }
            candidates = found
        } else {
            var byPrimaryKey = Array(found.indices)
            byPrimaryKey.sort { primaryKeys[$0] < primaryKeys[$1] }
            if plan.order != nil && !request.sortDescriptors.isEmpty {
                for (rank, position) in byPrimaryKey.enumerated() { found[position].baseOrder = rank }
                candidates = found
            } else {
                candidates = []
                candidates.reserveCapacity(found.count + inMemory.inserted.count)
                for (rank, position) in byPrimaryKey.enumerated() {
                    var candidate = found[position]
                    candidate.baseOrder = rank
                    candidates.append(candidate)
                }
            }
        }
        found = []
        for object in inMemory.inserted {
            candidates.append(Candidate(source: .registered(object), values: object.current, baseOrder: candidates.count))
        }
        return candidates
    }

    /// `count(for:)` through an exact plan: index entries counted, no record read or decoded
    /// (registered objects are counted as the fetch would return them).
    func indexedCount(
        _ plan: IndexPlan, request: FetchRequest, entity: EntityDescription, predicate: ResolvedPredicate?
    ) throws(ContextError) -> Int {
        let layout = entity.layout
        let inMemory = heldMatches(of: entity, predicate: predicate)
        var total = inMemory.inserted.count
        try withReadView { (view) throws(ContextError) in
            do {
                // A context holding no object counts every entry, with no test per entry.
                let answeredElsewhere: ((UnsafeRawBufferPointer) -> Bool)? = inMemory.holdsObjects ? { entry in
                    guard let primaryKey = IndexKeyEncoding.primaryKey(ofEntry: entry) else { return false }
                    if let object = self.registry[ObjectID(entityName: layout.name, primaryKey: primaryKey)],
                       !object.isFaultStorage || object.deletedFlag || object.insertedFlag {
                        return false  // counted below by its in-memory values, or left out
                    }
                    return true
                } : nil
                for range in plan.ranges {
                    total += try view.countKeys(
                        in: plan.index.tableName, from: range.lower.isEmpty ? nil : range.lower, to: range.upper,
                        where: answeredElsewhere)
                }
                try existing(inMemory.held, in: view) { _ in total += 1 }
            } catch {
                throw ContextError(readFailure: error)
            }
        }
        let start = min(max(request.fetchOffset, 0), total)
        return request.fetchLimit.map { min(max($0, 0), total - start) } ?? total - start
    }

    /// The registered objects of `entity` that answer by their in-memory values and match:
    /// loaded ones that may have records (`held`), and pending inserts.
    private func heldMatches(
        of entity: EntityDescription, predicate: ResolvedPredicate?
    ) -> (holdsObjects: Bool, held: [StoredObject], inserted: [StoredObject]) {
        guard !registry.isEmpty else { return (false, [], []) }
        let layout = entity.layout
        var held: [StoredObject] = [], inserted: [StoredObject] = []
        // A to-many's members (`to-one == owner`): only the objects holding that reference.
        let candidates: [StoredObject]
        if case let .compare(property, .equal, .string(reference))? = predicate, let position = property.position,
           layout.relationships.contains(where: { $0.storagePosition == position }) {
            candidates = heldReferences(to: reference, entity: layout, position: position)
        } else {
            candidates = objectsInOrder
        }
        for object in candidates where object.entity.layout === layout && !object.isFaultStorage {
            if object.insertedFlag {
                if predicate?.evaluate(object.current, layout: layout) ?? true { inserted.append(object) }
            } else if !object.deletedFlag, predicate?.evaluate(object.current, layout: layout) ?? true {
                held.append(object)
            }
        }
        return (true, held, inserted)
    }

    /// Calls `body` with each of `objects` whose record exists in `view` (one visit).
    private func existing(_ objects: [StoredObject], in view: any StorageReadView, _ body: (StoredObject) -> Void) throws {
        guard !objects.isEmpty else { return }
        let keys = objects.map { StorageKey(table: $0.entity.layout.tableName, key: StorageMapping.key(for: $0.storedID.primaryKey ?? 0)) }
        try view.visitValues(forKeys: keys) { position, value, _ in
            if value != nil { body(objects[position]) }
        }
    }
}
