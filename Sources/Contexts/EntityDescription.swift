import Policies

/// A kind of object: a name and its typed attributes. Objects of one entity live in one table.
///
/// ```swift
/// let person = EntityDescription("Person", attributes: [
///     AttributeDescription("name", .string),
///     AttributeDescription("age", .int),
///     AttributeDescription("city", .string, isOptional: true),
/// ])
/// ```
public struct EntityDescription: Sendable, Hashable {
    /// The entity's name: ASCII letters, digits and `_`, not starting with a digit, at most 100
    /// bytes. It appears in object IDs (`cairn://Person/p1`) and in the table name.
    ///
    /// ```swift
    /// person.name   // "Person"
    /// ```
    public let name: String

    /// The attributes, in the order given.
    ///
    /// ```swift
    /// person.attributes.map(\.name)   // ["name", "age", "city"]
    /// ```
    public let attributes: [AttributeDescription]

    // Lookup table built once; attributes are immutable after init.
    private let indexByName: [String: Int]

    /// Describes an entity; ``Schema/init(_:)`` checks names and duplicates.
    ///
    /// ```swift
    /// let tag = EntityDescription("Tag", attributes: [AttributeDescription("label", .string)])
    /// ```
    public init(_ name: String, attributes: [AttributeDescription]) {
        self.name = name
        self.attributes = attributes
        var index: [String: Int] = [:]
        for (position, attribute) in attributes.enumerated() where index[attribute.name] == nil {
            index[attribute.name] = position
        }
        indexByName = index
    }

    /// The attribute named `name`, or nil.
    ///
    /// ```swift
    /// person.attribute(named: "age")?.type   // .int
    /// person.attribute(named: "agee")        // nil
    /// ```
    public func attribute(named name: String) -> AttributeDescription? {
        indexByName[name].map { attributes[$0] }
    }

    /// The default value of every attribute that has one: what a new object starts with.
    ///
    /// ```swift
    /// EntityDescription("Flag", attributes: [AttributeDescription("on", .bool, defaultValue: .bool(false))])
    ///     .defaultValues   // ["on": .bool(false)]
    /// ```
    public var defaultValues: PropertyValues {
        var values = PropertyValues()
        for attribute in attributes where attribute.defaultValue != .null {
            values[attribute.name] = attribute.defaultValue
        }
        return values
    }
}
