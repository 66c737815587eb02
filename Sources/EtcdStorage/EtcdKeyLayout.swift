import Foundation
import Contexts

// How a store's tables sit in etcd's one flat, byte-ordered key space:
//
//   <prefix> "/" <table> 0x00 <key>        a record (value and version as etcd keeps them)
//   <prefix> "/" 0x01 "commits/" <UUID>     one open storage's commit marker, only for a save
//                                           with no conditioned entity record (see +Commit)
//
// Table names never contain 0x00 or start with 0x01, so a table is exactly the key range
// [<prefix>/<table> 0x00, <prefix>/<table> 0x01), and etcd's byte order within it is the
// engine's key order. A record's etcd `version` (writes since it was last absent) is the
// record version; the cluster's revision is the commit version.
//
// Entity records (and the marker) carry the STAMP of the txn attempt that wrote them
// (EtcdWriteStamp.swift), and entity records keep TOMBSTONES, as on the engine, so a key's
// record version never repeats (no ABA, and an unanswered txn's compare, once failed, fails
// for good):
//
//   live        0x02 <stamp: 24 bytes> <value>
//   tombstone   0x03 <stamp: 24 bytes>          (a delete is this put: etcd's version goes on)
//
// Readers treat a tombstone as absent. Other tables (indexes, constraints, meta) store values
// as they are and delete for real. These bytes are frozen; EtcdValueLayoutTests pins them.

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

    static let liveFlag: UInt8 = 2
    static let tombstoneFlag: UInt8 = 3
    /// The flag and the stamp in front of a stamped value.
    static let headerCount = 1 + EtcdWriteStamp.byteCount

    /// Whether `table` keeps tombstones and stamps (entity tables: their versions are compared).
    func keepsTombstones(_ table: String) -> Bool { table.hasPrefix("entity:") }

    /// The stored form of `value` in `table`, written by the attempt `stamp`.
    func stored(_ value: [UInt8], in table: String, stamp: EtcdWriteStamp) -> Data {
        keepsTombstones(table) ? Self.stamped(value, flag: Self.liveFlag, stamp: stamp) : Data(value)
    }

    /// An entity record's tombstone, written by the attempt `stamp`.
    static func tombstone(_ stamp: EtcdWriteStamp) -> Data { stamped([], flag: tombstoneFlag, stamp: stamp) }

    /// The marker's value: an empty live value, stamped.
    static func markerValue(_ stamp: EtcdWriteStamp) -> Data { stamped([], flag: liveFlag, stamp: stamp) }

    private static func stamped(_ value: [UInt8], flag: UInt8, stamp: EtcdWriteStamp) -> Data {
        // Filled through one buffer: appending to a Data piece by piece cost five times more.
        var stored = Data(count: headerCount + value.count)
        stored.withUnsafeMutableBytes { buffer in
            buffer[0] = flag
            UnsafeMutableRawBufferPointer(rebasing: buffer[1..<headerCount]).copyBytes(from: stamp.bytes)
            UnsafeMutableRawBufferPointer(rebasing: buffer[headerCount...]).copyBytes(from: value)
        }
        return stored
    }

    static func isTombstone(_ stored: Data?) -> Bool { stored?.first == tombstoneFlag }

    /// The stamp in front of a stored entity record or marker; nil for anything else.
    static func stamp(of stored: Data?) -> EtcdWriteStamp? {
        guard let stored, stored.count >= headerCount, stored.first == liveFlag || stored.first == tombstoneFlag else { return nil }
        return EtcdWriteStamp(stored.dropFirst().prefix(EtcdWriteStamp.byteCount))
    }

    /// The same record (live with its value, or a tombstone when absent) under another stamp:
    /// what a fence writes, so that it moves the version without changing what readers see.
    static func restamped(_ stored: Data?, with stamp: EtcdWriteStamp) -> Data {
        guard let stored, stored.first == liveFlag, stored.count >= headerCount else { return tombstone(stamp) }
        return Self.stamped(Array(stored.dropFirst(headerCount)), flag: liveFlag, stamp: stamp)
    }

    /// The value in a stored form read from `table`, nil for a tombstone. A record in no form
    /// this layout writes (damaged, or written by an older layout) is `.corrupt`, never absent:
    /// reading it as absent would hide an object that is there.
    func value(_ stored: Data, in table: String, key: Data) throws(StorageError) -> Data? {
        guard keepsTombstones(table) else { return stored }
        if stored.count >= Self.headerCount {
            if stored.first == Self.liveFlag { return stored.dropFirst(Self.headerCount) }
            if stored.first == Self.tombstoneFlag && stored.count == Self.headerCount { return nil }
        }
        throw StorageError(
            code: .corrupt, operation: "read",
            message: "the etcd record \(String(decoding: key, as: UTF8.self).debugDescription) in \(table) is in no form Cairn writes (first byte \(stored.first.map { String($0) } ?? "none"), \(stored.count) bytes): damaged, or written by an older layout")
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
