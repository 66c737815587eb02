/// A `Codable` struct that is an entity: its type names the entity and maps its key paths to
/// attribute names, once, beside the type.
///
/// Conform a struct and declare ``entity``: the entity's name, and one attribute per stored
/// property, each a key path with the name its `CodingKeys` give it. The schema, typed
/// inserts, fetches with Foundation's `#Predicate` and `SortDescriptor`, updates and deletes
/// all come from that one declaration.
///
/// ```swift
/// struct Person: CairnModel {
///     var name: String
///     var age: Int
///     var city: String?
///
///     static let entity = ModelEntity<Person>("Person", [
///         .attribute(\.name, "name"),
///         .attribute(\.age, "age"),
///         .attribute(\.city, "city"),
///     ], indexes: [[\.age]])
/// }
///
/// let schema = try Schema(models: [Person.self])
/// try context.insert(Person(name: "Ann", age: 30, city: "Oslo"))
/// let adults = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 18 }))
/// ```
///
/// The names must be the property's coding keys: the values are written by `Codable`
/// (``PropertyValuesEncoder``) and predicates are translated by key path, and a typed write
/// checks that the two agree (``TypedModelError/mappingMismatch(model:attribute:)``).
public protocol CairnModel: Codable {
    /// The entity this type is: its name and its attributes by key path.
    ///
    /// ```swift
    /// Person.entity.description   // the EntityDescription the schema holds
    /// ```
    static var entity: ModelEntity<Self> { get }
}
