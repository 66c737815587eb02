import Contexts
import Foundation
import Locking

/// A read view of an etcd store at one revision: every read names that revision, so the
/// view is consistent for as long as the cluster keeps the revision (until a compaction
/// passes it, which makes the next read fail with `.readViewExpired`).
///
/// `Sendable`: immutable but for the closed flag, behind its lock.
final class EtcdReadView: StorageReadView {
    let storage: EtcdStorage
    let revision: Int64
    private let isClosed = ConditionLock<Bool>(false)

    /// Keys per range page of a scan: large enough to amortise the round trip, small enough
    /// to stay well under the gateway's reply limit with values of a few KiB.
    static let pageSize: Int64 = 512

    init(storage: EtcdStorage, revision: Int64) {
        self.storage = storage
        self.revision = revision
    }

    var version: UInt64 { UInt64(revision) }

    func close() {
        isClosed.withLock { $0 = true }
    }

    func visitValues(
        forKeys keys: [StorageKey], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws {
        try checkOpen()
        // Point reads go in read-only txns of ranges at the view's revision: one round trip
        // per `maxTxnOps` keys.
        let chunk = max(1, storage.configuration.maxTxnOps)
        var start = 0
        while start < keys.count {
            let end = min(keys.count, start + chunk)
            var txn = WireTxnRequest()
            txn.success = keys[start..<end].map {
                WireRequestOp(request_range: WireRangeRequest(key: storage.layout.key($0.key, in: $0.table), revision: WireInt(revision)))
            }
            let reply = try call("kv/txn", txn, as: WireTxnResponse.self, operation: "read")
            let responses = reply.responses ?? []
            for index in start..<end {
                let found = responses.indices.contains(index - start) ? responses[index - start].response_range?.kvs?.first : nil
                if let found, let value = try storage.layout.value(found.value ?? Data(), in: keys[index].table, key: found.key ?? Data()) {
                    try value.withUnsafeBytes { try body(index, $0, UInt64(found.version?.value ?? 0)) }
                } else {
                    try body(index, nil, 0)
                }
            }
            start = end
        }
    }

    func forEach(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, reverse: Bool,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt64) throws -> Bool
    ) throws {
        try checkOpen()
        var (start, end) = storage.layout.range(of: table, from: lower, to: upper)
        let strip = storage.layout.tableStart(table).count
        while start.lexicographicallyPrecedes(end) {
            var request = WireRangeRequest(key: start, range_end: end, limit: WireInt(Self.pageSize), revision: WireInt(revision))
            if reverse {
                request.sort_order = "DESCEND"
                request.sort_target = "KEY"
            }
            let reply = try call("kv/range", request, as: WireRangeResponse.self, operation: "scan")
            let records = reply.kvs ?? []
            for record in records {
                let key = record.key ?? Data()
                guard let value = try storage.layout.value(record.value ?? Data(), in: table, key: key) else { continue }
                let goOn = try key.dropFirst(strip).withUnsafeBytes { keyBytes in
                    try value.withUnsafeBytes { try body(keyBytes, $0, UInt64(record.version?.value ?? 0)) }
                }
                if !goOn { return }
            }
            guard reply.more == true, let last = records.last?.key else { return }
            if reverse { end = last } else { start = last + [0] }
        }
    }

    func countKeys(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, where include: ((UnsafeRawBufferPointer) -> Bool)?
    ) throws -> Int {
        // A tombstone is only told apart by its value, so entity tables are counted by a scan.
        guard let include else {
            if storage.layout.keepsTombstones(table) {
                return try countKeys(in: table, from: lower, to: upper, where: { _ in true })
            }
            try checkOpen()
            let (start, end) = storage.layout.range(of: table, from: lower, to: upper)
            let reply = try call("kv/range", WireRangeRequest(key: start, range_end: end, revision: WireInt(revision), count_only: true),
                                 as: WireRangeResponse.self, operation: "count")
            return Int(reply.count?.value ?? 0)
        }
        var total = 0
        try forEach(in: table, from: lower, to: upper, reverse: false) { key, _, _ in
            if include(key) { total += 1 }
            return true
        }
        return total
    }

    /// Counts tombstones too: exact for tables without them, close for entity tables.
    func estimatedCount(in table: String) throws(StorageError) -> Int {
        try checkOpen()
        let (start, end) = storage.layout.range(of: table, from: nil, to: nil)
        let reply = try call("kv/range", WireRangeRequest(key: start, range_end: end, revision: WireInt(revision), count_only: true),
                             as: WireRangeResponse.self, operation: "count")
        return Int(reply.count?.value ?? 0)
    }

    private func checkOpen() throws(StorageError) {
        if isClosed.value {
            throw StorageError(code: .readViewClosed, operation: "read", message: "the read view at etcd revision \(revision) is closed")
        }
    }

    private func call<Request: Encodable, Reply: Decodable>(
        _ path: String, _ request: Request, as reply: Reply.Type, operation: String
    ) throws(StorageError) -> Reply {
        do {
            return try storage.client.call(path, request, as: reply, isWrite: false)
        } catch {
            throw StorageError(error, operation: operation, location: storage.location, revision: revision)
        }
    }
}
