import Foundation

// Coded form (the same for every encoder; JSON shown):
//
//   {"type": "string", "value": "Ann"}
//   {"type": "int",    "value": 30}
//   {"type": "double", "value": 9.5}
//   {"type": "bool",   "value": true}
//   {"type": "bytes",  "value": <Data>}   // JSONEncoder's default: base64 text
//   {"type": "date",   "value": <Date>}   // per the encoder's date strategy
//   {"type": "null"}
//
// The type tags and the two key names are FROZEN: coded values may outlive this build (saved
// scenarios, exported conflicts), so never rename them. A test pins the JSON.
// The tag is explicit because a bare JSON number cannot tell int from double, nor a string a
// date from text.
extension AttributeValue: Codable {
    private enum CodingKeys: String, CodingKey {
        case type
        case value
    }

    private enum Tag: String, Codable {
        case string, int, double, bool, bytes, date, null
    }

    /// Encodes the value as a `type` tag plus a `value` (absent for `null`).
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(AttributeValue.int(30))
    /// // {"type":"int","value":30}
    /// ```
    ///
    /// - Throws: whatever the encoder throws, for example `EncodingError.invalidValue` for a NaN
    ///   double under JSONEncoder's default strategy.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .string(let value):
            try container.encode(Tag.string, forKey: .type)
            try container.encode(value, forKey: .value)
        case .int(let value):
            try container.encode(Tag.int, forKey: .type)
            try container.encode(value, forKey: .value)
        case .double(let value):
            try container.encode(Tag.double, forKey: .type)
            try container.encode(value, forKey: .value)
        case .bool(let value):
            try container.encode(Tag.bool, forKey: .type)
            try container.encode(value, forKey: .value)
        case .bytes(let value):
            try container.encode(Tag.bytes, forKey: .type)
            // As Data, so that JSON gets compact base64 instead of an array of numbers.
            try container.encode(Data(value), forKey: .value)
        case .date(let value):
            try container.encode(Tag.date, forKey: .type)
            try container.encode(value, forKey: .value)
        case .null:
            try container.encode(Tag.null, forKey: .type)
        }
    }

    /// Decodes a value written by ``encode(to:)``.
    ///
    /// ```swift
    /// let age = try JSONDecoder().decode(AttributeValue.self, from: Data(#"{"type":"int","value":30}"#.utf8))
    /// // .int(30)
    /// ```
    ///
    /// - Throws: `DecodingError.dataCorrupted` for an unknown `type` tag, or the decoder's error
    ///   when `value` is missing or of the wrong type.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let tagText = try container.decode(String.self, forKey: .type)
        guard let tag = Tag(rawValue: tagText) else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container,
                debugDescription: "Unknown attribute value type \"\(tagText)\"; expected one of "
                    + "string, int, double, bool, bytes, date, null."
            )
        }
        switch tag {
        case .string: self = .string(try container.decode(String.self, forKey: .value))
        case .int: self = .int(try container.decode(Int64.self, forKey: .value))
        case .double: self = .double(try container.decode(Double.self, forKey: .value))
        case .bool: self = .bool(try container.decode(Bool.self, forKey: .value))
        case .bytes: self = .bytes([UInt8](try container.decode(Data.self, forKey: .value)))
        case .date: self = .date(try container.decode(Date.self, forKey: .value))
        case .null: self = .null
        }
    }
}
