import Policies

/// The type of an entity's attribute: which ``AttributeValue`` case it holds.
///
/// Validation on save is strict: an `int` attribute accepts only `.int`, a `double` attribute
/// only `.double`, and so on; `.null` is accepted only by optional attributes.
///
/// ```swift
/// AttributeType.int.accepts(.int(30))       // true
/// AttributeType.int.accepts(.double(30))    // false
/// ```
public enum AttributeType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A UTF-8 string (``AttributeValue/string(_:)``).
    ///
    /// ```swift
    /// AttributeDescription("name", .string)
    /// ```
    case string
    /// A signed 64-bit integer (``AttributeValue/int(_:)``).
    ///
    /// ```swift
    /// AttributeDescription("age", .int)
    /// ```
    case int
    /// A 64-bit floating-point number (``AttributeValue/double(_:)``).
    ///
    /// ```swift
    /// AttributeDescription("score", .double)
    /// ```
    case double
    /// A Boolean (``AttributeValue/bool(_:)``).
    ///
    /// ```swift
    /// AttributeDescription("active", .bool, defaultValue: .bool(true))
    /// ```
    case bool
    /// Raw bytes (``AttributeValue/bytes(_:)``).
    ///
    /// ```swift
    /// AttributeDescription("avatar", .bytes, isOptional: true)
    /// ```
    case bytes
    /// A point in time (``AttributeValue/date(_:)``).
    ///
    /// ```swift
    /// AttributeDescription("born", .date)
    /// ```
    case date

    /// Whether a non-null `value` has this type; `.null` is never of any type.
    ///
    /// ```swift
    /// AttributeType.string.accepts(.string("Ann"))   // true
    /// AttributeType.string.accepts(.null)            // false: optionality is checked separately
    /// ```
    public func accepts(_ value: AttributeValue) -> Bool {
        switch (self, value) {
        case (.string, .string), (.int, .int), (.double, .double), (.bool, .bool), (.bytes, .bytes), (.date, .date):
            return true
        default:
            return false
        }
    }

    /// The type of a non-null value, or nil for `.null`.
    ///
    /// ```swift
    /// AttributeType(of: .int(3))   // .int
    /// AttributeType(of: .null)     // nil
    /// ```
    public init?(of value: AttributeValue) {
        switch value {
        case .string: self = .string
        case .int: self = .int
        case .double: self = .double
        case .bool: self = .bool
        case .bytes: self = .bytes
        case .date: self = .date
        case .null: return nil
        }
    }

    /// The type's name, as used in schemas and error messages: `"string"`, `"int"`, ….
    ///
    /// ```swift
    /// print(AttributeType.date)   // date
    /// ```
    public var description: String { rawValue }
}
