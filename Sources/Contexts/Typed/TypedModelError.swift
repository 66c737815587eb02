/// Why a typed model's value could not be written or read.
///
/// ```swift
/// do {
///     try context.insert(person)
/// } catch let error as TypedModelError {
///     print(error)   // names the model type and the attribute
/// }
/// ```
public enum TypedModelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A declared key path holds another value than `Codable` writes under its attribute's
    /// name: the entity maps the key path to the wrong name (or `encode(to:)` transforms it).
    ///
    /// ```swift
    /// .attribute(\.nickname, "name")   // while CodingKeys writes `name` from \.name
    /// ```
    case mappingMismatch(model: String, attribute: String)

    /// `Codable` writes a property that the entity does not declare as an attribute.
    ///
    /// ```swift
    /// TypedModelError.undeclaredProperty(model: "Person", property: "nickname")
    /// ```
    case undeclaredProperty(model: String, property: String)

    /// A key path used to set one attribute is not one of the entity's attributes.
    ///
    /// ```swift
    /// try ann.set(\.name.count, to: 3)   // not an attribute
    /// ```
    case unmappedKeyPath(model: String, keyPath: String)

    /// A `StoredObject` of another entity was taken as an object of this model.
    ///
    /// ```swift
    /// TypedModelError.wrongEntity(model: "Person", entity: "Item")
    /// ```
    case wrongEntity(model: String, entity: String)

    /// What went wrong, in a sentence.
    ///
    /// ```swift
    /// print(TypedModelError.wrongEntity(model: "Person", entity: "Item"))
    /// ```
    public var description: String {
        switch self {
        case let .mappingMismatch(model, attribute):
            return "\(model): the key path declared for attribute \"\(attribute)\" holds another value than Codable writes "
                + "under that name; declare each key path with its property's coding key"
        case let .undeclaredProperty(model, property):
            return "\(model): Codable writes \"\(property)\", which its ModelEntity does not declare; add .attribute for it"
        case let .unmappedKeyPath(model, keyPath):
            return "\(model): \(keyPath) is not one of the attributes its ModelEntity declares"
        case let .wrongEntity(model, entity):
            return "an object of entity \(entity) is not a \(model)"
        }
    }
}
