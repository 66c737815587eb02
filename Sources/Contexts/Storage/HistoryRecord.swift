import Foundation

// One tracked save in the persistent history, put in the save's own commit:
//
//   table "meta:history"   key = the commit version, 8 bytes big-endian (so the history is in
//                          commit order, `fetchHistory(after:)` is a range read and
//                          `deleteHistory(before:)` a range delete)
//                          value = JSON, UTF-8, keys sorted:
//
//   {"author":"sync",                    (absent when the context has none)
//    "context":"import",
//    "deleted":["cairn://Person/p3"],
//    "format":1,
//    "inserted":["cairn://Person/p7"],
//    "origin":"2F0C6A52-…",              the saving ObjectStore, a UUID per open
//    "pid":4242,
//    "time":786245551.25,                seconds since 2001-01-01 UTC (Foundation's reference date)
//    "updated":[{"id":"cairn://Person/p1","properties":["age","name"]}]}
//
// IDs are object URIs (ObjectID.uriString), always permanent; properties are sorted names.
// The table name, the key, the JSON keys and `format` 1 are FROZEN: stores outlive this build.
// A test pins a record's bytes.

/// The bytes of a history record, and reading them back as a ``HistoryTransaction``.
package enum HistoryRecord {
    static let format = 1
    /// The table the records are in (`meta:history`).
    package static let table = StorageMapping.historyTable

    /// The key of the record of the commit with `version`.
    package static func key(for version: UInt64) -> [UInt8] { StorageMapping.key(for: version) }

    private struct Record: Codable {
        var format: Int
        var time: Double
        var context: String
        var author: String?
        var pid: Int32
        var origin: String
        var inserted: [String]
        var updated: [Updated]
        var deleted: [String]
    }

    private struct Updated: Codable {
        var id: String
        var properties: [String]
    }

    /// The record of a save that wrote `changes`.
    package static func encode(
        time: Date, contextName: String, author: String?, processID: Int32, origin: String, changes: [HistoryChange]
    ) -> [UInt8] {
        var record = Record(format: format, time: time.timeIntervalSinceReferenceDate, context: contextName,
                            author: author, pid: processID, origin: origin, inserted: [], updated: [], deleted: [])
        for change in changes {
            switch change.kind {
            case .insert: record.inserted.append(change.objectID.uriString)
            case .update: record.updated.append(Updated(id: change.objectID.uriString, properties: change.updatedProperties))
            case .delete: record.deleted.append(change.objectID.uriString)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(record))
        } catch {
            preconditionFailure("a history record does not encode: \(error)")
        }
    }

    /// The transaction recorded under `key` with `bytes`.
    ///
    /// - Throws: ``StorageError`` with code `.corrupt` when the record is not one `encode` wrote.
    package static func decode(key: UnsafeRawBufferPointer, bytes: UnsafeRawBufferPointer) throws(StorageError) -> HistoryTransaction {
        guard let version = StorageMapping.primaryKey(of: key) else { throw corrupt("has a key of \(key.count) bytes, not 8") }
        let record: Record
        do {
            record = try JSONDecoder().decode(Record.self, from: Data(bytes))
        } catch {
            throw corrupt("\(version) does not decode: \(error)")
        }
        guard record.format == format else {
            throw corrupt("\(version) has format \(record.format); this build reads format \(format)")
        }
        func id(_ uri: String) throws(StorageError) -> ObjectID {
            guard let id = ObjectID(uriString: uri), !id.isTemporaryID else {
                throw corrupt("\(version) names \"\(uri)\", not a permanent object ID")
            }
            return id
        }
        var changes: [HistoryChange] = []
        changes.reserveCapacity(record.inserted.count + record.updated.count + record.deleted.count)
        for uri in record.inserted { changes.append(HistoryChange(objectID: try id(uri), kind: .insert)) }
        for updated in record.updated {
            changes.append(HistoryChange(objectID: try id(updated.id), kind: .update, updatedProperties: updated.properties))
        }
        for uri in record.deleted { changes.append(HistoryChange(objectID: try id(uri), kind: .delete)) }
        return HistoryTransaction(
            token: HistoryToken(version: version), timestamp: Date(timeIntervalSinceReferenceDate: record.time),
            contextName: record.context, author: record.author, processID: record.pid, changes: changes,
            origin: record.origin)
    }

    private static func corrupt(_ problem: String) -> StorageError {
        StorageError(code: .corrupt, operation: "read history", message: "history record " + problem)
    }
}
