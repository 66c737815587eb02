import Foundation
import Policies

// PropertyValues → Codable: the reverse of PropertyValuesEncoder's table. Absent and `.null`
// properties decode as nil Optionals (a non-optional one is `keyNotFound` / `valueNotFound`);
// a structured property type is decoded from the JSON in its `.string`. Types must match
// exactly (an `.int` does not decode as a Double), except that Float reads a `.double`.

/// Decodes a `Decodable` value from ``PropertyValues`` (see `PropertyValuesEncoder`'s table).
///
/// ```swift
/// struct Person: Codable { var name: String; var age: Int; var city: String? }
/// let ann = try PropertyValuesDecoder.decode(Person.self, from: ["name": .string("Ann"), "age": .int(30)])
/// // Person(name: "Ann", age: 30, city: nil)
/// ```
public enum PropertyValuesDecoder {
    /// A `Value` built from `values`.
    ///
    /// ```swift
    /// let ann = try PropertyValuesDecoder.decode(Person.self, from: person.values)
    /// ```
    ///
    /// - Throws: `DecodingError` (`keyNotFound`, `valueNotFound`, `typeMismatch`,
    ///   `dataCorrupted`) naming the property, or whatever `Value`'s own `init(from:)` throws.
    public static func decode<Value: Decodable>(_ type: Value.Type, from values: PropertyValues) throws -> Value {
        try Value(from: TopLevelDecoder(values: values))
    }

    static func decodeValue<Value: Decodable>(_ type: Value.Type, from value: AttributeValue, codingPath: [any CodingKey]) throws -> Value {
        func mismatch(_ expected: String) -> DecodingError {
            DecodingError.typeMismatch(Value.self, DecodingError.Context(
                codingPath: codingPath, debugDescription: "expected \(expected), found \(value)"))
        }
        if Value.self == Date.self {
            guard case .date(let date) = value else { throw mismatch("a date") }
            return date as! Value
        }
        if Value.self == Data.self {
            guard case .bytes(let bytes) = value else { throw mismatch("bytes") }
            return Data(bytes) as! Value
        }
        if Value.self == [UInt8].self {
            guard case .bytes(let bytes) = value else { throw mismatch("bytes") }
            return bytes as! Value
        }
        if Value.self == URL.self {
            guard case .string(let text) = value, let url = URL(string: text) else { throw mismatch("a URL string") }
            return url as! Value
        }
        do {
            return try Value(from: LeafDecoder(value: value, codingPath: codingPath))
        } catch is StructuredValue {
            guard case .string(let json) = value else { throw mismatch("a string of JSON") }
            return try JSONDecoder().decode(Value.self, from: Data(json.utf8))
        }
    }

    static func integer<Integer: FixedWidthInteger>(_ type: Integer.Type, from value: AttributeValue, codingPath: [any CodingKey]) throws -> Integer {
        guard case .int(let number) = value else {
            if value == .null {
                throw DecodingError.valueNotFound(Integer.self, DecodingError.Context(codingPath: codingPath, debugDescription: "value is null"))
            }
            throw DecodingError.typeMismatch(Integer.self, DecodingError.Context(
                codingPath: codingPath, debugDescription: "expected an int, found \(value)"))
        }
        guard let exact = Integer(exactly: number) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: codingPath, debugDescription: "\(number) does not fit in \(Integer.self)"))
        }
        return exact
    }

    static func scalar<Scalar>(_ type: Scalar.Type, from value: AttributeValue, codingPath: [any CodingKey], _ extract: (AttributeValue) -> Scalar?) throws -> Scalar {
        if let scalar = extract(value) { return scalar }
        if value == .null {
            throw DecodingError.valueNotFound(Scalar.self, DecodingError.Context(codingPath: codingPath, debugDescription: "value is null"))
        }
        throw DecodingError.typeMismatch(Scalar.self, DecodingError.Context(
            codingPath: codingPath, debugDescription: "expected \(Scalar.self), found \(value)"))
    }
}

/// Thrown by the leaf decoder when a type asks for a keyed or unkeyed container: its value is
/// stored as JSON text.
private struct StructuredValue: Error {}

private struct TopLevelDecoder: Decoder {
    let values: PropertyValues
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(TopLevelContainer<Key>(values: values))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, DecodingError.Context(
            codingPath: [], debugDescription: "an object's values decode only as a keyed container (a struct or class)"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(PropertyValues.self, DecodingError.Context(
            codingPath: [], debugDescription: "an object's values decode only as a keyed container (a struct or class)"))
    }
}

private struct TopLevelContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let values: PropertyValues
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { values.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { values[key.stringValue] != nil }

    func value(_ key: Key) throws -> AttributeValue {
        guard let value = values[key.stringValue] else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(
                codingPath: [key], debugDescription: "no value for \"\(key.stringValue)\""))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { (values[key.stringValue] ?? .null) == .null }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try PropertyValuesDecoder.scalar(Bool.self, from: value(key), codingPath: [key]) { Bool(attributeValue: $0) }
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try PropertyValuesDecoder.scalar(String.self, from: value(key), codingPath: [key]) { String(attributeValue: $0) }
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try PropertyValuesDecoder.scalar(Double.self, from: value(key), codingPath: [key]) { Double(attributeValue: $0) }
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try PropertyValuesDecoder.scalar(Float.self, from: value(key), codingPath: [key]) { Double(attributeValue: $0).map(Float.init) }
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try PropertyValuesDecoder.integer(type, from: value(key), codingPath: [key]) }

    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
        try PropertyValuesDecoder.decodeValue(type, from: value(key), codingPath: [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw DecodingError.typeMismatch(type, DecodingError.Context(
            codingPath: [key], debugDescription: "attributes hold no nested containers; decode a Codable value for \"\(key.stringValue)\""))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, DecodingError.Context(
            codingPath: [key], debugDescription: "attributes hold no nested containers; decode an array value for \"\(key.stringValue)\""))
    }

    func superDecoder() throws -> any Decoder { TopLevelDecoder(values: values) }
    func superDecoder(forKey key: Key) throws -> any Decoder { TopLevelDecoder(values: values) }
}

/// The decoder handed to one property's type: serves its single value, or signals (by
/// throwing StructuredValue) that the type is structured and must come from JSON.
private struct LeafDecoder: Decoder, SingleValueDecodingContainer {
    let value: AttributeValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw StructuredValue() }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw StructuredValue() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool {
        try PropertyValuesDecoder.scalar(Bool.self, from: value, codingPath: codingPath) { Bool(attributeValue: $0) }
    }
    func decode(_ type: String.Type) throws -> String {
        try PropertyValuesDecoder.scalar(String.self, from: value, codingPath: codingPath) { String(attributeValue: $0) }
    }
    func decode(_ type: Double.Type) throws -> Double {
        try PropertyValuesDecoder.scalar(Double.self, from: value, codingPath: codingPath) { Double(attributeValue: $0) }
    }
    func decode(_ type: Float.Type) throws -> Float {
        try PropertyValuesDecoder.scalar(Float.self, from: value, codingPath: codingPath) { Double(attributeValue: $0).map(Float.init) }
    }
    func decode(_ type: Int.Type) throws -> Int { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try PropertyValuesDecoder.integer(type, from: value, codingPath: codingPath) }
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try PropertyValuesDecoder.decodeValue(type, from: value, codingPath: codingPath)
    }
}
