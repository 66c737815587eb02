import Foundation
import Contexts

// How a store's tables sit in etcd's one flat, byte-ordered key space:
//
//   <prefix> "/" <table> 0x00 <key>        a record (value and version as etcd keeps them)
//   <prefix> "/" 0x01 "commits/" <UUID>     one open storage's commit marker (see +Commit)
//
// Table names never contain 0x00 or start with 0x01, so a table is exactly the key range
// [<prefix>/<table> 0x00, <prefix>/<table> 0x01), and etcd's byte order within it is the
// engine's key order. A record's etcd `version` (writes since it was last absent) is the
// record version; the cluster's revision is the commit version.
//
// Entity records keep TOMBSTONES, as on the engine, so a key's record version never repeats
// (no ABA): their stored value is 0x00 <value> while live, and a delete puts 0x01 (a write,
// so etcd's version goes on counting). Readers treat a tombstone as absent. Other tables
// (indexes, constraints, meta) store values as they are and delete for real.

/// The byte layout of one store's keys under its prefix.
struct EtcdKeyLayout: Sendable {
    let prefix: [UInt8]

    init(prefix: String) {
        self.prefix = Array((prefix + "/").utf8)
    }

    func tableStart(_ table: String) -> [UInt8] { prefix + Array(table.utf8) + [0] }

    func key(_ key: [UInt8], in table: String) -> Data { Data(tableStart(table) + key) }

    /// [lower, upper) of `table` in etcd keys.
    func range(of table: String, from lower: [UInt8]?, to upper: [UInt8]?) -> (start: Data, end: Data) {
        let start = tableStart(table)
        return (Data(start + (lower ?? [])), upper.map { Data(start + $0) } ?? Data(prefix + Array(table.utf8) + [1]))
    }

    static let liveFlag: UInt8 = 0
    static let tombstone = Data([1])

    /// Whether `table` keeps tombstones (entity tables: their versions are compared).
    func keepsTombstones(_ table: String) -> Bool { table.hasPrefix("entity:") }

    /// The stored form of `value` in `table`.
    func stored(_ value: [UInt8], in table: String) -> Data {
        keepsTombstones(table) ? Data([Self.liveFlag] + value) : Data(value)
    }

    /// The value in a stored form read from `table`, nil for a tombstone (or a damaged,
    /// flagless record, which reads as absent rather than as the wrong bytes).
    func value(_ stored: Data, in table: String) -> Data? {
        guard keepsTombstones(table) else { return stored }
        guard stored.first == Self.liveFlag else { return nil }
        return stored.dropFirst()
    }

    /// The entity table and record key of an etcd key under this prefix; nil for other keys.
    func entityRecord(_ key: Data) -> (table: String, key: [UInt8])? {
        let bytes = Array(key)
        guard bytes.count > prefix.count, Array(bytes[0..<prefix.count]) == prefix,
              let separator = bytes[prefix.count...].firstIndex(of: 0) else { return nil }
        let table = String(decoding: bytes[prefix.count..<separator], as: UTF8.self)
        guard keepsTombstones(table) else { return nil }
        return (table, Array(bytes[(separator + 1)...]))
    }

    /// The marker key of one open storage.
    func commitMarker(_ identifier: UUID) -> Data {
        Data(prefix + [1] + Array("commits/\(identifier.uuidString)".utf8))
    }
}
