import Policies

// Codable convenience: an object's values to and from a Codable struct, through
// PropertyValuesEncoder / PropertyValuesDecoder (their files have the type table).

extension StoredObject {
    /// Replaces the object's values with those of `value`: every attribute `value` encodes gets
    /// its value, every other attribute becomes null (the struct describes the whole object).
    ///
    /// Nothing is changed when it throws.
    ///
    /// ```swift
    /// struct Person: Codable { var name: String; var age: Int; var city: String? }
    /// try person.setValues(from: Person(name: "Ann", age: 30, city: nil))
    /// ```
    ///
    /// - Throws: ``ValidationError`` with `.unknownAttribute` when `value` has a property the
    ///   entity lacks; `EncodingError` from encoding. Types are checked when the context saves.
    public func setValues<Value: Encodable>(from value: Value) throws {
        checkAccess()
        let encoded = try PropertyValuesEncoder.encode(value)
        for property in encoded.keys.sorted() where entity.attribute(named: property) == nil {
            throw ValidationError(objectID: storedID, entityName: entity.name, attributeName: property, problem: .unknownAttribute)
        }
        current = ObjectValues(encoded, layout: entity.layout)
    }

    /// The object's current values as a `Value`.
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
