import Foundation
import Policies

// Codable convenience: an object's values to and from a Codable struct, through
// PropertyValuesEncoder / PropertyValuesDecoder (their files have the type table).

extension StoredObject {
    /// Replaces the object's values with those of `value`: every attribute `value` encodes gets
    /// its value, every other attribute becomes null (the struct describes the whole object).
    ///
    /// Relationships map to object IDs: an `ObjectID?` property sets a to-one (both ends follow),
    /// an `[ObjectID]` replaces a to-many's members; a relationship the struct leaves out keeps
    /// its destinations.
    ///
    /// Nothing is changed when it throws (a to-many's members are found first).
    ///
    /// ```swift
    /// struct Person: Codable { var name: String; var age: Int; var city: String? }
    /// try person.setValues(from: Person(name: "Ann", age: 30, city: nil))
    /// ```
    ///
    /// - Throws: ``ValidationError`` with `.unknownAttribute` when `value` has a property the
    ///   entity lacks; `EncodingError` from encoding; ``ContextError/objectNotFound(_:)`` for a
    ///   member that does not exist. Types are checked when the context saves.
    public func setValues<Value: Encodable>(from value: Value) throws {
        checkAccess()
        var encoded = try PropertyValuesEncoder.encode(value)
        // To-manys first: a list of IDs (JSON text by the encoder's table) replaces the members.
        var memberLists: [(name: String, ids: [ObjectID])] = []
        for relationship in entity.relationships where relationship.isToMany {
            guard let value = encoded.removeValue(forKey: relationship.name), value != .null else { continue }
            guard case .string(let json) = value, let ids = try? JSONDecoder().decode([ObjectID].self, from: Data(json.utf8)) else {
                throw ValidationError(objectID: storedID, entityName: entity.name, attributeName: relationship.name,
                                      problem: .wrongType(expected: .string, found: value))
            }
            memberLists.append((relationship.name, ids))
        }
        for property in encoded.keys.sorted() where entity.attribute(named: property) == nil {
            throw ValidationError(objectID: storedID, entityName: entity.name, attributeName: property, problem: .unknownAttribute)
        }
        // The members are found before anything changes: a missing one throws with the object as it was.
        var members: [(name: String, objects: [StoredObject])] = []
        if !memberLists.isEmpty {
            guard let context = owner else {
                contextMisuse("setValues(from:) with to-many members on \(storedID), which is not registered in a context")
            }
            for (name, ids) in memberLists {
                members.append((name, try ids.map { id throws(ContextError) in try context.existingObject(with: id) }))
            }
        }
        // A to-one the value leaves out keeps its destination; one it gives is set, both ends following.
        var values = ObjectValues(encoded, layout: entity.layout)
        for relationship in entity.layout.relationships {
            guard let position = relationship.storagePosition else { continue }
            values[position] = current[position]
            if let order = relationship.orderPosition { values[order] = current[order] }
        }
        current = values
        for relationship in entity.layout.relationships {
            guard let position = relationship.storagePosition, let reference = encoded[relationship.name] else { continue }
            assignReference(reference, at: position)
        }
        for (name, objects) in members { try replaceMembers(of: name, with: objects) }
    }

    /// The object's current values as a `Value`; a to-one decodes as its destination's
    /// `ObjectID` (a to-many is not among the values: read it with ``members(of:)``).
    ///
    /// ```swift
    /// let ann = try person.decode(Person.self)
    /// ```
    ///
    /// - Throws: `DecodingError` naming the property that does not fit.
    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        checkAccess()
        return try PropertyValuesDecoder.decode(type, from: current.dictionary(entity.layout))
    }
}
