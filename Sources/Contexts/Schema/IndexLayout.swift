/// One index of an entity, resolved once: its attributes' positions and types, its table and
/// its keys' content cap.
///
/// A class, compared by value: a plan and every index operation of a save take the entity's
/// layout, and copying a struct of five references retained and released each of them (about
/// 2,600 instructions of a 45,700-instruction `fetch-indexed` request).
///
/// `Sendable`: immutable.
final class IndexLayout: Sendable, Hashable {
    let entityName: String
    /// The attributes, in index order (the first is the leading one).
    let attributeNames: [String]
    /// Each attribute's position in the entity (-1 for a name it lacks: ``Schema`` refuses it).
    let positions: [Int]
    let types: [AttributeType]
    /// The table its entries live in (`index:<Entity>:<attr,attr>`, StorageMapping).
    let tableName: String
    /// How many content bytes of a string or bytes value its entries keep
    /// (``IndexKeyEncoding/contentCap(types:)``).
    let contentCap: Int

    init(entityName: String, attributeNames: [String], positions: [Int], types: [AttributeType]) {
        self.entityName = entityName
        self.attributeNames = attributeNames
        self.positions = positions
        self.types = types
        tableName = StorageMapping.indexTable(entity: entityName, attributes: attributeNames)
        contentCap = IndexKeyEncoding.contentCap(types: types)
    }

    static func == (left: IndexLayout, right: IndexLayout) -> Bool {
        left === right || (left.entityName == right.entityName && left.attributeNames == right.attributeNames
            && left.positions == right.positions && left.types == right.types)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(entityName)
        hasher.combine(attributeNames)
        hasher.combine(positions)
        hasher.combine(types)
    }

    /// How the index names itself in explanations and errors: `Person(city, age)`.
    var displayName: String { "\(entityName)(\(attributeNames.joined(separator: ", ")))" }
}
