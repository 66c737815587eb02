/// One index of an entity, resolved once: its attributes' positions and types, and its table.
///
/// `Sendable`: immutable.
struct IndexLayout: Sendable, Hashable {
    let entityName: String
    /// The attributes, in index order (the first is the leading one).
    let attributeNames: [String]
    /// Each attribute's position in the entity (-1 for a name it lacks: ``Schema`` refuses it).
    let positions: [Int]
    let types: [AttributeType]
    /// The table its entries live in (`index:<Entity>:<attr,attr>`, StorageMapping).
    let tableName: String

    init(entityName: String, attributeNames: [String], positions: [Int], types: [AttributeType]) {
        self.entityName = entityName
        self.attributeNames = attributeNames
        self.positions = positions
        self.types = types
        tableName = StorageMapping.indexTable(entity: entityName, attributes: attributeNames)
    }

    /// How the index names itself in explanations and errors: `Person(city, age)`.
    var displayName: String { "\(entityName)(\(attributeNames.joined(separator: ", ")))" }
}
