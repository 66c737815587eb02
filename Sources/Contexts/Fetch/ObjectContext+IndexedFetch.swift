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

    /// Checks `request` (its relationship paths resolved) and gives the plan it runs with here,
    /// nil for a scan: as `validate(against:)` then `indexPlan(for:entity:)`, through the
    /// store's cache of shapes met before.
    ///
    /// - Throws: what ``FetchRequest/validate(against:)`` throws.
    func checkedPlan(for request: FetchRequest, entity: EntityDescription) throws(ContextError) -> IndexPlan? {
        let template = try core.fetchPlans.template(for: request, entity: entity)
        guard parent == nil, request.usesIndexes, let template else { return nil }
        return template.bind(request.predicate)
    }

    /// The matching objects as `matches(for:entity:)` finds them before sorting: in base order,
    /// or in the request's sort order when `inSortOrder` says the walk proved it (``EntryOrder``).
    func indexedCandidates(
        _ plan: IndexPlan, request: FetchRequest, entity: EntityDescription, predicate: ResolvedPredicate?
    ) throws(ContextError) -> (candidates: [Candidate], inSortOrder: Bool) {
        let inMemory = heldMatches(of: entity, predicate: predicate)
        // The walk is the closure's own and returned, not a variable of this function it captures:
        // such a capture is checked for exclusive access at run time on each use.
        var walk = try withReadView { (view) throws(ContextError) -> IndexedWalk in
            var walk = IndexedWalk(context: self, layout: entity.layout, predicate: predicate, holdsObjects: inMemory.holdsObjects)
            do {
                try walk.run(plan, request: request, in: view)
                try existing(inMemory.held, in: view) { object in
                    walk.found.append(Candidate(source: .registered(object), values: object.current, baseOrder: 0))
                }
            } catch {
                throw ContextError(readFailure: error)
            }
            return walk
        }
        // Only the walk's own candidates, in its proven order: nothing to rank or sort.
        if walk.inSortOrder && inMemory.held.isEmpty && inMemory.inserted.isEmpty {
            return (walk.found, true)
        }
        // The candidates are ranked in place, not copied into a second array.
        var found = walk.found
        walk.found = []
        let primaryKeys = found.map(\.primaryKey)
        // Base order is primary-key order. A walk in sort order stays in walk order, though:
        // `matches` sorts by the sort descriptors, base order breaking ties, so the order of this
        // array never changes the result, and its sort then finds the walk's entries sorted
        // already instead of shuffled by primary key.
        var candidates: [Candidate]
        // The base order the first pending insert takes: after every stored object's.
        var nextOrder = found.count
        let sortedWalk = plan.order != nil && !request.sortDescriptors.isEmpty
        if primaryKeys.indices.dropFirst().allSatisfy({ primaryKeys[$0 - 1] < primaryKeys[$0] }) {
            // Walked in primary-key order already (one match, or one value's entries): each
            // candidate's rank is its position, with no ranking arrays to make.
            for rank in found.indices { found[rank].baseOrder = rank }
            candidates = found
        } else if sortedWalk, let highest = primaryKeys.max(), highest < UInt64(Int.max / 2) {
            // Base order is read only by `<` between candidates (ties of the sort): the primary
            // key orders them as its rank would, with no ranking sort (about 4,000 instructions
            // of a sorted page of 20).
            for position in found.indices { found[position].baseOrder = Int(primaryKeys[position]) }
            nextOrder = Int(highest) + 1
            candidates = found
        } else {
            // Sorting positions, not candidates, keeps the candidates where they are.
            var byPrimaryKey = Array(found.indices)
            byPrimaryKey.sort { primaryKeys[$0] < primaryKeys[$1] }
            if sortedWalk {
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
            candidates.append(Candidate(source: .registered(object), values: object.current, baseOrder: nextOrder))
            nextOrder += 1
        }
        return (candidates, false)
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
                if predicate?.evaluate(object.current, id: object.storedID, layout: layout) ?? true { inserted.append(object) }
            } else if !object.deletedFlag, predicate?.evaluate(object.current, id: object.storedID, layout: layout) ?? true {
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
