import Contexts
import Foundation
import Policies

/// Attribute values to and from their JSON form: `int` as a number, `bytes` as base64, `date`
/// as ISO 8601, `null` for the missing value.
public enum ScenarioValues {
    /// The value of an attribute of `type` written as `json`; `path` names it in the error.
    public static func attributeValue(_ json: JSONValue, type: AttributeType, at path: String) throws(ScenarioFileError) -> AttributeValue {
        switch (type, json) {
        case (_, .null):
            return .null
        case (.string, .string(let text)):
            return .string(text)
        case (.int, .integer(let number)):
            return .int(number)
        case (.double, .integer(let number)):
            return .double(Double(number))
        case (.double, .double(let number)):
            return .double(number)
        case (.bool, .bool(let flag)):
            return .bool(flag)
        case (.bytes, .string(let text)):
            guard let data = Data(base64Encoded: text) else {
                throw ScenarioFileError("\(path): a bytes value is base64 text; \(String(reflecting: text)) is not")
            }
            return .bytes(Array(data))
        case (.date, .string(let text)):
            guard let date = try? Date.ISO8601FormatStyle().parse(text) else {
                throw ScenarioFileError("\(path): a date value is ISO 8601 text such as \"2024-05-01T10:00:00Z\"; "
                    + "\(String(reflecting: text)) is not")
            }
            return .date(date)
        default:
            let wanted: String
            switch type {
            case .string: wanted = "a string"
            case .int: wanted = "a whole number"
            case .double: wanted = "a number"
            case .bool: wanted = "true or false"
            case .bytes: wanted = "base64 text"
            case .date: wanted = "ISO 8601 text"
            }
            let article = type == .int ? "an" : "a"
            throw ScenarioFileError("\(path): \(article) \(type) value must be \(wanted) (or null), not \(json.kindDescription)")
        }
    }

    /// The JSON form of a value: numbers, Booleans and strings as themselves, bytes as base64,
    /// dates as ISO 8601 (with milliseconds only when there are any).
    public static func json(_ value: AttributeValue) -> JSONValue {
        switch value {
        case .null: .null
        case .string(let text): .string(text)
        case .int(let number): .integer(number)
        case .double(let number): .double(number)
        case .bool(let flag): .bool(flag)
        case .bytes(let bytes): .string(Data(bytes).base64EncodedString())
        case .date(let date): .string(isoText(date))
        }
    }

    /// Every attribute of `entity`, in schema order, with `null` for a missing one.
    public static func json(_ values: PropertyValues, of entity: EntityDescription) -> JSONValue {
        .object(entity.attributes.map { (key: $0.name, value: json(values.value(of: $0.name))) }
            + entity.relationships.map { relationship in
                let value = values.value(of: relationship.name)
                return (key: relationship.name, value: relationship.isToMany ? .array(refs(in: value).map(JSONValue.string)) : json(value))
            })
    }

    // MARK: - Relationship values
    //
    // In a scenario's values (file, runner and report alike) a relationship's value names refs:
    // a to-one is its ref as a string (null when empty); a to-many is its refs sorted (in
    // order, for an ordered one) and joined by newlines (null when empty), so that equal sets
    // compare equal. Refs are JSON
    // keys and may not hold a newline (`relationshipValue` refuses one).

    /// A relationship's value from the file: a ref or null for a to-one, a list of refs for a to-many.
    ///
    /// Throws `ScenarioFileError` naming `path` for any other JSON.
    public static func relationshipValue(
        _ json: JSONValue, of relationship: RelationshipDescription, at path: String
    ) throws(ScenarioFileError) -> AttributeValue {
        if !relationship.isToMany {
            switch json {
            case .null: return .null
            case .string(let ref) where !ref.contains("\n"): return .string(ref)
            default: throw ScenarioFileError("\(path): a to-one's value is a ref (a string) or null, not \(json.kindDescription)")
            }
        }
        guard case .array(let items) = json else {
            throw ScenarioFileError("\(path): a to-many's value is a list of refs, such as [\"p1\", \"p2\"], not \(json.kindDescription)")
        }
        var refs: [String] = []
        for (position, item) in items.enumerated() {
            guard case .string(let ref) = item, !ref.contains("\n") else {
                throw ScenarioFileError("\(path)[\(position)]: a ref is a string, not \(item.kindDescription)")
            }
            guard !refs.contains(ref) else { throw ScenarioFileError("\(path): lists \"\(ref)\" twice") }
            refs.append(ref)
        }
        return members(refs, ordered: relationship.isOrdered)
    }

    /// The value of a to-many holding `refs`: sorted, or as given for an `ordered` one.
    public static func members(_ refs: [String], ordered: Bool = false) -> AttributeValue {
        refs.isEmpty ? .null : .string((ordered ? refs : refs.sorted()).joined(separator: "\n"))
    }

    /// The refs a relationship's value names, sorted (none for null).
    public static func refs(in value: AttributeValue) -> [String] {
        guard case .string(let text) = value else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// The properties a scenario prints and compares for `entity`: its attributes, then its relationships.
    public static func propertyNames(of entity: EntityDescription) -> [String] {
        entity.attributes.map(\.name) + entity.relationships.map(\.name)
    }

    /// A property's value as text: a to-many as `[p1, p2]`.
    public static func text(_ value: AttributeValue, property: String, of entity: EntityDescription) -> String {
        if entity.relationship(named: property)?.isToMany == true { return "[" + refs(in: value).joined(separator: ", ") + "]" }
        return text(value)
    }

    /// A value for a table cell: strings quoted, dates in ISO 8601.
    public static func text(_ value: AttributeValue) -> String {
        switch value {
        case .date(let date): isoText(date)
        default: value.description
        }
    }

    /// `{name: "Ann", age: 31, city: null}`: every attribute in schema order.
    public static func text(_ values: PropertyValues, of entity: EntityDescription) -> String {
        "{" + propertyNames(of: entity).map { "\($0): \(text(values.value(of: $0), property: $0, of: entity))" }
            .joined(separator: ", ") + "}"
    }

    /// `2024-05-01T10:00:00Z`, rounded to the nearest millisecond, with milliseconds only when
    /// there are any: `2024-05-01T10:00:00.250Z`.
    ///
    /// The formatter's own fractional seconds truncate, and a date read from `…:59.999Z` is often
    /// stored a hair below .999, so it printed `.998Z` (and reading that back lost another
    /// millisecond; found with the round-trip property of the fuzz target fuzz-scenario-file). The
    /// milliseconds are therefore rounded and written here, after the whole seconds, so what is
    /// printed reads back as a date that prints the same.
    public static func isoText(_ date: Date) -> String {
        let time = date.timeIntervalSinceReferenceDate
        var seconds = time.rounded(.down)
        var milliseconds = Int(((time - seconds) * 1000).rounded())
        if milliseconds == 1000 {
            seconds += 1
            milliseconds = 0
        }
        let text = Date(timeIntervalSinceReferenceDate: seconds).formatted(Date.ISO8601FormatStyle())  // in UTC: …Z
        guard milliseconds > 0 else { return text }
        let digits = String(milliseconds)
        return text.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
