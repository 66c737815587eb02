import Policies

/// One attribute of a typed model: a key path of the struct, the attribute's name (the
/// property's coding key) and its type.
///
/// ```swift
/// static let entity = ModelEntity<Person>("Person", [
///     .attribute(\.name, "name"),
///     .attribute(\.age, "age", defaultValue: 0),
///     .attribute(\.address, "address", as: .string),   // a nested Codable struct, stored as JSON
/// ])
/// ```
///
/// `@unchecked Sendable`: every field is immutable, and `keyPath` (a key path type the standard
/// library does not mark Sendable) is made from a literal of stored properties, capturing nothing.
public struct ModelAttribute<Model: CairnModel>: @unchecked Sendable {
    /// The struct's property.
    ///
    /// ```swift
    /// ModelAttribute<Person>.attribute(\.age, "age").keyPath == \Person.age   // true
    /// ```
    public let keyPath: PartialKeyPath<Model>

    /// The attribute as the schema holds it.
    ///
    /// ```swift
    /// ModelAttribute<Person>.attribute(\.city, "city").description.isOptional   // true for String?
    /// ```
    public let description: AttributeDescription

    /// Whether `==`, `<` and the other comparisons of this property's Swift values agree with
    /// Cairn's comparisons of the stored values, so a sort by it may run in the store.
    let isNativelyOrdered: Bool

    /// The attribute's name.
    ///
    /// ```swift
    /// ModelAttribute<Person>.attribute(\.age, "age").name   // "age"
    /// ```
    public var name: String { description.name }

    init(keyPath: PartialKeyPath<Model>, description: AttributeDescription, isNativelyOrdered: Bool) {
        self.keyPath = keyPath
        self.description = description
        self.isNativelyOrdered = isNativelyOrdered
    }

    /// The property's value in `model`, as `Codable` writes it.
    func read(_ model: Model) throws -> AttributeValue {
        guard let value = model[keyPath: keyPath] as? any Encodable else { return .null }
        return try PropertyValuesEncoder.attributeValue(of: value, codingPath: [AttributeKey(name)]).0
    }

    /// The property at `keyPath`, stored in the attribute `name`, its type and optionality
    /// taken from the Swift type (``ModelAttributeValue``).
    ///
    /// `defaultValue` is the value an object inserted with the untyped API starts with.
    ///
    /// ```swift
    /// .attribute(\.age, "age")
    /// .attribute(\.city, "city")            // String?: an optional attribute
    /// .attribute(\.active, "active", defaultValue: true)
    /// ```
    public static func attribute<Value: ModelAttributeValue>(
        _ keyPath: KeyPath<Model, Value> & Sendable, _ name: String, defaultValue: Value? = nil
    ) -> ModelAttribute {
        let fallback = defaultValue.flatMap { try? PropertyValuesEncoder.attributeValue(of: $0, codingPath: []).0 } ?? .null
        return ModelAttribute(
            keyPath: keyPath,
            description: AttributeDescription(
                name, Value.attributeType, isOptional: Value.isOptionalAttribute, defaultValue: fallback),
            isNativelyOrdered: Value.self is any TranslatableConstant.Type)
    }

    /// The property at `keyPath`, of any `Codable` type, stored in the attribute `name` as
    /// `type`: for nested structs, arrays and dictionaries (stored as JSON text, `.string`) and
    /// wrappers. Its comparisons in predicates and sorts are evaluated on the objects.
    ///
    /// ```swift
    /// .attribute(\.address, "address", as: .string, isOptional: true)
    /// ```
    public static func attribute<Value: Codable>(
        _ keyPath: KeyPath<Model, Value> & Sendable, _ name: String, as type: AttributeType, isOptional: Bool = false,
        defaultValue: AttributeValue = .null
    ) -> ModelAttribute {
        ModelAttribute(
            keyPath: keyPath,
            description: AttributeDescription(name, type, isOptional: isOptional, defaultValue: defaultValue),
            isNativelyOrdered: false)
    }
}
