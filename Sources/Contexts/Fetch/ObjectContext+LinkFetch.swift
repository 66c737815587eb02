import Policies

// Fetch predicates answered from a to-many's members: membership (`tags == tag`, Core Data's
// `ANY tags == %@`) from the member's side, and a many-to-many's member count from its links.
// Both become `.objectIn(owners)`, pending changes included, as a one-to-many's count does.

extension ObjectContext {
    /// `name == member` (`.hasMember`), `name != member` and `name IN [members]` for a to-many
    /// `name` of `entity`, as the owners of those members; nil when `name` is no to-many.
    ///
    /// - Throws: ``ContextError/predicateTypeMismatch(entity:attribute:expected:found:)`` for a
    ///   constant that is not the ID URI of a destination object;
    ///   ``ContextError/unknownAttribute(entity:attribute:)`` for an ordering comparison.
    func membership(
        _ name: String, _ comparison: FetchPredicate.Operator, _ constants: [AttributeValue], in entity: EntityDescription
    ) throws(ContextError) -> FetchPredicate? {
        guard let relationship = entity.layout.relationship(named: name), relationship.isToMany else { return nil }
        guard comparison == .equal || comparison == .notEqual else {
            throw ContextError.unknownAttribute(entity: entity.name, attribute: name)
        }
        let destination = try core.entity(named: relationship.description.destination)
        var owners = Set<ObjectID>()
        for constant in constants {
            guard case .string(let uri) = constant, let member = ObjectID(uriString: uri), member.entityName == destination.name else {
                throw ContextError.predicateTypeMismatch(entity: entity.name, attribute: name, expected: .string, found: constant)
            }
            owners.formUnion(try self.owners(of: member, entity, relationship, destination))
        }
        return comparison == .equal ? .objectIn(owners) : .not(.objectIn(owners))
    }

    /// The owners whose to-many `relationship` holds `member` in this context's view: the
    /// member's links of the inverse, or the one its inverse to-one names.
    private func owners(
        of member: ObjectID, _ entity: EntityDescription, _ relationship: RelationshipLayout, _ destination: EntityDescription
    ) throws(ContextError) -> [ObjectID] {
        let held = registeredObject(for: member)
        if held?.deletedFlag == true { return [] }
        if let end = core.schema.manyToManyEnd(entity.name, relationship.name) {
            return try linkIDs(of: held?.storedID ?? member, owner: held, end.inverseEnd(core.schema))
        }
        guard let position = destination.layout.relationship(named: relationship.description.inverse)?.storagePosition else { return [] }
        let values: ObjectValues
        if let held, !held.isFaultStorage {
            values = held.current
        } else if let record = try baseState(of: member, entity: destination) {
            values = record.values
        } else {
            return []
        }
        return StoredObject.referencedID(values[position]).map { [$0] } ?? []
    }

    /// `.objectIn` the owners whose count of links through `end` compares with `count` as asked.
    func linkOwners(of end: ManyToManyEnd, where comparison: FetchPredicate.Operator, _ count: Int) throws(ContextError) -> FetchPredicate {
        Self.owners(counted: try visibleLinkCounts(end), where: comparison, count)
    }
}
