import Foundation

/// One property's value as the store keeps it: a tagged scalar, or `null` for a missing value.
///
/// Policies compare values only for equality, so every case is a plain value with no schema
/// attached; the attribute's type lives in the entity description, not here.
///
/// ```swift
/// let ann: PropertyValues = ["name": .string("Ann"), "age": .int(30), "city": .null]
/// print(ann["age"]!)   // 30
/// ```
public enum AttributeValue: Sendable {
    /// A UTF-8 string.
    ///
    /// ```swift
    /// let name = AttributeValue.string("Ann")
    /// ```
    case string(String)

    /// A signed 64-bit integer.
    ///
    /// ```swift
    /// let age = AttributeValue.int(30)
    /// ```
    case int(Int64)

    /// A 64-bit IEEE 754 floating-point number.
    ///
    /// ```swift
    /// let score = AttributeValue.double(9.5)
    /// ```
    case double(Double)

    /// A Boolean.
    ///
    /// ```swift
    /// let active = AttributeValue.bool(true)
    /// ```
    case bool(Bool)

    /// Raw bytes (a blob).
    ///
    /// ```swift
    /// let avatar = AttributeValue.bytes([0x89, 0x50, 0x4E, 0x47])
    /// ```
    case bytes([UInt8])

    /// A point in time.
    ///
    /// ```swift
    /// let modified = AttributeValue.date(Date(timeIntervalSince1970: 1_700_000_000))
    /// ```
    case date(Date)

    /// The missing value; a property absent from a ``PropertyValues`` dictionary reads as this.
    ///
    /// ```swift
    /// let values: PropertyValues = ["name": .string("Ann")]
    /// values.value(of: "city") == .null   // true
    /// ```
    case null
}

// Equality is hand-written for one reason: a stored NaN (a double, or a date's time interval)
// must equal itself, or every object holding a NaN would look "changed locally" forever and
// conflict on every save. Apart from
// that, doubles compare as IEEE numbers (so 0.0 == -0.0), like NSNumber in Core Data.
extension AttributeValue: Hashable {
    /// Whether two values are the same stored value; NaN equals NaN (doubles and dates),
    /// unlike plain `Double` and `Date`.
    ///
    /// ```swift
    /// AttributeValue.double(.nan) == .double(.nan)   // true
    /// AttributeValue.int(1) == .double(1)            // false: different types
    /// ```
    public static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool {
        switch (lhs, rhs) {
        case let (.string(left), .string(right)): left == right
        case let (.int(left), .int(right)): left == right
        case let (.double(left), .double(right)): left == right || (left.isNaN && right.isNaN)
        case let (.bool(left), .bool(right)): left == right
        case let (.bytes(left), .bytes(right)): left == right
        case let (.date(left), .date(right)):
            left == right
                || (left.timeIntervalSinceReferenceDate.isNaN && right.timeIntervalSinceReferenceDate.isNaN)
        case (.null, .null): true
        default: false
        }
    }

    /// Feeds the value into `hasher`, consistently with ``==(_:_:)``.
    ///
    /// ```swift
    /// let seen: Set<AttributeValue> = [.double(.nan), .double(.nan)]   // one element
    /// ```
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let value):
            hasher.combine(0 as UInt8)
            hasher.combine(value)
        case .int(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .double(let value):
            hasher.combine(2 as UInt8)
            // Every NaN payload must hash alike because they all compare equal.
            if value.isNaN {
                hasher.combine(Double.nan.bitPattern)
            } else {
                hasher.combine(value)
            }
        case .bool(let value):
            hasher.combine(3 as UInt8)
            hasher.combine(value)
        case .bytes(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        case .date(let value):
            hasher.combine(5 as UInt8)
            if value.timeIntervalSinceReferenceDate.isNaN {
                hasher.combine(Double.nan.bitPattern)
            } else {
                hasher.combine(value)
            }
        case .null:
            hasher.combine(6 as UInt8)
        }
    }
}

extension AttributeValue: CustomStringConvertible {
    /// A short, unambiguous rendering for error messages: strings quoted, bytes in hex, dates in
    /// ISO 8601 (UTC, milliseconds).
    ///
    /// ```swift
    /// AttributeValue.string("Ann").description           // "\"Ann\""
    /// AttributeValue.bytes([0x0A, 0xFF]).description     // "<0aff>"
    /// AttributeValue.date(Date(timeIntervalSince1970: 0)).description
    ///                                                    // "1970-01-01T00:00:00.000Z"
    /// ```
    public var description: String {
        switch self {
        case .string(let value):
            // Quoted and escaped so that "null" the string never reads like null the value.
            String(reflecting: value)
        case .int(let value):
            String(value)
        case .double(let value):
            String(value)
        case .bool(let value):
            String(value)
        case .bytes(let value):
            "<" + value.map { byte in
                let digits = String(byte, radix: 16)
                return byte < 0x10 ? "0" + digits : digits
            }.joined() + ">"
        case .date(let value):
            value.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        case .null:
            "null"
        }
    }
}
