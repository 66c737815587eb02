/// One way the schema a store is opened with differs from the schema the store recorded:
/// what ``ObjectStore`` migrates on open, or lists in ``ContextError/incompatibleSchema(_:)``.
///
/// Changes of indexes, uniqueness constraints and default values are not differences of
/// this kind: indexes and constraints are built or dropped on every open, and a default
/// applies to new objects only.
///
/// ```swift
/// catch ContextError.incompatibleSchema(let differences) {
///     for difference in differences where !difference.isAutomatic { print(difference) }
/// }
/// ```
public enum SchemaDifference: Sendable, Hashable, CustomStringConvertible {
    /// A new entity: nothing stored to change.
    ///
    /// ```swift
    /// SchemaDifference.entityAdded("Tag")
    /// ```
    case entityAdded(String)
    /// The store's entity is not in the schema: its objects are deleted.
    ///
    /// ```swift
    /// SchemaDifference.entityRemoved("Draft")
    /// ```
    case entityRemoved(String)
    /// An entity whose ``EntityDescription/renamingIdentifier`` names the store's entity `from`:
    /// its objects move, keeping their primary keys.
    ///
    /// ```swift
    /// SchemaDifference.entityRenamed(from: "Client", to: "Customer")
    /// ```
    case entityRenamed(from: String, to: String)
    /// A new attribute that is optional or has a default: stored objects get the default
    /// (`.null` when none).
    ///
    /// ```swift
    /// SchemaDifference.attributeAdded(entity: "Person", attribute: "city")
    /// ```
    case attributeAdded(entity: String, attribute: String)
    /// A new required attribute without a default: stored objects would have no valid value.
    /// Needs a migration closure.
    ///
    /// ```swift
    /// SchemaDifference.requiredAttributeAdded(entity: "Person", attribute: "email")
    /// ```
    case requiredAttributeAdded(entity: String, attribute: String)
    /// The store's attribute is not in the schema: its values are removed.
    ///
    /// ```swift
    /// SchemaDifference.attributeRemoved(entity: "Person", attribute: "fax")
    /// ```
    case attributeRemoved(entity: String, attribute: String)
    /// An attribute whose ``AttributeDescription/renamingIdentifier`` names the store's
    /// attribute `from`: its values move.
    ///
    /// ```swift
    /// SchemaDifference.attributeRenamed(entity: "Person", from: "name", to: "fullName")
    /// ```
    case attributeRenamed(entity: String, from: String, to: String)
    /// An attribute's type changed: stored values have the old type. Needs a migration closure.
    ///
    /// ```swift
    /// SchemaDifference.typeChanged(entity: "Person", attribute: "age", from: .string, to: .int)
    /// ```
    case typeChanged(entity: String, attribute: String, from: AttributeType, to: AttributeType)
    /// An optional attribute became required: stored nulls take its default, or, without one,
    /// need a migration closure (`hasDefault` false).
    ///
    /// ```swift
    /// SchemaDifference.becameRequired(entity: "Person", attribute: "age", hasDefault: true)
    /// ```
    case becameRequired(entity: String, attribute: String, hasDefault: Bool)
    /// A required attribute became optional: nothing stored to change.
    ///
    /// ```swift
    /// SchemaDifference.becameOptional(entity: "Person", attribute: "age")
    /// ```
    case becameOptional(entity: String, attribute: String)

    /// Whether opening migrates it without a migration closure (lightweight migration).
    ///
    /// ```swift
    /// SchemaDifference.attributeAdded(entity: "Person", attribute: "city").isAutomatic           // true
    /// SchemaDifference.typeChanged(entity: "P", attribute: "a", from: .int, to: .string).isAutomatic   // false
    /// ```
    public var isAutomatic: Bool {
        switch self {
        case .requiredAttributeAdded, .typeChanged: return false
        case .becameRequired(_, _, let hasDefault): return hasDefault
        default: return true
        }
    }

    /// The entity whose stored objects it concerns, by its name in the schema being opened
    /// (the store's name for a removed entity).
    ///
    /// ```swift
    /// SchemaDifference.attributeRemoved(entity: "Person", attribute: "fax").entityName   // "Person"
    /// ```
    public var entityName: String {
        switch self {
        case .entityAdded(let name), .entityRemoved(let name): return name
        case .entityRenamed(_, let to): return to
        case .attributeAdded(let entity, _), .requiredAttributeAdded(let entity, _), .attributeRemoved(let entity, _),
             .attributeRenamed(let entity, _, _), .typeChanged(let entity, _, _, _), .becameRequired(let entity, _, _),
             .becameOptional(let entity, _):
            return entity
        }
    }

    /// One line: `Person.age: type changed from string to int (needs a migration closure)`.
    ///
    /// ```swift
    /// print(SchemaDifference.entityAdded("Tag"))   // entity Tag added
    /// ```
    public var description: String {
        let text: String
        switch self {
        case .entityAdded(let name): text = "entity \(name) added"
        case .entityRemoved(let name): text = "entity \(name) removed (its objects are deleted)"
        case let .entityRenamed(from, to): text = "entity \(from) renamed to \(to)"
        case let .attributeAdded(entity, attribute): text = "\(entity).\(attribute) added"
        case let .requiredAttributeAdded(entity, attribute): text = "\(entity).\(attribute) added, required and without a default"
        case let .attributeRemoved(entity, attribute): text = "\(entity).\(attribute) removed (its values are dropped)"
        case let .attributeRenamed(entity, from, to): text = "\(entity).\(from) renamed to \(to)"
        case let .typeChanged(entity, attribute, from, to): text = "\(entity).\(attribute): type changed from \(from) to \(to)"
        case let .becameRequired(entity, attribute, hasDefault):
            text = "\(entity).\(attribute) became required" + (hasDefault ? " (stored nulls take the default)" : ", without a default")
        case let .becameOptional(entity, attribute): text = "\(entity).\(attribute) became optional"
        }
        return isAutomatic ? text : text + " (needs a migration closure)"
    }
}
