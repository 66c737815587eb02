import Foundation
import Policies

// The schema a store records: one record, written in the commit that first opens the store
// with a schema and in every migration's commit, so the record always describes the records.
//
//   table "meta:schema"   key = "schema" (UTF-8)
//                         value = JSON, UTF-8, keys sorted:
//
//   {"entities": [
//      {"attributes": [
//         {"defaultValue": {"type": "int", "value": 0},   (absent when there is none)
//          "name": "age", "optional": false, "type": "int"}],
//       "indexes": [["age"]], "name": "Person", "uniquenessConstraints": []}],
//    "format": 1,
//    "versionHash": "9c0d6bd3b3a5e3f1"}
//
// Entities and attributes are kept in the schema's order. `type` is AttributeType's raw value;
// `defaultValue` is AttributeValue's Codable form (Policies, AttributeValue+Codable.swift).
// `versionHash` is 16 hex digits of FNV-1a (64-bit) over the canonical text of entities and
// attributes sorted by name (`versionText`): names, types, optionality, defaults, indexes,
// constraints; not renaming identifiers, which say where data came from, not what it is. Two
// schemas with the same hash describe the same records, so an open compares hashes first.
//
// The table name, the key, the JSON keys and `format` 1 are FROZEN: stores outlive this build.
// A test pins a record's bytes. Renaming identifiers are not recorded: they name the previous
// schema's names, which the record itself holds.
//
// The same JSON is the schema file of `cairn migrate` (`cairn schema` prints it): there an
// entity or attribute may carry "renamingIdentifier", and "versionHash" may be left out.

/// The schema recorded in a store, and its record's format.
package struct StoredSchema: Sendable, Equatable {
    /// The schema, as recorded.
    package let schema: Schema
    /// Its version hash, as recorded.
    package let versionHash: String

    /// The table of the record (`meta:schema`).
    package static let table = "meta:schema"
    /// The record's key.
    package static let key: [UInt8] = Array("schema".utf8)
    /// The record format written.
    static let format = 1

    private struct Record: Codable {
        var format: Int
        var versionHash: String?
        var entities: [Entity]
    }

    private struct Entity: Codable {
        var name: String
        var attributes: [Attribute]
        var indexes: [[String]]
        var uniquenessConstraints: [[String]]
        /// Absent in records of schemas without relationships (and of builds before them).
        var relationships: [Relationship]? = nil
        /// Never written; read from schema files.
        var renamingIdentifier: String? = nil
    }

    private struct Relationship: Codable {
        var name: String
        var destination: String
        var inverse: String
        var toMany: Bool
        var deleteRule: String
        var optional: Bool
        /// Written only for an ordered to-many.
        var ordered: Bool? = nil
    }

    private struct Attribute: Codable {
        var name: String
        var type: String
        var optional: Bool
        var defaultValue: AttributeValue?
        /// Never written; read from schema files.
        var renamingIdentifier: String? = nil
    }

    /// The record's bytes for `schema`; `prettyPrinted` for people (`cairn schema`), never in a store.
    package static func encode(_ schema: Schema, prettyPrinted: Bool = false) -> [UInt8] {
        let record = Record(format: format, versionHash: versionHash(of: schema), entities: schema.entities.map { entity in
            Entity(name: entity.name, attributes: entity.attributes.map { attribute in
                Attribute(name: attribute.name, type: attribute.type.rawValue, optional: attribute.isOptional,
                          defaultValue: attribute.defaultValue == .null ? nil : attribute.defaultValue)
            }, indexes: entity.indexes, uniquenessConstraints: entity.uniquenessConstraints,
            relationships: entity.relationships.isEmpty ? nil : entity.relationships.map { relationship in
                Relationship(name: relationship.name, destination: relationship.destination, inverse: relationship.inverse,
                             toMany: relationship.isToMany, deleteRule: relationship.deleteRule.rawValue,
                             optional: relationship.isOptional, ordered: relationship.isOrdered ? true : nil)
            })
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = prettyPrinted ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        // A NaN or infinite default must still be recordable.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        do {
            return Array(try encoder.encode(record))
        } catch {
            preconditionFailure("a schema's record does not encode: \(error)")
        }
    }

    /// The schema recorded in `bytes` (or written in a schema file, with renaming identifiers).
    ///
    /// - Throws: ``StorageError`` with code `.corrupt` when the record is not one `encode` wrote.
    package static func decode(_ bytes: [UInt8]) throws(StorageError) -> StoredSchema {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        let record: Record
        do {
            record = try decoder.decode(Record.self, from: Data(bytes))
        } catch {
            throw corrupt("does not decode: \(error)")
        }
        guard record.format == format else { throw corrupt("has format \(record.format); this build reads format \(format)") }
        var entities: [EntityDescription] = []
        for entity in record.entities {
            var attributes: [AttributeDescription] = []
            for attribute in entity.attributes {
                guard let type = AttributeType(rawValue: attribute.type) else {
                    throw corrupt("names an unknown type \"\(attribute.type)\"")
                }
                attributes.append(AttributeDescription(attribute.name, type, isOptional: attribute.optional,
                                                       defaultValue: attribute.defaultValue ?? .null,
                                                       renamingIdentifier: attribute.renamingIdentifier))
            }
            var relationships: [RelationshipDescription] = []
            for relationship in entity.relationships ?? [] {
                guard let rule = RelationshipDescription.DeleteRule(rawValue: relationship.deleteRule) else {
                    throw corrupt("names an unknown delete rule \"\(relationship.deleteRule)\"")
                }
                relationships.append(RelationshipDescription(
                    relationship.name, destination: relationship.destination, inverse: relationship.inverse,
                    isToMany: relationship.toMany, deleteRule: rule, isOrdered: relationship.ordered ?? false,
                    isOptional: relationship.optional))
            }
            entities.append(EntityDescription(entity.name, attributes: attributes, relationships: relationships, indexes: entity.indexes,
                                              uniquenessConstraints: entity.uniquenessConstraints,
                                              renamingIdentifier: entity.renamingIdentifier))
        }
        do {
            let schema = try Schema(entities)
            return StoredSchema(schema: schema, versionHash: record.versionHash ?? versionHash(of: schema))
        } catch {
            throw corrupt("is not a valid schema: \(error)")
        }
    }

    private static func corrupt(_ problem: String) -> StorageError {
        StorageError(code: .corrupt, operation: "read schema", message: "the store's schema record (\(table)) " + problem)
    }

    /// 16 hex digits: the FNV-1a hash of ``versionText(of:)``.
    package static func versionHash(of schema: Schema) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in versionText(of: schema).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The canonical text the hash covers, one line per entity and attribute, sorted by name.
    static func versionText(of schema: Schema) -> String {
        var text = ""
        for entity in schema.entities.sorted(by: { $0.name < $1.name }) {
            let indexes = entity.indexes.map { $0.joined(separator: ",") }.joined(separator: ";")
            let constraints = entity.uniquenessConstraints.map { $0.joined(separator: ",") }.joined(separator: ";")
            text += "entity \(entity.name) indexes [\(indexes)] unique [\(constraints)]\n"
            for attribute in entity.attributes.sorted(by: { $0.name < $1.name }) {
                text += "  \(attribute.name) \(attribute.type) \(attribute.isOptional ? "optional" : "required") "
                    + "default \(ValueCodec.encode(["v": attribute.defaultValue]))\n"
            }
            // Only schemas with relationships add lines: the hashes of the others stay as they were.
            for relationship in entity.relationships.sorted(by: { $0.name < $1.name }) {
                text += "  relationship \(relationship.name) \(relationship.isToMany ? "toMany" : "toOne") \(relationship.destination) "
                    + "inverse \(relationship.inverse) \(relationship.deleteRule.rawValue) \(relationship.isOptional ? "optional" : "required")"
                    + (relationship.isOrdered ? " ordered\n" : "\n")
            }
        }
        return text
    }
}
