import Foundation

/// A Swift type a typed model may store in one attribute, and the attribute type it becomes.
///
/// The standard types conform (`String`, the integers, `Double`, `Float`, `Bool`, `Date`,
/// `Data`, `[UInt8]`, `URL`), and `Optional` of any of them (an optional attribute). For an
/// enum with a raw value, declare the conformance; the raw value's type decides:
///
/// ```swift
/// enum Kind: String, Codable, ModelAttributeValue { case person, company }
/// ```
///
/// Other `Codable` types (nested structs, arrays) are stored as JSON text: declare them with
/// ``ModelAttribute/attribute(_:_:as:isOptional:defaultValue:)``.
public protocol ModelAttributeValue: Codable {
    /// The attribute type values of this Swift type are stored as.
    ///
    /// ```swift
    /// Int.attributeType   // .int
    /// ```
    static var attributeType: AttributeType { get }

    /// Whether nil is a value (true only for `Optional`).
    ///
    /// ```swift
    /// String?.isOptionalAttribute   // true
    /// ```
    static var isOptionalAttribute: Bool { get }
}

extension ModelAttributeValue {
    /// False: only `Optional` holds nil.
    ///
    /// ```swift
    /// String.isOptionalAttribute   // false
    /// ```
    public static var isOptionalAttribute: Bool { false }
}

extension ModelAttributeValue where Self: RawRepresentable, RawValue: ModelAttributeValue {
    /// The raw value's attribute type: an enum is stored as its raw value.
    ///
    /// ```swift
    /// Kind.attributeType   // .string for `enum Kind: String`
    /// ```
    public static var attributeType: AttributeType { RawValue.attributeType }
}

extension Optional: ModelAttributeValue where Wrapped: ModelAttributeValue {
    /// The wrapped type's attribute type.
    ///
    /// ```swift
    /// Int?.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { Wrapped.attributeType }

    /// True: nil is stored as null.
    ///
    /// ```swift
    /// Int?.isOptionalAttribute   // true
    /// ```
    public static var isOptionalAttribute: Bool { true }
}

extension String: ModelAttributeValue {
    /// `.string`.
    ///
    /// ```swift
    /// String.attributeType   // .string
    /// ```
    public static var attributeType: AttributeType { .string }
}

extension URL: ModelAttributeValue {
    /// `.string` (the absolute string).
    ///
    /// ```swift
    /// URL.attributeType   // .string
    /// ```
    public static var attributeType: AttributeType { .string }
}

extension Int: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// Int.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension Int8: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// Int8.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension Int16: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// Int16.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension Int32: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// Int32.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension Int64: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// Int64.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension UInt8: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// UInt8.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension UInt16: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// UInt16.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension UInt32: ModelAttributeValue {
    /// `.int`.
    ///
    /// ```swift
    /// UInt32.attributeType   // .int
    /// ```
    public static var attributeType: AttributeType { .int }
}

extension Double: ModelAttributeValue {
    /// `.double`.
    ///
    /// ```swift
    /// Double.attributeType   // .double
    /// ```
    public static var attributeType: AttributeType { .double }
}

extension Float: ModelAttributeValue {
    /// `.double`.
    ///
    /// ```swift
    /// Float.attributeType   // .double
    /// ```
    public static var attributeType: AttributeType { .double }
}

extension Bool: ModelAttributeValue {
    /// `.bool`.
    ///
    /// ```swift
    /// Bool.attributeType   // .bool
    /// ```
    public static var attributeType: AttributeType { .bool }
}

extension Date: ModelAttributeValue {
    /// `.date`.
    ///
    /// ```swift
    /// Date.attributeType   // .date
    /// ```
    public static var attributeType: AttributeType { .date }
}

extension Data: ModelAttributeValue {
    /// `.bytes`.
    ///
    /// ```swift
    /// Data.attributeType   // .bytes
    /// ```
    public static var attributeType: AttributeType { .bytes }
}

extension Array: ModelAttributeValue where Element == UInt8 {
    /// `.bytes`.
    ///
    /// ```swift
    /// [UInt8].attributeType   // .bytes
    /// ```
    public static var attributeType: AttributeType { .bytes }
}
