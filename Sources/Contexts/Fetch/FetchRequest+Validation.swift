import Policies

// A request that names what its entity lacks is a typed error, never an empty result.

extension FetchRequest {
    /// Checks that every attribute the predicate and sort name exists in `entity`, and that
    /// every constant has its attribute's type (or is `.null`; ints and doubles mix as numbers).
    /// `.matching` closures are the caller's own and are not looked into. A `.memberCount` left
    /// here names no to-many of `entity`.
    func validate(against entity: EntityDescription) throws(ContextError) {
        if let predicate { try Self.validate(predicate, entity) }
        for descriptor in sortDescriptors where entity.layout.index(of: descriptor.attribute) == nil {
            throw ContextError.unknownAttribute(entity: entity.name, attribute: descriptor.attribute)
        }
    }

    private static func validate(_ predicate: FetchPredicate, _ entity: EntityDescription) throws(ContextError) {
        switch predicate {
        case let .compare(attribute, _, constant):
            try validate(attribute, [constant], entity)
        case let .isIn(attribute, constants):
            try validate(attribute, constants, entity)
        case .and(let predicates), .or(let predicates):
            for predicate in predicates { try validate(predicate, entity) }
        case .not(let predicate):
            try validate(predicate, entity)
        case .matching, .objectIn:
            break
        case .memberCount(let relationship, _, _):
            // Resolved into `.objectIn` before validation wherever the entity has the to-many.
            throw ContextError.unknownAttribute(entity: entity.name, attribute: relationship)
        }
    }

    private static func validate(_ attribute: String, _ constants: [AttributeValue], _ entity: EntityDescription) throws(ContextError) {
        guard let description = entity.attribute(named: attribute) else {
            throw ContextError.unknownAttribute(entity: entity.name, attribute: attribute)
        }
        for constant in constants where !accepts(description.type, constant) {
            throw ContextError.predicateTypeMismatch(
                entity: entity.name, attribute: attribute, expected: description.type, found: constant)
        }
    }

    private static func accepts(_ type: AttributeType, _ constant: AttributeValue) -> Bool {
        switch (type, constant) {
        case (_, .null), (.int, .double), (.double, .int): return true
        default: return type.accepts(constant)
        }
    }
}
