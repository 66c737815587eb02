import Foundation
import Policies

// Codable → PropertyValues. The value must encode as a keyed container (a struct or class with
// named properties); each of its properties becomes one attribute value:
//
//   Swift type                                        AttributeValue
//   String                                            .string
//   Int, Int8…Int64, UInt8…UInt32 (UInt, UInt64 ≤ Int64.max)   .int
//   Double, Float                                     .double
//   Bool                                              .bool
//   Date                                              .date
//   Data, [UInt8]                                     .bytes
//   URL                                               .string (absoluteString)
//   nil Optional                                      .null
//   a single-value type (RawRepresentable enums, wrappers)   its single value, by these rules
//   anything else (nested structs, arrays, dictionaries)     .string holding its JSON (sorted keys)

/// Encodes an `Encodable` value into ``PropertyValues`` by the table above.
///
/// ```swift
/// struct Person: Codable { var name: String; var age: Int; var city: String? }
/// let values = try PropertyValuesEncoder.encode(Person(name: "Ann", age: 30, city: nil))
/// // ["name": .string("Ann"), "age": .int(30), "city": .null] — or without "city" (absent = null)
/// ```
public enum PropertyValuesEncoder {
    /// The values of `value`'s properties.
    ///
    /// ```swift
    /// try PropertyValuesEncoder.encode(Person(name: "Ann", age: 30, city: "Oslo"))["age"]   // .int(30)
    /// ```
    ///
    /// - Throws: `EncodingError.invalidValue` when `value` does not encode as a keyed container
    ///   or an integer does not fit in 64 signed bits; whatever the value's own `encode(to:)`
    ///   or `JSONEncoder` throws.
    public static func encode<Value: Encodable>(_ value: Value) throws -> PropertyValues {
        let encoder = TopLevelEncoder()
        try value.encode(to: encoder)
        if let failure = encoder.failure { throw failure }
        return encoder.values
    }

    /// The attribute value of one property value (the table above, row by row), and whether
    /// it is the JSON of a structured value.
    static func attributeValue<Value: Encodable>(of value: Value, codingPath: [any CodingKey]) throws -> (AttributeValue, isJSON: Bool) {
        switch value {
        case let date as Date: return (.date(date), false)
        case let data as Data: return (.bytes([UInt8](data)), false)
        case let bytes as [UInt8]: return (.bytes(bytes), false)
        case let url as URL: return (.string(url.absoluteString), false)
        default: break
        }
        let leaf = LeafEncoder(codingPath: codingPath)
        try value.encode(to: leaf)
        if leaf.isComplex {
            let json = JSONEncoder()
            json.outputFormatting = [.sortedKeys]
            return (.string(String(decoding: try json.encode(value), as: UTF8.self)), true)
        }
        return (leaf.value ?? .null, false)
    }

    static func integer<Integer: BinaryInteger>(_ value: Integer, codingPath: [any CodingKey]) throws -> AttributeValue {
        guard let exact = Int64(exactly: value) else {
            throw EncodingError.invalidValue(value, EncodingError.Context(
                codingPath: codingPath, debugDescription: "\(value) does not fit in a 64-bit signed int attribute"))
        }
        return .int(exact)
    }
}

/// The encoder handed to the top-level value; collects its properties.
private final class TopLevelEncoder: Encoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var values = PropertyValues()
    var failure: EncodingError?

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(TopLevelContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        fail("an object's values must come from a keyed container (a struct or class), not an array")
        return DiscardingUnkeyedContainer(codingPath: [])
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        fail("an object's values must come from a keyed container (a struct or class), not a single value")
        return DiscardingSingleValueContainer(codingPath: [])
    }

    func fail(_ message: String) {
        if failure == nil {
            failure = EncodingError.invalidValue((), EncodingError.Context(codingPath: [], debugDescription: message))
        }
    }
}

private struct TopLevelContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: TopLevelEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { encoder.values[key.stringValue] = .null }
    mutating func encode(_ value: Bool, forKey key: Key) throws { encoder.values[key.stringValue] = .bool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { encoder.values[key.stringValue] = .string(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { encoder.values[key.stringValue] = .double(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { encoder.values[key.stringValue] = .double(Double(value)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try encodeInteger(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try encodeInteger(value, key) }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        encoder.values[key.stringValue] = try PropertyValuesEncoder.attributeValue(of: value, codingPath: [key]).0
    }

    private func encodeInteger<Integer: BinaryInteger>(_ value: Integer, _ key: Key) throws {
        encoder.values[key.stringValue] = try PropertyValuesEncoder.integer(value, codingPath: [key])
    }

    // Hand-written encode(to:) may ask for nesting; an attribute cannot hold it directly.
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        encoder.fail("nested container for \"\(key.stringValue)\": encode a Codable value for it instead")
        return KeyedEncodingContainer(DiscardingKeyedContainer<NestedKey>(codingPath: [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        encoder.fail("nested unkeyed container for \"\(key.stringValue)\": encode an array value for it instead")
        return DiscardingUnkeyedContainer(codingPath: [key])
    }

    mutating func superEncoder() -> any Encoder {
        encoder.fail("superEncoder is not supported: flatten the class's properties")
        return LeafEncoder(codingPath: [])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        encoder.fail("superEncoder(forKey:) is not supported: flatten the class's properties")
        return LeafEncoder(codingPath: [key])
    }
}

/// The encoder handed to one property's value: captures a single value, or notices that the
/// value is structured (and so becomes JSON).
private final class LeafEncoder: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var value: AttributeValue?
    var isComplex = false

    init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        isComplex = true
        return KeyedEncodingContainer(DiscardingKeyedContainer<Key>(codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        isComplex = true
        return DiscardingUnkeyedContainer(codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        LeafContainer(encoder: self)
    }
}

private struct LeafContainer: SingleValueEncodingContainer {
    let encoder: LeafEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.value = .null }
    mutating func encode(_ value: Bool) throws { encoder.value = .bool(value) }
    mutating func encode(_ value: String) throws { encoder.value = .string(value) }
    mutating func encode(_ value: Double) throws { encoder.value = .double(value) }
    mutating func encode(_ value: Float) throws { encoder.value = .double(Double(value)) }
    mutating func encode(_ value: Int) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int8) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int16) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int32) throws { try encodeInteger(value) }
    mutating func encode(_ value: Int64) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt8) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt16) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt32) throws { try encodeInteger(value) }
    mutating func encode(_ value: UInt64) throws { try encodeInteger(value) }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        let (inner, isJSON) = try PropertyValuesEncoder.attributeValue(of: value, codingPath: codingPath)
        // A wrapper around a structured value is structured too: JSON-encode the wrapper.
        if isJSON { encoder.isComplex = true }
        encoder.value = inner
    }

    private func encodeInteger<Integer: BinaryInteger>(_ value: Integer) throws {
        encoder.value = try PropertyValuesEncoder.integer(value, codingPath: codingPath)
    }
}

// Containers that accept and drop everything: returned where the protocol cannot throw, after
// the encoder has recorded why the value will be encoded another way (or fail).

private struct DiscardingKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let codingPath: [any CodingKey]
    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(DiscardingKeyedContainer<NestedKey>(codingPath: codingPath + [key]))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        DiscardingUnkeyedContainer(codingPath: codingPath + [key])
    }
    mutating func superEncoder() -> any Encoder { LeafEncoder(codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { LeafEncoder(codingPath: codingPath + [key]) }
}

private struct DiscardingUnkeyedContainer: UnkeyedEncodingContainer {
    let codingPath: [any CodingKey]
    var count = 0
    mutating func encodeNil() throws { count += 1 }
    mutating func encode<Value: Encodable>(_ value: Value) throws { count += 1 }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(DiscardingKeyedContainer<NestedKey>(codingPath: codingPath))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { DiscardingUnkeyedContainer(codingPath: codingPath) }
    mutating func superEncoder() -> any Encoder { LeafEncoder(codingPath: codingPath) }
}

private struct DiscardingSingleValueContainer: SingleValueEncodingContainer {
    let codingPath: [any CodingKey]
    mutating func encodeNil() throws {}
    mutating func encode<Value: Encodable>(_ value: Value) throws {}
}
