import Policies

/// A schema that cannot be used: thrown by ``Schema/init(_:)``.
///
/// ```swift
/// do {
///     _ = try Schema([EntityDescription("9lives", attributes: [])])
/// } catch SchemaError.invalidEntityName(let name) {
///     print(name)   // 9lives
/// }
/// ```
public enum SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The entity name is empty, too long (over 100 bytes) or not an identifier.
    ///
    /// ```swift
    /// SchemaError.invalidEntityName("my-entity")
    /// ```
    case invalidEntityName(String)
    /// Two entities have the same name.
    ///
    /// ```swift
    /// SchemaError.duplicateEntity("Person")
    /// ```
    case duplicateEntity(String)
    /// The attribute name is empty, too long (over 200 bytes) or not an identifier.
    ///
    /// ```swift
    /// SchemaError.invalidAttributeName(entity: "Person", attribute: "first name")
    /// ```
    case invalidAttributeName(entity: String, attribute: String)
    /// Two attributes of one entity have the same name.
    ///
    /// ```swift
    /// SchemaError.duplicateAttribute(entity: "Person", attribute: "age")
    /// ```
    case duplicateAttribute(entity: String, attribute: String)
    /// A default value does not have the attribute's type.
    ///
    /// ```swift
    /// SchemaError.defaultValueOfWrongType(entity: "Person", attribute: "age", expected: .int, found: .string("x"))
    /// ```
    case defaultValueOfWrongType(entity: String, attribute: String, expected: AttributeType, found: AttributeValue)
    /// An index names an attribute the entity lacks.
    ///
    /// ```swift
    /// SchemaError.indexOnUnknownAttribute(entity: "Person", attribute: "nmae")
    /// ```
    case indexOnUnknownAttribute(entity: String, attribute: String)
    /// An index lists no attribute, lists one twice, or its table name (`index:<Entity>:<a,b>`)
    /// would be over the store's 200 bytes.
    ///
    /// ```swift
    /// SchemaError.invalidIndex(entity: "Person", attributes: [])
    /// ```
    case invalidIndex(entity: String, attributes: [String])
    /// Two indexes of one entity list the same attributes in the same order.
    ///
    /// ```swift
    /// SchemaError.duplicateIndex(entity: "Person", attributes: ["name"])
    /// ```
    case duplicateIndex(entity: String, attributes: [String])
    /// A uniqueness constraint names an attribute the entity lacks.
    ///
    /// ```swift
    /// SchemaError.uniquenessConstraintOnUnknownAttribute(entity: "Person", attribute: "emial")
    /// ```
    case uniquenessConstraintOnUnknownAttribute(entity: String, attribute: String)
    /// A uniqueness constraint lists no attribute, lists one twice, or its table name
    /// (`unique:<Entity>:<a,b>`) would be over the store's 200 bytes.
    ///
    /// ```swift
    /// SchemaError.invalidUniquenessConstraint(entity: "Person", attributes: [])
    /// ```
    case invalidUniquenessConstraint(entity: String, attributes: [String])
    /// Two uniqueness constraints of one entity list the same attributes in the same order.
    ///
    /// ```swift
    /// SchemaError.duplicateUniquenessConstraint(entity: "Person", attributes: ["email"])
    /// ```
    case duplicateUniquenessConstraint(entity: String, attributes: [String])
    /// A relationship's name is not an identifier, or an attribute or another relationship of
    /// the entity has it.
    ///
    /// ```swift
    /// SchemaError.invalidRelationshipName(entity: "Person", relationship: "name")
    /// ```
    case invalidRelationshipName(entity: String, relationship: String)
    /// A relationship's destination is not an entity of the schema.
    ///
    /// ```swift
    /// SchemaError.unknownDestination(entity: "Person", relationship: "department", destination: "Dept")
    /// ```
    case unknownDestination(entity: String, relationship: String, destination: String)
    /// A relationship's inverse is not a relationship of the destination, or does not point back
    /// (its destination is another entity, or its own inverse another relationship).
    ///
    /// ```swift
    /// SchemaError.invalidInverse(entity: "Person", relationship: "department", inverse: "staff")
    /// ```
    case invalidInverse(entity: String, relationship: String, inverse: String)
    /// A kind of relationship this version does not store: an ordered to-one, or a
    /// many-to-many whose link (or, ordered, order) table's name would pass the engine's
    /// 200-byte limit. `reason` says which.
    ///
    /// ```swift
    /// SchemaError.unsupportedRelationship(entity: "Person", relationship: "department", reason: "an ordered to-one (…)")
    /// ```
    case unsupportedRelationship(entity: String, relationship: String, reason: String)

    /// What is wrong, naming the entity and attribute.
    ///
    /// ```swift
    /// print(SchemaError.duplicateEntity("Person"))   // schema has two entities named "Person"
    /// ```
    public var description: String {
        switch self {
        case .invalidEntityName(let name):
            return "invalid entity name \"\(name)\": use 1 to 100 ASCII letters, digits or _, not starting with a digit"
        case .duplicateEntity(let name):
            return "schema has two entities named \"\(name)\""
        case let .invalidAttributeName(entity, attribute):
            return "invalid attribute name \"\(attribute)\" in entity \(entity): use 1 to 200 ASCII letters, digits or _, not starting with a digit"
        case let .duplicateAttribute(entity, attribute):
            return "entity \(entity) has two attributes named \"\(attribute)\""
        case let .defaultValueOfWrongType(entity, attribute, expected, found):
            return "default value \(found) of \(entity).\(attribute) is not of its type \(expected)"
        case let .indexOnUnknownAttribute(entity, attribute):
            return "an index of entity \(entity) names \"\(attribute)\", which is not one of its attributes"
        case let .invalidIndex(entity, attributes):
            return "invalid index [\(attributes.joined(separator: ", "))] of entity \(entity): list 1 or more distinct attributes, "
                + "with a table name index:\(entity):<attributes> of at most 200 bytes"
        case let .duplicateIndex(entity, attributes):
            return "entity \(entity) declares the index [\(attributes.joined(separator: ", "))] twice"
        case let .uniquenessConstraintOnUnknownAttribute(entity, attribute):
            return "a uniqueness constraint of entity \(entity) names \"\(attribute)\", which is not one of its attributes"
        case let .invalidUniquenessConstraint(entity, attributes):
            return "invalid uniqueness constraint [\(attributes.joined(separator: ", "))] of entity \(entity): list 1 or more "
                + "distinct attributes, with a table name unique:\(entity):<attributes> of at most 200 bytes"
        case let .duplicateUniquenessConstraint(entity, attributes):
            return "entity \(entity) declares the uniqueness constraint [\(attributes.joined(separator: ", "))] twice"
        case let .invalidRelationshipName(entity, relationship):
            return "invalid relationship name \"\(relationship)\" in entity \(entity): use an identifier that no attribute "
                + "or other relationship of the entity has"
        case let .unknownDestination(entity, relationship, destination):
            return "relationship \(entity).\(relationship) points at \"\(destination)\", which is not an entity of the schema"
        case let .invalidInverse(entity, relationship, inverse):
            return "relationship \(entity).\(relationship) names the inverse \"\(inverse)\", which is not a relationship of its "
                + "destination pointing back at \(entity).\(relationship)"
        case let .unsupportedRelationship(entity, relationship, reason):
            return "relationship \(entity).\(relationship) is \(reason), which this version does not store"
        }
    }
}
