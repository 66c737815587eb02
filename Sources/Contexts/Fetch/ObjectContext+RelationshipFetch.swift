import Policies

// Fetching across relationships: a predicate on a to-one's destination attribute
// (`department.name == "Eng"`) is answered as "the to-one is one of these destinations" (the
// destinations matched first, pending changes included, without registering them), which the
// to-one's index serves; a to-many's member count (`employees.@count > 3`) is answered as "the
// object is one of these owners", counted from the members' to-ones read through that index;
// prefetching loads the destinations of a fetch's results in one pass. A to-many's membership
// and a many-to-many's counts are answered from links (ObjectContext+LinkFetch.swift).

extension ObjectContext {
    /// `request` with every `"toOne.attribute"` of its predicate replaced by the to-one's
    /// membership in the matching destinations.
    func resolvingRelationshipPaths(_ request: FetchRequest, entity: EntityDescription) throws(ContextError) -> FetchRequest {
        guard let predicate = request.predicate, !entity.layout.relationships.isEmpty else { return request }
        var resolved = request
        resolved.predicate = try resolving(predicate, entity: entity)
        return resolved
    }

    private func resolving(_ predicate: FetchPredicate, entity: EntityDescription) throws(ContextError) -> FetchPredicate {
        switch predicate {
        case let .compare(path, comparison, constant):
            if let membership = try membership(path, comparison, [constant], in: entity) { return membership }
            guard let (relationship, rest) = toOnePath(path, in: entity) else { return predicate }
            return .isIn(relationship.name, try destinationReferences(relationship, .compare(rest, comparison, constant)))
        case let .isIn(path, constants):
            if let membership = try membership(path, .equal, constants, in: entity) { return membership }
            guard let (relationship, rest) = toOnePath(path, in: entity) else { return predicate }
            return .isIn(relationship.name, try destinationReferences(relationship, .isIn(rest, constants)))
        case .and(let predicates):
            var resolved: [FetchPredicate] = []
            for predicate in predicates { resolved.append(try resolving(predicate, entity: entity)) }
            return .and(resolved)
        case .or(let predicates):
            var resolved: [FetchPredicate] = []
            for predicate in predicates { resolved.append(try resolving(predicate, entity: entity)) }
            return .or(resolved)
        case .not(let predicate):
            return .not(try resolving(predicate, entity: entity))
        case let .memberCount(name, comparison, count):
            guard let relationship = entity.layout.relationship(named: name), relationship.isToMany else {
                throw ContextError.unknownAttribute(entity: entity.name, attribute: name)
            }
            if let end = core.schema.manyToManyEnd(entity.name, name) { return try linkOwners(of: end, where: comparison, count) }
            return try owners(of: relationship, where: comparison, count)
        case .matching, .objectIn:
            return predicate
        }
    }

    /// `.objectIn` the owners whose count of members in `relationship` compares with `count`
    /// as asked. Only owners with members are counted (every non-null inverse, one pass over
    /// the inverse's index), so when an empty to-many matches too the answer is "none of the
    /// owners that fail".
    private func owners(of relationship: RelationshipLayout, where comparison: FetchPredicate.Operator, _ count: Int) throws(ContextError) -> FetchPredicate {
        let members = try core.entity(named: relationship.description.destination)
        guard let position = members.layout.relationship(named: relationship.description.inverse)?.storagePosition else {
            throw ContextError.unknownAttribute(entity: members.name, attribute: relationship.description.inverse)
        }
        // Every reference is a non-empty string, so `> ""` is the whole index, nulls left out.
        let request = FetchRequest(entityName: members.name, predicate: .compare(relationship.description.inverse, .greaterThan, .string("")))
        var counts: [ObjectID: Int] = [:]
        for member in try matches(for: request, entity: members, plan: indexPlan(for: request, entity: members)) {
            if let owner = StoredObject.referencedID(member.values[position]) { counts[owner, default: 0] += 1 }
        }
        return Self.owners(counted: counts, where: comparison, count)
    }

    /// `.objectIn` the owners whose count in `counts` (owners with none absent) compares with
    /// `count` as asked; when an empty to-many matches too, "none of the owners that fail".
    static func owners(counted counts: [ObjectID: Int], where comparison: FetchPredicate.Operator, _ count: Int) -> FetchPredicate {
        let constant = AttributeValue.int(Int64(count))
        let emptyMatches = FetchPredicate.holds(.int(0), comparison, constant)
        let listed = counts.filter { FetchPredicate.holds(.int(Int64($0.value)), comparison, constant) != emptyMatches }.keys
        return emptyMatches ? .not(.objectIn(Set(listed))) : .objectIn(Set(listed))
    }

    /// `"department.name"` → (department, "name") when `department` is a to-one of `entity`.
    private func toOnePath(_ path: String, in entity: EntityDescription) -> (RelationshipLayout, String)? {
        guard let dot = path.firstIndex(of: "."), let relationship = entity.layout.relationship(named: String(path[..<dot])),
              !relationship.isToMany else { return nil }
        return (relationship, String(path[path.index(after: dot)...]))
    }

    /// The references (ID URIs) of the destinations of `relationship` that `predicate` matches.
    private func destinationReferences(_ relationship: RelationshipLayout, _ predicate: FetchPredicate) throws(ContextError) -> [AttributeValue] {
        let destination = try core.entity(named: relationship.description.destination)
        let request = try resolvingRelationshipPaths(
            FetchRequest(entityName: destination.name, predicate: predicate), entity: destination)
        try request.validate(against: destination)
        return try matches(for: request, entity: destination, plan: indexPlan(for: request, entity: destination)).map { candidate in
            switch candidate.source {
            case .registered(let object): return .string(object.storedID.uriString)
            case .stored(let id, _): return .string(id.uriString)
            }
        }
    }

    /// Loads the destinations of `paths` for `objects` (``FetchRequest/relationshipKeyPathsForPrefetching``).
    func prefetch(_ paths: [String], of objects: [StoredObject]) throws(ContextError) {
        guard let first = objects.first else { return }
        let entity = first.entity
        for path in paths {
            let name = path.split(separator: ".", maxSplits: 1).first.map(String.init) ?? path
            let rest = path.contains(".") ? [String(path[path.index(after: path.firstIndex(of: ".")!)...])] : []
            guard let relationship = entity.layout.relationship(named: name) else {
                throw ContextError.unknownAttribute(entity: entity.name, attribute: path)
            }
            let destination = try core.entity(named: relationship.description.destination)
            var loaded: [StoredObject] = []
            if let position = relationship.storagePosition {
                var seen = Set<ObjectID>()
                var toRead: [(id: ObjectID, entity: EntityDescription)] = []
                for object in objects {
                    guard let id = StoredObject.referencedID(object.current[position]), seen.insert(id).inserted else { continue }
                    if let registered = registeredObject(for: id) {
                        loaded.append(registered)
                        if !registered.isFaultStorage { continue }
                    }
                    if !id.isTemporaryID { toRead.append((id, destination)) }
                }
                for (position, record) in try baseStates(of: toRead).enumerated() {
                    guard let record else { continue }
                    if let fault = registeredObject(for: toRead[position].id) {
                        if fault.isFaultStorage { load(record, into: fault) }
                    } else {
                        loaded.append(registerLoaded(record, entity: destination))
                    }
                }
            } else if let end = core.schema.manyToManyEnd(entity.name, name) {
                loaded = try prefetchLinkedMembers(of: objects, end)
            } else {
                let batches = try prefetchMembers(of: objects, relationship)
                // All the members only for a path that goes on from them.
                if !rest.isEmpty { loaded = Array(batches.joined()) }
            }
            if !rest.isEmpty { try prefetch(rest, of: loaded) }
        }
    }
}
