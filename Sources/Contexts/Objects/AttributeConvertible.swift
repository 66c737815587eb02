import Foundation
import Policies

/// A Swift type that maps to one ``AttributeValue`` case, for typed property access.
///
/// ```swift
/// person["age", as: Int.self] = 30
/// let name: String? = person["name", as: String.self]
/// ```
public protocol AttributeConvertible {
    /// The Swift value of `attributeValue`; nil when it is `.null` or of another case.
    ///
    /// ```swift
    /// Int(attributeValue: .int(3))      // 3
    /// Int(attributeValue: .string("3")) // nil
    /// ```
    init?(attributeValue: AttributeValue)

    /// The attribute value of this Swift value.
    ///
    /// ```swift
    /// 3.attributeValue   // .int(3)
    /// ```
    var attributeValue: AttributeValue { get }
}

extension String: AttributeConvertible {
    /// The text of a `.string`.
    ///
    /// ```swift
    /// String(attributeValue: .string("Ann"))   // "Ann"
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .string(let value) = attributeValue else { return nil }
        self = value
    }

    /// `.string(self)`.
    ///
    /// ```swift
    /// "Ann".attributeValue   // .string("Ann")
    /// ```
    public var attributeValue: AttributeValue { .string(self) }
}

extension Int: AttributeConvertible {
    /// The number of an `.int` (always fits: `Int` is 64-bit on Cairn's platforms).
    ///
    /// ```swift
    /// Int(attributeValue: .int(30))   // 30
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .int(let value) = attributeValue, let exact = Int(exactly: value) else { return nil }
        self = exact
    }

    /// `.int(self)`.
    ///
    /// ```swift
    /// 30.attributeValue   // .int(30)
    /// ```
    public var attributeValue: AttributeValue { .int(Int64(self)) }
}

extension Int64: AttributeConvertible {
    /// The number of an `.int`.
    ///
    /// ```swift
    /// Int64(attributeValue: .int(30))   // 30
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .int(let value) = attributeValue else { return nil }
        self = value
    }

    /// `.int(self)`.
    ///
    /// ```swift
    /// Int64(30).attributeValue   // .int(30)
    /// ```
    public var attributeValue: AttributeValue { .int(self) }
}

extension Double: AttributeConvertible {
    /// The number of a `.double`.
    ///
    /// ```swift
    /// Double(attributeValue: .double(9.5))   // 9.5
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .double(let value) = attributeValue else { return nil }
        self = value
    }

    /// `.double(self)`.
    ///
    /// ```swift
    /// 9.5.attributeValue   // .double(9.5)
    /// ```
    public var attributeValue: AttributeValue { .double(self) }
}

extension Bool: AttributeConvertible {
    /// The flag of a `.bool`.
    ///
    /// ```swift
    /// Bool(attributeValue: .bool(true))   // true
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .bool(let value) = attributeValue else { return nil }
        self = value
    }

    /// `.bool(self)`.
    ///
    /// ```swift
    /// true.attributeValue   // .bool(true)
    /// ```
    public var attributeValue: AttributeValue { .bool(self) }
}

extension Date: AttributeConvertible {
    /// The date of a `.date`.
    ///
    /// ```swift
    /// Date(attributeValue: .date(.distantPast))   // .distantPast
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .date(let value) = attributeValue else { return nil }
        self = value
    }

    /// `.date(self)`.
    ///
    /// ```swift
    /// Date.distantPast.attributeValue   // .date(.distantPast)
    /// ```
    public var attributeValue: AttributeValue { .date(self) }
}

extension Data: AttributeConvertible {
    /// The bytes of a `.bytes`.
    ///
    /// ```swift
    /// Data(attributeValue: .bytes([1, 2]))   // 2 bytes
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .bytes(let value) = attributeValue else { return nil }
        self = Data(value)
    }

    /// `.bytes([UInt8](self))`.
    ///
    /// ```swift
    /// Data([1, 2]).attributeValue   // .bytes([1, 2])
    /// ```
    public var attributeValue: AttributeValue { .bytes([UInt8](self)) }
}

extension Array: AttributeConvertible where Element == UInt8 {
    /// The bytes of a `.bytes`.
    ///
    /// ```swift
    /// [UInt8](attributeValue: .bytes([1, 2]))   // [1, 2]
    /// ```
    public init?(attributeValue: AttributeValue) {
        guard case .bytes(let value) = attributeValue else { return nil }
        self = value
    }

    /// `.bytes(self)`.
    ///
    /// ```swift
    /// [UInt8]([1, 2]).attributeValue   // .bytes([1, 2])
    /// ```
    public var attributeValue: AttributeValue { .bytes(self) }
}
