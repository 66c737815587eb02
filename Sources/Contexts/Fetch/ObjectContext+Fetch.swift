import Policies

// Fetching. Every fetch reads the context's base (the latest commit, the pinned query
// generation, or the parent's view for a child: ObjectContext+Reading.swift), then lays the
// context's own pending changes over it: registered objects answer with their in-memory values,
// pending deletes are left out, pending inserts are added.

extension ObjectContext {
    /// The objects matching `request`, with the context's pending changes applied.
    ///
    /// Each object appears once per context: an object already registered is returned as it is,
    /// unsaved changes included (and the predicate sees those changes). Objects inserted and not
    /// yet saved are included; objects deleted and not yet saved are not.
    ///
    /// ```swift
    /// let people = try context.fetch(FetchRequest(entityName: "Person", sortDescriptors: [.ascending("name")]))
    /// ```
    ///
    /// - Throws: ``ContextError/unknownEntity(_:)``, ``ContextError/corruptValue(_:_:)`` for a
    ///   record that does not decode, or a storage error.
    public func fetch(_ request: FetchRequest) throws(ContextError) -> [StoredObject] {
        checkQueue()
        let entity = try core.entity(named: request.entityName)
        let request = try resolvingRelationshipPaths(request, entity: entity)
        let plan = try checkedPlan(for: request, entity: entity)
        // Objects for records met for the first time are made and attached as they are met, and
        // registered together at the end (`register(made:)` says why), so a fetch that fails
        // registers nothing.
        var made: [StoredObject] = []
        var objects: [StoredObject] = []
        // The made objects' origin, found once.
        let origin = origin(for: entity.layout)
        if plan == nil && request.sortDescriptors.isEmpty && request.fetchOffset <= 0 && request.fetchLimit == nil
            && request.predicate == nil && parent == nil && registry.isEmpty {
            // Every stored object, and nothing in memory to change that (ObjectContext+RecordFetch.swift).
            made = try fetchRecords(of: entity)
            objects = made
        } else if plan == nil && request.sortDescriptors.isEmpty && request.fetchOffset <= 0 && request.fetchLimit == nil {
            // Nothing to sort or cut: every match is in the result, in visiting order, so there
            // is no need to collect candidates first.
            let layout = entity.layout
            let predicate = request.predicate.map { ResolvedPredicate($0, layout: layout) }
            // A context holding nothing (the usual first fetch) meets only records: the result
            // is the objects made, in order, so they are collected once.
            let onlyMade = registry.isEmpty
            try forEachVisible(of: entity, expecting: { count in
                // Sized once for a fetch of everything (no predicate), instead of regrown.
                guard predicate == nil else { return }
                made.reserveCapacity(count)
                if !onlyMade { objects.reserveCapacity(count) }
            }) { item in
                switch item {
                case .registered(let object):
                    if predicate?.evaluate(object.current, id: object.storedID, layout: layout) ?? true { objects.append(object) }
                case .base(let record):
                    guard predicate?.evaluate(record.values, id: record.id, layout: layout) ?? true else { return }
                    let object = attachedObject(origin, record.id, record.values, record.version)
                    made.append(object)
                    if !onlyMade { objects.append(object) }
                }
            }
            if onlyMade { objects = made }
        } else {
            // As above: a context holding nothing gets only stored candidates, and the objects
            // made are the result (one list).
            let onlyMade = registry.isEmpty
            let candidates = try matches(for: request, entity: entity, plan: plan)
            // Sized once: grown by appends, a page of 20 reallocated each list five times.
            made.reserveCapacity(candidates.count)
            if !onlyMade { objects.reserveCapacity(candidates.count) }
            for position in candidates.indices {
                switch candidates[position].source {
                case .registered(let object):
                    objects.append(object)
                case let .stored(id, version):
                    // Appended as made: an object kept in a local first was retained for the list.
                    if onlyMade {
                        made.append(attachedObject(origin, id, candidates[position].values, version))
                    } else {
                        let object = attachedObject(origin, id, candidates[position].values, version)
                        made.append(object)
                        objects.append(object)
                    }
                }
            }
            if onlyMade { objects = made }
        }
        register(made: made)
        if !request.relationshipKeyPathsForPrefetching.isEmpty { try prefetch(request.relationshipKeyPathsForPrefetching, of: objects) }
        return objects
    }

    /// A new object read with `values` at record `version`, attached to this context.
    private func attachedObject(
        _ origin: ObjectOrigin, _ id: ObjectID, _ values: consuming ObjectValues, _ version: UInt64
    ) -> StoredObject {
        let object = StoredObject(origin: origin, id: id, values: values, version: version)
        attach(object)
        return object
    }

    /// How many objects `fetch(request)` would return, without registering any.
    ///
    /// ```swift
    /// let adults = try context.count(for: FetchRequest(entityName: "Person", predicate: .compare("age", .greaterThanOrEqual, .int(18))))
    /// ```
    ///
    /// - Throws: as ``fetch(_:)``.
    public func count(for request: FetchRequest) throws(ContextError) -> Int {
        checkQueue()
        let entity = try core.entity(named: request.entityName)
        let request = try resolvingRelationshipPaths(request, entity: entity)
        let plan = try checkedPlan(for: request, entity: entity)
        if let plan, plan.exact {
            return try indexedCount(plan, request: request, entity: entity,
                                    predicate: request.predicate.map { ResolvedPredicate($0, layout: entity.layout) })
        }
        return try matches(for: request, entity: entity, plan: plan).count
    }

    /// A matching object before it is registered.
    struct Candidate {
        enum Source {
            case registered(StoredObject)
            case stored(ObjectID, version: UInt64)
        }
        let source: Source
        let values: ObjectValues
        var baseOrder: Int

        /// The primary key of its record (0 for none).
        var primaryKey: UInt64 {
            switch source {
            case .registered(let object): return object.storedID.primaryKey ?? 0
            case .stored(let id, _): return id.primaryKey ?? 0
            }
        }
    }

    func matches(for request: FetchRequest, entity: EntityDescription, plan: IndexPlan?) throws(ContextError) -> [Candidate] {
        let layout = entity.layout
        // Attribute names resolved to positions once per fetch, not once per object.
        let predicate = request.predicate.map { ResolvedPredicate($0, layout: layout) }
        var candidates: [Candidate] = []
        var inSortOrder = false
        if let plan {
            (candidates, inSortOrder) = try indexedCandidates(plan, request: request, entity: entity, predicate: predicate)
        } else {
            try scanCandidates(of: entity, predicate: predicate, into: &candidates)
        }
        if !request.sortDescriptors.isEmpty && !inSortOrder {
            let keys = request.sortDescriptors.map { (property: PropertyReference($0.attribute, layout: layout), ascending: $0.ascending) }
            func precedes(_ left: Candidate, _ right: Candidate) -> Bool {
                for key in keys {
                    let order = AttributeOrder.sortOrder(key.property.value(in: left.values), key.property.value(in: right.values))
                    if order != 0 { return key.ascending ? order < 0 : order > 0 }
                }
                return left.baseOrder < right.baseOrder
            }
            // An index walked in sort order gives the candidates sorted already: one pass checks
            // it, and the sort (its buffer, its moves of each candidate) is skipped. Base order
            // breaks every tie, so "no neighbour out of order" is "sorted".
            // (Read through the buffer: the array's subscript copied each candidate out, a
            // retain and a release of its values and object per comparison.)
            let sorted = candidates.withUnsafeBufferPointer { buffer in
                buffer.indices.dropFirst().allSatisfy { !precedes(buffer[$0], buffer[$0 - 1]) }
            }
            if !sorted { candidates.sort(by: precedes) }
        }
        let start = min(max(request.fetchOffset, 0), candidates.count)
        let end = request.fetchLimit.map { start + min(max($0, 0), candidates.count - start) } ?? candidates.count
        if start == 0 && end == candidates.count { return candidates }
        return Array(candidates[start..<end])
    }

    /// The scan: every visible object, in base order, that matches.
    private func scanCandidates(
        of entity: EntityDescription, predicate: ResolvedPredicate?, into candidates: inout [Candidate]
    ) throws(ContextError) {
        let layout = entity.layout
        try forEachVisible(of: entity) { item in
            let values: ObjectValues
            let id: ObjectID
            let source: Candidate.Source
            switch item {
            case .registered(let object):
                values = object.current
                id = object.storedID
                source = .registered(object)
            case .base(let record):
                values = record.values
                id = record.id
                source = .stored(record.id, version: record.version)
            }
            if predicate?.evaluate(values, id: id, layout: layout) ?? true {
                candidates.append(Candidate(source: source, values: values, baseOrder: candidates.count))
            }
        }
    }
}

/// A property named in a fetch request, resolved against one entity: an attribute position, or
/// (for a name the entity lacks) an extra of the stored record, usually absent.
struct PropertyReference {
    private enum Target {
        case attribute(Int)
        case extra(String)
    }

    private let target: Target

    /// The attribute's position; nil for an extra.
    var position: Int? {
        if case .attribute(let position) = target { return position }
        return nil
    }

    init(_ name: String, layout: EntityLayout) {
        target = layout.index(of: name).map(Target.attribute) ?? .extra(name)
    }

    /// The property's value in `values` (`.null` when unset).
    func value(in values: ObjectValues) -> AttributeValue {
        switch target {
        case .attribute(let position): return values[position]
        case .extra(let name): return values.extras?[name] ?? .null
        }
    }
}

/// A ``FetchPredicate`` with its attribute names resolved against one entity; it evaluates as
/// the predicate does on the values as a dictionary.
indirect enum ResolvedPredicate {
    case compare(PropertyReference, FetchPredicate.Operator, AttributeValue)
    case isIn(PropertyReference, [AttributeValue])
    /// `isIn` with many string constants (a prefetch's owners, a path's destinations): one set
    /// lookup per object instead of a comparison per constant. A string set's equality is
    /// canonical equivalence, as `==` on strings in a predicate is.
    case isInStrings(PropertyReference, Set<String>)
    case and([ResolvedPredicate])
    case or([ResolvedPredicate])
    case not(ResolvedPredicate)
    case matching(@Sendable (PropertyValues) -> Bool)
    case objectIn(Set<ObjectID>)

    init(_ predicate: FetchPredicate, layout: EntityLayout) {
        switch predicate {
        case let .compare(attribute, comparison, constant):
            self = .compare(PropertyReference(attribute, layout: layout), comparison, constant)
        case let .isIn(attribute, constants):
            let strings = constants.compactMap { constant -> String? in if case .string(let text) = constant { text } else { nil } }
            if constants.count > 8 && strings.count == constants.count {
                self = .isInStrings(PropertyReference(attribute, layout: layout), Set(strings))
            } else {
                self = .isIn(PropertyReference(attribute, layout: layout), constants)
            }
        case .and(let predicates):
            self = .and(predicates.map { ResolvedPredicate($0, layout: layout) })
        case .or(let predicates):
            self = .or(predicates.map { ResolvedPredicate($0, layout: layout) })
        case .not(let predicate):
            self = .not(ResolvedPredicate(predicate, layout: layout))
        case .matching(let body):
            self = .matching(body)
        case .objectIn(let ids):
            self = .objectIn(ids)
        case .memberCount:
            // Resolution replaces it (`resolvingRelationshipPaths`) and validation refuses what
            // is left, so no fetch gets here; matching nothing is the safe reading.
            self = .or([])
        }
    }

    /// Whether the object `id` with `values` matches.
    func evaluate(_ values: ObjectValues, id: ObjectID, layout: EntityLayout) -> Bool {
        switch self {
        case let .compare(property, comparison, constant):
            return FetchPredicate.holds(property.value(in: values), comparison, constant)
        case let .isIn(property, constants):
            let value = property.value(in: values)
            return constants.contains { FetchPredicate.holds(value, .equal, $0) }
        case let .isInStrings(property, strings):
            guard case .string(let text) = property.value(in: values) else { return false }
            return strings.contains(text)
        case .and(let predicates):
            return predicates.allSatisfy { $0.evaluate(values, id: id, layout: layout) }
        case .or(let predicates):
            return predicates.contains { $0.evaluate(values, id: id, layout: layout) }
        case .not(let predicate):
            return !predicate.evaluate(values, id: id, layout: layout)
        case .matching(let body):
            // The escape hatch sees the values as the API shows them: a dictionary by name.
            return body(values.dictionary(layout))
        case .objectIn(let ids):
            return ids.contains(id)
        }
    }
}
