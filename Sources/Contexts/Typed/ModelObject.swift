import Policies

/// An object of a typed model in its context: its ``objectID``, its value as the struct, and
/// typed reads and writes. Cairn's typed `NSManagedObject`.
///
/// Like ``StoredObject`` (which it wraps, and which ``object`` hands out), it is not
/// `Sendable`: use it on its context's queue and pass ``objectID`` to other contexts.
///
/// ```swift
/// let ann = try context.insert(Person(name: "Ann", age: 30, city: nil))
/// try ann.update { $0.age += 1 }
/// let age = try ann.age                // 31: a throwing read of one attribute
/// try context.save()
/// let id = ann.objectID                // permanent now
/// ```
///
/// Reads throw ``ContextError/objectNotFound(_:)`` once the object's record is gone (a merged
/// deletion, a saved deletion, a fault whose record another context deleted), instead of
/// stopping the process.
@dynamicMemberLookup
public struct ModelObject<Model: CairnModel> {
    /// The untyped object: the same object, by attribute name.
    ///
    /// ```swift
    /// ann.object["age"]   // .int(31)
    /// ```
    public let object: StoredObject

    /// Wraps an object of `Model`'s entity.
    ///
    /// ```swift
    /// let ann = try ModelObject<Person>(context.existingObject(with: id))
    /// ```
    ///
    /// - Throws: ``TypedModelError/wrongEntity(model:entity:)`` for an object of another entity.
    public init(_ object: StoredObject) throws(TypedModelError) {
        guard object.entity.name == Model.entity.name else {
            throw TypedModelError.wrongEntity(model: "\(Model.self)", entity: object.entity.name)
        }
        self.object = object
    }

    init(checked object: StoredObject) {
        self.object = object
    }

    /// The object's ID: temporary until its first save, then permanent. Never stops the
    /// process, even after the object's record was deleted (off the queue it does, Rule C7).
    ///
    /// ```swift
    /// let id = ann.objectID
    /// ```
    public var objectID: ObjectID { object.objectID }

    /// The object's current value, unsaved changes included.
    ///
    /// ```swift
    /// let person: Person = try ann.value
    /// ```
    ///
    /// - Throws: ``ContextError/objectNotFound(_:)`` when the record is gone; `DecodingError`
    ///   when the stored values do not fit `Model` (a required property left null by untyped code).
    public var value: Model {
        get throws {
            try PropertyValuesDecoder.decode(Model.self, from: object.existingValues())
        }
    }

    /// One property's current value, read from its attribute alone (any other key path decodes
    /// the whole value).
    ///
    /// ```swift
    /// let age = try ann.age
    /// ```
    ///
    /// - Throws: as ``value``.
    public subscript<Value: Decodable>(dynamicMember keyPath: KeyPath<Model, Value>) -> Value {
        get throws {
            guard let attribute = Model.entity.attribute(for: keyPath) else { return try value[keyPath: keyPath] }
            let values = try object.existingValues()
            return try PropertyValuesDecoder.decodeValue(
                Value.self, from: values.value(of: attribute.name), codingPath: [AttributeKey(attribute.name)])
        }
    }

    /// Replaces the object's values with `newValue`'s (every attribute; unchanged ones stay
    /// clean).
    ///
    /// ```swift
    /// try ann.update(to: Person(name: "Ann", age: 32, city: "Oslo"))
    /// ```
    ///
    /// - Throws: ``ContextError/objectNotFound(_:)``, ``TypedModelError``, `EncodingError`;
    ///   nothing changes when it throws.
    public func update(to newValue: Model) throws {
        try object.checkExists()
        let values = try Model.entity.values(of: newValue)
        object.current = ObjectValues(values, layout: object.entity.layout)
    }

    /// Changes the value in place: `body` gets the current value, and what it leaves is written.
    ///
    /// ```swift
    /// try ann.update { $0.age += 1; $0.city = "Rome" }
    /// ```
    ///
    /// - Throws: what `body` throws, or as ``update(to:)``; nothing changes when it throws.
    public func update(_ body: (inout Model) throws -> Void) throws {
        var current = try value
        try body(&current)
        try update(to: current)
    }

    /// Sets one attribute.
    ///
    /// ```swift
    /// try ann.set(\.age, to: 33)
    /// ```
    ///
    /// - Throws: ``TypedModelError/unmappedKeyPath(model:keyPath:)`` for a key path that is not
    ///   an attribute, ``ContextError/objectNotFound(_:)``, `EncodingError`.
    public func set<Value: Encodable>(_ keyPath: KeyPath<Model, Value>, to newValue: Value) throws {
        guard let attribute = Model.entity.attribute(for: keyPath) else {
            throw TypedModelError.unmappedKeyPath(model: "\(Model.self)", keyPath: "\(keyPath)")
        }
        try object.checkExists()
        object[attribute.name] = try PropertyValuesEncoder.attributeValue(of: newValue, codingPath: [AttributeKey(attribute.name)]).0
    }

    /// Whether the object is inserted and not saved yet (``StoredObject/isInserted``).
    ///
    /// ```swift
    /// try context.insert(person).isInserted   // true
    /// ```
    public var isInserted: Bool { object.isInserted }

    /// Whether the object's deletion is pending in its context (``StoredObject/isDeleted``);
    /// false once a merge or save removed it (its ``context`` is then nil).
    ///
    /// ```swift
    /// context.delete(ann)
    /// ann.isDeleted   // true
    /// ```
    public var isDeleted: Bool { object.isDeleted }

    /// Whether the values differ from what was last read or saved (``StoredObject/isUpdated``).
    ///
    /// ```swift
    /// try ann.set(\.age, to: 40)
    /// ann.isUpdated   // true
    /// ```
    public var isUpdated: Bool { object.isUpdated }

    /// Whether the next save writes the object (``StoredObject/hasChanges``).
    ///
    /// ```swift
    /// if ann.hasChanges { try context.save() }
    /// ```
    public var hasChanges: Bool { object.hasChanges }

    /// Whether the values are not loaded yet (``StoredObject/isFault``).
    ///
    /// ```swift
    /// try context.object(Person.self, with: id).isFault   // true until read
    /// ```
    public var isFault: Bool { object.isFault }

    /// The context the object is registered in; nil once it forgot the object.
    ///
    /// ```swift
    /// ann.context === context   // true while registered
    /// ```
    public var context: ObjectContext? { object.context }
}

extension ModelObject: Hashable {
    /// Identity: the same object of the same context.
    ///
    /// ```swift
    /// try context.fetch(descriptor).first == context.fetch(descriptor).first   // true
    /// ```
    public static func == (lhs: ModelObject, rhs: ModelObject) -> Bool { lhs.object === rhs.object }

    /// Hashes the object's identity.
    ///
    /// ```swift
    /// let unique = Set(people)
    /// ```
    public func hash(into hasher: inout Hasher) { hasher.combine(object) }
}

/// Objects belong to one context and its queue; pass `objectID` between threads instead.
@available(*, unavailable)
extension ModelObject: Sendable {}

/// A coding key naming one attribute, for the errors of a single value's coding.
struct AttributeKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
