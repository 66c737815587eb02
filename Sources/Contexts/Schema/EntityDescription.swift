import Policies

/// A kind of object: a name, its typed attributes, its indexes and its uniqueness constraints.
/// Objects of one entity live in one table; each index and each constraint in a table of its own.
///
/// ```swift
/// let person = EntityDescription("Person", attributes: [
///     AttributeDescription("name", .string),
///     AttributeDescription("age", .int),
///     AttributeDescription("city", .string, isOptional: true),
/// ], indexes: [["name"], ["city", "age"]], uniquenessConstraints: [["email"]])
/// ```
public struct EntityDescription: Sendable, Hashable {
    /// Everything derived from the name and attributes, built once. One reference, so copying
    /// an entity (every object holds one) costs a single retain.
    package let layout: EntityLayout

    /// The entity's name: ASCII letters, digits and `_`, not starting with a digit, at most 100
    /// bytes. It appears in object IDs (`cairn://Person/p1`) and in the table name.
    ///
    /// ```swift
    /// person.name   // "Person"
    /// ```
    public var name: String { layout.name }

    /// The attributes, in the order given.
    ///
    /// ```swift
    /// person.attributes.map(\.name)   // ["name", "age", "city"]
    /// ```
    public var attributes: [AttributeDescription] { layout.declaredAttributes }

    /// The relationships, in the order given.
    ///
    /// ```swift
    /// person.relationships.map(\.name)   // ["department"]
    /// ```
    public var relationships: [RelationshipDescription] { layout.relationships.map(\.description) }

    /// The indexes, each a list of attribute names (one for a single index, more for a compound
    /// one, in that order), as given.
    ///
    /// ```swift
    /// person.indexes   // [["name"], ["city", "age"]]
    /// ```
    public var indexes: [[String]] { layout.declaredIndexes }

    /// The uniqueness constraints, each a list of attribute names whose values together no two
    /// stored objects may share, as given.
    ///
    /// ```swift
    /// person.uniquenessConstraints   // [["email"]]
    /// ```
    public var uniquenessConstraints: [[String]] { layout.uniquenessConstraints.map(\.attributeNames) }

    /// The entity's name in the store's recorded schema, when it was renamed: Core Data's
    /// `renamingIdentifier`. Opening a store that holds an entity of that name (and none of this
    /// one's) moves its objects here, keeping their primary keys. Nil (the default) matches
    /// entities by name only.
    ///
    /// ```swift
    /// EntityDescription("Customer", attributes: [], renamingIdentifier: "Client").renamingIdentifier   // "Client"
    /// ```
    public var renamingIdentifier: String? { layout.renamingIdentifier }

    /// Describes an entity; ``Schema/init(_:)`` checks names, duplicates, indexes and constraints.
    ///
    /// `indexes` are Core Data's: each list is one index, on those attributes in that order.
    /// Fetches whose predicate or sort uses an index read only its matching range (see
    /// Docs/Contexts.md, "Indexes"); saves keep every index in the same commit as the records.
    ///
    /// `uniquenessConstraints` are Core Data's too: no two stored objects may hold the same
    /// values of a list's attributes (an object with a null in one of them is not constrained).
    /// Saves check them atomically with the commit and hand a duplicate to the merge policy as
    /// a ``ConflictKind/constraint`` conflict (Docs/MergePolicies.md). Each constraint is also
    /// an index, for fetches, unless `indexes` already lists the same attributes.
    ///
    /// ```swift
    /// let tag = EntityDescription("Tag", attributes: [AttributeDescription("label", .string)], indexes: [["label"]])
    /// let user = EntityDescription("User", attributes: [AttributeDescription("email", .string)],
    ///                              uniquenessConstraints: [["email"]])
    /// ```
    ///
    /// `relationships` relate the entity to others, each with an inverse on its destination
    /// (``RelationshipDescription``); a to-one is stored with the object's attributes, so
    /// ``attributes`` lists only the declared ones.
    ///
    /// `renamingIdentifier` names the entity as the store knows it, when it was renamed
    /// (``renamingIdentifier``).
    public init(
        _ name: String, attributes: [AttributeDescription], relationships: [RelationshipDescription] = [], indexes: [[String]] = [],
        uniquenessConstraints: [[String]] = [], renamingIdentifier: String? = nil
    ) {
        layout = EntityLayout(name: name, attributes: attributes, relationships: relationships, indexes: indexes,
                              uniquenessConstraints: uniquenessConstraints, renamingIdentifier: renamingIdentifier)
    }

    /// The same entity, with an order key after each of `toOnes` (to-ones whose inverse is an
    /// ordered to-many): what ``Schema`` holds for it.
    func ordering(_ toOnes: Set<String>) -> EntityDescription {
        EntityDescription(layout: EntityLayout(
            name: layout.name, attributes: layout.declaredAttributes, relationships: relationships, indexes: layout.declaredIndexes,
            uniquenessConstraints: uniquenessConstraints, renamingIdentifier: layout.renamingIdentifier, orderedToOnes: toOnes))
    }

    init(layout: EntityLayout) {
        self.layout = layout
    }

    /// The relationship named `name`, or nil.
    ///
    /// ```swift
    /// person.relationship(named: "department")?.destination   // "Department"
    /// ```
    public func relationship(named name: String) -> RelationshipDescription? {
        layout.relationship(named: name)?.description
    }

    /// The attribute named `name`, or nil.
    ///
    /// ```swift
    /// person.attribute(named: "age")?.type   // .int
    /// person.attribute(named: "agee")        // nil
    /// ```
    public func attribute(named name: String) -> AttributeDescription? {
        layout.index(of: name).map { layout.attributes[$0] }
    }

    /// The default value of every attribute that has one: what a new object starts with.
    ///
    /// ```swift
    /// EntityDescription("Flag", attributes: [AttributeDescription("on", .bool, defaultValue: .bool(false))])
    ///     .defaultValues   // ["on": .bool(false)]
    /// ```
    public var defaultValues: PropertyValues {
        layout.defaultValues.dictionary(layout)
    }

    /// Equal when the names, attributes, indexes, constraints and renaming identifiers are (the
    /// layout is derived from them).
    ///
    /// ```swift
    /// EntityDescription("Tag", attributes: []) == EntityDescription("Tag", attributes: [])   // true
    /// ```
    public static func == (lhs: EntityDescription, rhs: EntityDescription) -> Bool {
        lhs.layout === rhs.layout || (lhs.layout.name == rhs.layout.name && lhs.layout.attributes == rhs.layout.attributes
            && lhs.relationships == rhs.relationships
            && lhs.indexes == rhs.indexes && lhs.uniquenessConstraints == rhs.uniquenessConstraints
            && lhs.renamingIdentifier == rhs.renamingIdentifier)
    }

    /// Hashes the name and attributes (not the indexes: equal ones hash equally), consistently with ``==(_:_:)``.
    ///
    /// ```swift
    /// let entities: Set<EntityDescription> = [person]
    /// ```
    public func hash(into hasher: inout Hasher) {
        hasher.combine(layout.name)
        hasher.combine(layout.attributes)
    }
}

/// What the context layer needs to know about an entity, computed once when the entity is
/// described: objects keep their values by attribute **position** (``ObjectValues``), and this is
/// the map between those positions and everything that names attributes (the public API, the
/// stored format, predicates).
///
/// `Sendable`: immutable after init.
package final class EntityLayout: Sendable {
    let name: String
    /// The stored properties by position: the declared attributes, then one optional string
    /// per to-one relationship (its destination's ID URI: ``RelationshipLayout``), followed by
    /// its order key when its inverse is an ordered to-many.
    let attributes: [AttributeDescription]
    /// The declared attributes: the first `declaredAttributes.count` positions.
    let declaredAttributes: [AttributeDescription]
    /// The relationships, as declared.
    let relationships: [RelationshipLayout]
    /// The table the entity's records live in (`entity:<name>`).
    let tableName: String
    /// Attribute position by name (the first attribute of a name, should a hand-made entity
    /// repeat one; ``Schema`` refuses duplicates).
    private let indexByName: [String: Int]
    /// Each attribute's name as UTF-8, by position: the stored format names properties so, and
    /// the decoder matches them byte for byte without making a String.
    let nameBytes: [[UInt8]]
    /// Each attribute's name as the stored format writes it (length varint, then UTF-8).
    let nameHeaders: [[UInt8]]
    /// Attribute positions sorted by name (String order, as the stored format writes them).
    let positionsByName: [Int]
    /// `nameHeaders` in `positionsByName`'s order, as the decoder tests them.
    let headersByName: [NameHeader]
    /// `nameHeaders` by position, as a read of one attribute of an undecoded record tests them.
    let headersByPosition: [NameHeader]
    /// A new object's values: each attribute's default (`.null` when none).
    let defaultValues: ObjectValues
    /// Every attribute null: the values of an object not loaded yet.
    let nullValues: ObjectValues
    /// The indexes: the declared ones, then one per uniqueness constraint whose attribute list
    /// is not declared as an index (the planner uses those too). Attributes the entity lacks
    /// resolve to no position, and ``Schema`` refuses such an index, so a schema's layouts
    /// resolve every one.
    let indexes: [IndexLayout]
    /// The indexes as declared (without the constraints' implied ones).
    let declaredIndexes: [[String]]
    /// The uniqueness constraints, as declared.
    let uniquenessConstraints: [UniquenessConstraintLayout]
    /// The entity's name in the recorded schema of a store made before a rename, or nil.
    let renamingIdentifier: String?
    /// Whether a relationship's delete rule is `deny`: a save deleting an object of the entity
    /// counts those destinations (most entities have none, and skip the pass over their relationships).
    let hasDenyRule: Bool
    /// Whether it has a to-many: a save deleting an object of the entity reads the store's
    /// members of each (a cascade's members, usually with to-ones only, are passed over at once).
    let hasToMany: Bool

    init(name: String, attributes declared: [AttributeDescription], relationships: [RelationshipDescription] = [],
         indexes: [[String]] = [], uniquenessConstraints: [[String]] = [], renamingIdentifier: String? = nil,
         orderedToOnes: Set<String> = []) {
        self.name = name
        self.renamingIdentifier = renamingIdentifier
        declaredAttributes = declared
        var attributes = declared
        var relationshipLayouts: [RelationshipLayout] = []
        for relationship in relationships {
            if relationship.isToMany {
                relationshipLayouts.append(RelationshipLayout(description: relationship, storagePosition: nil))
            } else {
                var layout = RelationshipLayout(description: relationship, storagePosition: attributes.count)
                attributes.append(AttributeDescription(relationship.name, .string, isOptional: relationship.isOptional))
                if orderedToOnes.contains(relationship.name) {
                    layout.orderPosition = attributes.count
                    attributes.append(AttributeDescription(OrderKeys.attributeName(of: relationship.name), .int, isOptional: true))
                }
                relationshipLayouts.append(layout)
            }
        }
        self.relationships = relationshipLayouts
        hasDenyRule = relationships.contains { $0.deleteRule == .deny }
        hasToMany = relationships.contains { $0.isToMany }
        self.attributes = attributes
        tableName = StorageMapping.table(for: name)
        var index: [String: Int] = [:]
        for (position, attribute) in attributes.enumerated() where index[attribute.name] == nil {
            index[attribute.name] = position
        }
        indexByName = index
        nameBytes = attributes.map { Array($0.name.utf8) }
        nameHeaders = nameBytes.map { name in
            var header: [UInt8] = []
            ValueCodec.appendVarint(UInt64(name.count), to: &header)
            return header + name
        }
        positionsByName = attributes.indices.sorted { attributes[$0].name < attributes[$1].name }
        headersByName = positionsByName.map { [nameHeaders] in NameHeader(bytes: nameHeaders[$0], position: $0) }
        headersByPosition = nameHeaders.indices.map { [nameHeaders] in NameHeader(bytes: nameHeaders[$0], position: $0) }
        defaultValues = ObjectValues(attributes.map(\.defaultValue))
        nullValues = ObjectValues(repeating: .null, count: attributes.count)
        declaredIndexes = indexes
        var implied = uniquenessConstraints.reduce(into: [[String]]()) { implied, names in
            if !indexes.contains(names), !implied.contains(names) { implied.append(names) }
        }
        // Every to-one gets an index of its own: it finds an owner's to-many members (in order,
        // for an ordered to-many: the order key follows the reference).
        for relationship in relationshipLayouts where !relationship.isToMany {
            var names = [relationship.name]
            if relationship.orderPosition != nil { names.append(OrderKeys.attributeName(of: relationship.name)) }
            if !indexes.contains(names), !implied.contains(names) { implied.append(names) }
        }
        self.indexes = (indexes + implied).map { names in
            IndexLayout(entityName: name, attributeNames: names, positions: names.map { index[$0] ?? -1 },
                        types: names.map { index[$0].map { attributes[$0].type } ?? .string })
        }
        self.uniquenessConstraints = uniquenessConstraints.map { names in
            UniquenessConstraintLayout(entityName: name, attributeNames: names, positions: names.map { index[$0] ?? -1 })
        }
    }

    var count: Int { attributes.count }

    /// The relationship named `name`, or nil.
    func relationship(named name: String) -> RelationshipLayout? {
        // Names of another length passed over first, as `index(of:)` does.
        let length = name.utf8.count
        for index in relationships.indices {
            let candidate = relationships[index].description.name
            if candidate.utf8.count == length && candidate == name { return relationships[index] }
        }
        return nil
    }

    /// The position of the attribute named `name`, or nil.
    ///
    /// Small entities are searched linearly: comparing a short attribute name with another
    /// (both usually small strings, compared by their raw bits) is cheaper than hashing it,
    /// and this runs on every property access. Names of another length are passed over
    /// first: `==` on two different strings calls into the runtime to compare them, where a
    /// small string's length is in its bits.
    @inline(__always)
    func index(of name: String) -> Int? {
        if attributes.count <= Self.linearSearchLimit {
            let length = name.utf8.count
            for position in attributes.indices {
                let candidate = attributes[position].name
                if candidate.utf8.count == length && candidate == name { return position }
            }
            return nil
        }
        return indexByName[name]
    }

    /// Up to this many attributes, ``index(of:)`` searches linearly.
    static let linearSearchLimit = 8
}
