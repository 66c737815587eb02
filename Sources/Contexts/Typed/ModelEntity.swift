import Policies

/// A typed model's entity: its name, its attributes by key path, its indexes and uniqueness
/// constraints, declared once beside the struct (``CairnModel/entity``).
///
/// ```swift
/// static let entity = ModelEntity<Person>("Person", [
///     .attribute(\.name, "name"),
///     .attribute(\.age, "age"),
///     .attribute(\.city, "city"),
/// ], indexes: [[\.age], [\.city, \.age]], uniquenessConstraints: [[\.name]])
/// ```
///
/// A key path listed twice, or an index naming a key path that is not an attribute, stops the
/// process with a message (a programming error in the declaration, met at its first use).
///
/// `@unchecked Sendable`: every field is immutable; the key paths in `positions` (a type the
/// standard library does not mark Sendable) are the attributes', made from literals.
public struct ModelEntity<Model: CairnModel>: @unchecked Sendable {
    /// The entity's name.
    ///
    /// ```swift
    /// Person.entity.name   // "Person"
    /// ```
    public let name: String

    /// The attributes, in declaration order.
    ///
    /// ```swift
    /// Person.entity.attributes.map(\.name)   // ["name", "age", "city"]
    /// ```
    public let attributes: [ModelAttribute<Model>]

    /// The entity as the schema holds it.
    ///
    /// ```swift
    /// try Schema([Person.entity.description])   // what Schema(models: [Person.self]) does
    /// ```
    public let description: EntityDescription

    /// Each attribute's position in `attributes`, by key path.
    private let positions: [AnyKeyPath: Int]

    /// Declares the entity `name` with `attributes`; `indexes` and `uniquenessConstraints` list
    /// key paths of those attributes (see ``EntityDescription/init(_:attributes:indexes:uniquenessConstraints:)``).
    ///
    /// ```swift
    /// ModelEntity<Tag>("Tag", [.attribute(\.label, "label")], uniquenessConstraints: [[\.label]])
    /// ```
    public init(
        _ name: String, _ attributes: [ModelAttribute<Model>], indexes: [[PartialKeyPath<Model>]] = [],
        uniquenessConstraints: [[PartialKeyPath<Model>]] = []
    ) {
        var positions: [AnyKeyPath: Int] = [:]
        for (position, attribute) in attributes.enumerated() {
            if positions.updateValue(position, forKey: attribute.keyPath) != nil {
                contextMisuse("ModelEntity \(name): \(attribute.keyPath) is listed twice")
            }
        }
        func names(_ lists: [[PartialKeyPath<Model>]], _ role: String) -> [[String]] {
            lists.map { list in
                list.map { keyPath in
                    guard let position = positions[keyPath] else {
                        contextMisuse("ModelEntity \(name): the \(role) names \(keyPath), which is not one of its attributes")
                    }
                    return attributes[position].name
                }
            }
        }
        self.name = name
        self.attributes = attributes
        self.positions = positions
        description = EntityDescription(
            name, attributes: attributes.map(\.description), indexes: names(indexes, "index"),
            uniquenessConstraints: names(uniquenessConstraints, "uniqueness constraint"))
    }

    /// The attribute of `keyPath`, or nil when the key path is not one of the attributes.
    ///
    /// ```swift
    /// Person.entity.attribute(for: \.age)?.name   // "age"
    /// ```
    public func attribute(for keyPath: PartialKeyPath<Model>) -> ModelAttribute<Model>? {
        positions[keyPath].map { attributes[$0] }
    }

    /// The attribute of a key path of any root (nil unless it is one of `Model`'s attributes).
    func attribute(forAny keyPath: AnyKeyPath) -> ModelAttribute<Model>? {
        positions[keyPath].map { attributes[$0] }
    }

    /// `model`'s values, as `Codable` writes them, after checking that every declared key path
    /// holds the value written under its attribute's name and that every value written is an
    /// attribute.
    ///
    /// - Throws: ``TypedModelError/mappingMismatch(model:attribute:)``,
    ///   ``TypedModelError/undeclaredProperty(model:property:)``, `EncodingError`.
    func values(of model: Model) throws -> PropertyValues {
        let encoded = try PropertyValuesEncoder.encode(model)
        for attribute in attributes where try attribute.read(model) != encoded.value(of: attribute.name) {
            throw TypedModelError.mappingMismatch(model: "\(Model.self)", attribute: attribute.name)
        }
        for property in encoded.keys.sorted() where description.attribute(named: property) == nil {
            throw TypedModelError.undeclaredProperty(model: "\(Model.self)", property: property)
        }
        return encoded
    }
}
