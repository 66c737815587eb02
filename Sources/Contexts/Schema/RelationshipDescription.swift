/// A relationship from one entity to another, with its inverse on the destination: Core Data's
/// `NSRelationshipDescription`.
///
/// A one-to-many pair is a to-one on one side (`Person.department`) and a to-many on the other
/// (`Department.employees`), each naming the other as its inverse. The to-one holds the fact: it
/// is stored as a property of its object's record; the to-many's members are the objects whose
/// to-one points at it, read through an index (Docs/Contexts.md, "Relationships").
///
/// ```swift
/// let department = EntityDescription("Department", attributes: [AttributeDescription("name", .string)], relationships: [
///     RelationshipDescription("employees", destination: "Person", inverse: "department", isToMany: true, deleteRule: .cascade),
/// ])
/// let person = EntityDescription("Person", attributes: [AttributeDescription("name", .string)], relationships: [
///     RelationshipDescription("department", destination: "Department", inverse: "employees"),
/// ])
/// ```
public struct RelationshipDescription: Sendable, Hashable {
    /// What deleting the source object does to its destinations (applied at `delete(_:)`).
    public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
        /// Each destination drops the deleted object from its inverse (the default).
        case nullify
        /// Each destination is deleted too, and its own rules apply.
        case cascade
        /// The save fails with a ``ValidationError`` while the relationship is non-empty.
        case deny
        /// Nothing: the destinations keep pointing at the deleted object.
        case noAction
    }

    /// The relationship's name: an identifier, distinct from the entity's attributes.
    public let name: String
    /// The destination entity's name.
    public let destination: String
    /// The inverse relationship's name on the destination (required).
    public let inverse: String
    /// Whether the relationship holds a set of destinations.
    public let isToMany: Bool
    /// What deleting the source does to the destinations.
    public let deleteRule: DeleteRule
    /// Whether a to-many keeps its members in the order they were added or placed in: a
    /// one-to-many's to-many, or either end (or both) of a many-to-many, each end keeping its own
    /// order. ``Schema`` refuses it on a to-one.
    public let isOrdered: Bool
    /// Whether a to-one may be empty when saved (to-many: always may).
    public let isOptional: Bool

    /// Describes a relationship; ``Schema/init(_:)`` checks the destination and the inverse.
    ///
    /// ```swift
    /// RelationshipDescription("department", destination: "Department", inverse: "employees")
    /// ```
    public init(
        _ name: String, destination: String, inverse: String, isToMany: Bool = false, deleteRule: DeleteRule = .nullify,
        isOrdered: Bool = false, isOptional: Bool = true
    ) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = isToMany
        self.deleteRule = deleteRule
        self.isOrdered = isOrdered
        self.isOptional = isOptional
    }
}
