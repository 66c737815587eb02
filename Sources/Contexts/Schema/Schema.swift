/// The entities a store holds, checked once when built.
///
/// ```swift
/// let schema = try Schema([
///     EntityDescription("Person", attributes: [
///         AttributeDescription("name", .string),
///         AttributeDescription("age", .int, isOptional: true),
///     ]),
/// ])
/// ```
public struct Schema: Sendable, Hashable {
    /// The entities, in the order given.
    ///
    /// ```swift
    /// schema.entities.map(\.name)   // ["Person"]
    /// ```
    public let entities: [EntityDescription]

    private let indexByName: [String: Int]

    /// Whether any entity declares an index: a save of a schema without one does no index work.
    let hasIndexes: Bool
    /// Whether any entity declares a uniqueness constraint.
    let hasUniquenessConstraints: Bool
    /// Whether any entity declares a relationship: a save of a schema without one skips them.
    let hasRelationships: Bool
    /// The one-to-one ends by entity name, each entity's in declaration order.
    private let oneToOneEnds: [String: [OneToOneEnd]]
    /// Whether any entity has a one-to-one relationship: a save without one skips its repair.
    var hasOneToOne: Bool { !oneToOneEnds.isEmpty }
    /// The many-to-many ends by entity name, each entity's in declaration order.
    private let manyToManyEnds: [String: [ManyToManyEnd]]
    /// Whether any entity has a many-to-many relationship: a save without one writes no links.
    var hasManyToMany: Bool { !manyToManyEnds.isEmpty }

    /// Builds a schema, checking every entity and attribute.
    ///
    /// ```swift
    /// let schema = try Schema([EntityDescription("Tag", attributes: [AttributeDescription("label", .string)])])
    /// ```
    ///
    /// - Throws: ``SchemaError`` for an invalid or duplicate entity or attribute name, a
    ///   default value of the wrong type, an index or uniqueness constraint that names an
    ///   unknown attribute, none, one twice, or repeats another, or a relationship whose name
    ///   is taken, whose destination is unknown, whose inverse does not point back, or whose
    ///   kind is not stored (an ordered to-one; a many-to-many whose link or order table name is
    ///   too long).
    public init(_ entities: [EntityDescription]) throws(SchemaError) {
        var index: [String: Int] = [:]
        for (position, entity) in entities.enumerated() {
            guard Self.isValidName(entity.name, maxBytes: Self.maxEntityNameBytes) else {
                throw SchemaError.invalidEntityName(entity.name)
            }
            guard index[entity.name] == nil else { throw SchemaError.duplicateEntity(entity.name) }
            index[entity.name] = position
            var seen = Set<String>()
            for attribute in entity.attributes {
                guard Self.isValidName(attribute.name, maxBytes: Self.maxAttributeNameBytes) else {
                    throw SchemaError.invalidAttributeName(entity: entity.name, attribute: attribute.name)
                }
                guard seen.insert(attribute.name).inserted else {
                    throw SchemaError.duplicateAttribute(entity: entity.name, attribute: attribute.name)
                }
                if attribute.defaultValue != .null, !attribute.type.accepts(attribute.defaultValue) {
                    throw SchemaError.defaultValueOfWrongType(
                        entity: entity.name, attribute: attribute.name,
                        expected: attribute.type, found: attribute.defaultValue)
                }
            }
            for relationship in entity.relationships {
                guard Self.isValidName(relationship.name, maxBytes: Self.maxAttributeNameBytes),
                      seen.insert(relationship.name).inserted else {
                    throw SchemaError.invalidRelationshipName(entity: entity.name, relationship: relationship.name)
                }
            }
            // Constraints first: each implies an index, whose error would name the wrong thing.
            try Self.checkUniquenessConstraints(of: entity)
            try Self.checkIndexes(of: entity)
        }
        for entity in entities { try Self.checkRelationships(of: entity, entities: entities, index: index) }
        // The members of an ordered one-to-many keep their order key beside their to-one (an
        // ordered many-to-many end keeps its keys with its links).
        var orderedToOnes: [String: Set<String>] = [:]
        for entity in entities {
            for relationship in entity.relationships where relationship.isOrdered {
                guard entities[index[relationship.destination]!].relationship(named: relationship.inverse)?.isToMany == false else { continue }
                orderedToOnes[relationship.destination, default: []].insert(relationship.inverse)
            }
        }
        let entities = entities.map { entity in orderedToOnes[entity.name].map { entity.ordering($0) } ?? entity }
        var oneToOne: [String: [OneToOneEnd]] = [:]
        var manyToMany: [String: [ManyToManyEnd]] = [:]
        for entity in entities {
            for relationship in entity.relationships where relationship.isToMany {
                let destination = entities[index[relationship.destination]!]
                guard destination.relationship(named: relationship.inverse)!.isToMany else { continue }
                manyToMany[entity.name, default: []].append(ManyToManyEnd(
                    name: relationship.name, entity: entity.name, destination: destination.name, inverse: relationship.inverse,
                    deleteRule: relationship.deleteRule,
                    linkTable: StorageMapping.linkTable(entity: entity.name, relationship: relationship.name),
                    inverseLinkTable: StorageMapping.linkTable(entity: destination.name, relationship: relationship.inverse),
                    orderTable: relationship.isOrdered ? StorageMapping.linkOrderTable(entity: entity.name, relationship: relationship.name) : nil))
            }
            for relationship in entity.layout.relationships where !relationship.isToMany {
                let destination = entities[index[relationship.description.destination]!].layout
                guard let inverse = destination.relationship(named: relationship.description.inverse),
                      let inversePosition = inverse.storagePosition else { continue }
                oneToOne[entity.name, default: []].append(OneToOneEnd(
                    name: relationship.name, position: relationship.storagePosition!, destination: destination.name,
                    inverse: inverse.name, inversePosition: inversePosition))
            }
        }
        oneToOneEnds = oneToOne
        manyToManyEnds = manyToMany
        self.entities = entities
        indexByName = index
        hasIndexes = entities.contains { !$0.layout.indexes.isEmpty }
        hasUniquenessConstraints = entities.contains { !$0.layout.uniquenessConstraints.isEmpty }
        hasRelationships = entities.contains { !$0.layout.relationships.isEmpty }
    }

    /// The entity named `name`, or nil.
    ///
    /// ```swift
    /// schema.entity(named: "Person")?.attributes.count   // 2
    /// ```
    public func entity(named name: String) -> EntityDescription? {
        indexByName[name].map { entities[$0] }
    }

    /// The one-to-one end `relationship` of `entity` is, or nil for any other relationship.
    func oneToOneEnd(_ entity: String, _ relationship: String) -> OneToOneEnd? {
        oneToOneEnds[entity]?.first { $0.name == relationship }
    }

    /// The one-to-one ends of `entity`, in declaration order (none for most entities).
    func oneToOneEnds(of entity: String) -> [OneToOneEnd] {
        oneToOneEnds[entity] ?? []
    }

    /// The many-to-many end `relationship` of `entity` is, or nil for any other relationship.
    func manyToManyEnd(_ entity: String, _ relationship: String) -> ManyToManyEnd? {
        manyToManyEnds[entity]?.first { $0.name == relationship }
    }

    /// The many-to-many ends of `entity`, in declaration order (none for most entities).
    func manyToManyEnds(of entity: String) -> [ManyToManyEnd] {
        manyToManyEnds[entity] ?? []
    }

    private static func checkRelationships(
        of entity: EntityDescription, entities: [EntityDescription], index: [String: Int]
    ) throws(SchemaError) {
        for relationship in entity.relationships {
            guard let position = index[relationship.destination] else {
                throw SchemaError.unknownDestination(
                    entity: entity.name, relationship: relationship.name, destination: relationship.destination)
            }
            guard let inverse = entities[position].relationship(named: relationship.inverse),
                  inverse.destination == entity.name, inverse.inverse == relationship.name else {
                throw SchemaError.invalidInverse(entity: entity.name, relationship: relationship.name, inverse: relationship.inverse)
            }
            var unsupported: String? = nil
            if relationship.isOrdered && !relationship.isToMany {
                unsupported = "an ordered to-one (only a to-many keeps an order: declare isOrdered on the to-many end)"
            }
            if relationship.isToMany && inverse.isToMany {
                // An ordered end has a second table, one byte longer a name.
                let table = relationship.isOrdered
                    ? StorageMapping.linkOrderTable(entity: entity.name, relationship: relationship.name)
                    : StorageMapping.linkTable(entity: entity.name, relationship: relationship.name)
                if table.utf8.count > maxTableNameBytes {
                    unsupported = "a many-to-many whose \(relationship.isOrdered ? "order" : "link") table name (\(table)) is longer than "
                        + "\(maxTableNameBytes) bytes"
                }
            }
            if let unsupported {
                throw SchemaError.unsupportedRelationship(entity: entity.name, relationship: relationship.name, reason: unsupported)
            }
        }
    }

    private static func checkIndexes(of entity: EntityDescription) throws(SchemaError) {
        var seen = Set<[String]>()
        for index in entity.layout.indexes {
            let names = index.attributeNames
            guard !names.isEmpty, Set(names).count == names.count, index.tableName.utf8.count <= maxTableNameBytes else {
                throw SchemaError.invalidIndex(entity: entity.name, attributes: names)
            }
            if let position = index.positions.firstIndex(of: -1) {
                throw SchemaError.indexOnUnknownAttribute(entity: entity.name, attribute: names[position])
            }
            guard seen.insert(names).inserted else { throw SchemaError.duplicateIndex(entity: entity.name, attributes: names) }
        }
    }

    private static func checkUniquenessConstraints(of entity: EntityDescription) throws(SchemaError) {
        var seen = Set<[String]>()
        for constraint in entity.layout.uniquenessConstraints {
            let names = constraint.attributeNames
            guard !names.isEmpty, Set(names).count == names.count, constraint.tableName.utf8.count <= maxTableNameBytes else {
                throw SchemaError.invalidUniquenessConstraint(entity: entity.name, attributes: names)
            }
            if let position = constraint.positions.firstIndex(of: -1) {
                throw SchemaError.uniquenessConstraintOnUnknownAttribute(entity: entity.name, attribute: names[position])
            }
            guard seen.insert(names).inserted else {
                throw SchemaError.duplicateUniquenessConstraint(entity: entity.name, attributes: names)
            }
        }
    }

    /// The engine's limit on a table name.
    static let maxTableNameBytes = 200

    // Entity names go into table names (200-byte limit with our prefix) and object ID URIs;
    // attribute names go into every stored value. Identifier characters keep both unambiguous.
    static let maxEntityNameBytes = 100
    static let maxAttributeNameBytes = 200

    static func isValidName(_ name: String, maxBytes: Int) -> Bool {
        isValidName(bytes: name.utf8, maxBytes: maxBytes)
    }

    /// The same rule over a name's UTF-8 bytes (an ID's URI is read this way).
    static func isValidName<Bytes: Collection<UInt8>>(bytes: Bytes, maxBytes: Int) -> Bool {
        guard let first = bytes.first, bytes.count <= maxBytes else { return false }
        func isLetter(_ byte: UInt8) -> Bool {
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
        }
        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
        return isLetter(first) && bytes.allSatisfy { isLetter($0) || isDigit($0) }
    }
}
