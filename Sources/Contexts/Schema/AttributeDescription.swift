import Policies

/// One typed attribute of an entity: its name, type, whether it may be null, and its default.
///
/// A new object starts with every attribute's default value (`.null` when none is given). A
/// required attribute (`isOptional == false`) must hold a non-null value of its type when saved.
///
/// ```swift
/// let name = AttributeDescription("name", .string)
/// let city = AttributeDescription("city", .string, isOptional: true)
/// let active = AttributeDescription("active", .bool, defaultValue: .bool(true))
/// ```
public struct AttributeDescription: Sendable, Hashable {
    /// The attribute's name: ASCII letters, digits and `_`, not starting with a digit.
    ///
    /// ```swift
    /// AttributeDescription("age", .int).name   // "age"
    /// ```
    public let name: String

    /// The type every non-null value must have.
    ///
    /// ```swift
    /// AttributeDescription("age", .int).type   // .int
    /// ```
    public let type: AttributeType

    /// Whether the attribute may be `.null` (or absent) when saved.
    ///
    /// ```swift
    /// AttributeDescription("city", .string, isOptional: true).isOptional   // true
    /// ```
    public let isOptional: Bool

    /// The value a newly inserted object starts with; `.null` for none.
    ///
    /// ```swift
    /// AttributeDescription("active", .bool, defaultValue: .bool(true)).defaultValue   // .bool(true)
    /// ```
    public let defaultValue: AttributeValue

    /// The attribute's name in the store's recorded schema, when it was renamed: Core Data's
    /// `renamingIdentifier`. Opening a store whose schema has an attribute of that name (and none
    /// of this one's) moves its values here, keeping them (Docs/Contexts.md, "Schema evolution").
    /// Nil (the default) matches attributes by name only.
    ///
    /// ```swift
    /// AttributeDescription("fullName", .string, renamingIdentifier: "name").renamingIdentifier   // "name"
    /// ```
    public let renamingIdentifier: String?

    /// Describes an attribute; ``Schema/init(_:)`` checks that the default has the right type.
    ///
    /// ```swift
    /// let age = AttributeDescription("age", .int, isOptional: true, defaultValue: .int(0))
    /// let fullName = AttributeDescription("fullName", .string, renamingIdentifier: "name")   // was "name"
    /// ```
    public init(
        _ name: String, _ type: AttributeType, isOptional: Bool = false, defaultValue: AttributeValue = .null,
        renamingIdentifier: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.renamingIdentifier = renamingIdentifier
    }
}
