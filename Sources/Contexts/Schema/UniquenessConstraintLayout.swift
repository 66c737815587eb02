/// One uniqueness constraint of an entity, resolved once: its attributes' positions and the
/// table of its entries (one per stored object with no null among them, StorageMapping).
///
/// `Sendable`: immutable.
struct UniquenessConstraintLayout: Sendable, Hashable {
    let entityName: String
    /// The attributes, in declared order.
    let attributeNames: [String]
    /// Each attribute's position in the entity (-1 for a name it lacks: ``Schema`` refuses it).
    let positions: [Int]
    /// The table its entries live in (`unique:<Entity>:<attr,attr>`).
    let tableName: String

    init(entityName: String, attributeNames: [String], positions: [Int]) {
        self.entityName = entityName
        self.attributeNames = attributeNames
        self.positions = positions
        tableName = StorageMapping.uniquenessTable(entity: entityName, attributes: attributeNames)
    }

    /// How the constraint names itself in errors: `Person(email)`.
    var displayName: String { "\(entityName)(\(attributeNames.joined(separator: ", ")))" }
}
