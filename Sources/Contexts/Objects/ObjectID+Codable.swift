import Foundation

// An object ID encodes as its URI string: a to-one relationship of a Codable struct is an
// `ObjectID?` property (and a to-many an `[ObjectID]`), mapped by StoredObject+Codable.swift.

extension ObjectID: Codable {
    /// Reads an ID from its URI string.
    ///
    /// ```swift
    /// try JSONDecoder().decode(ObjectID.self, from: Data(#""cairn://Person/p1""#.utf8)).primaryKey   // 1
    /// ```
    ///
    /// - Throws: `DecodingError.dataCorrupted` for a string that is not an object ID URI.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = ObjectID(uriString: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\"\(text)\" is not an object ID URI"))
        }
        self = id
    }

    /// Writes the ID's URI string.
    ///
    /// ```swift
    /// String(decoding: try JSONEncoder().encode(ObjectID(entityName: "Person", primaryKey: 1)), as: UTF8.self)
    /// // "\"cairn:\\/\\/Person\\/p1\""
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriString)
    }
}
