import Contexts
import Foundation

// Primary keys come from the same sequence record per entity as on the local engine
// (StorageMapping), advanced by a compare-and-swap txn:
//
//   read     meta:sequences/<Entity> and the entity table's largest key, at one revision
//   txn      compare VERSION(sequence) == v  ->  put sequence = max(next, largest + 1) + count
//
// Two allocators (processes, hosts) can never hand out the same key: only one of two txns
// from the same version commits. A key someone inserted with a chosen primary key above the
// sequence is skipped by the largest-key read; one inserted between the read and the txn is
// caught by the insert's own "absent" condition, never overwritten. An allocation whose reply
// is lost is simply tried again: if it applied, its keys become a gap (keys are never reused).

extension EtcdStorage {
    static let maxAllocationAttempts = 64

    func allocatePrimaryKeys(count: Int, for entityName: String) throws(StorageError) -> [UInt64] {
        precondition(count > 0, "allocatePrimaryKeys needs a positive count")
        try checkOpen()
        return try allocationLock.withLock { (_) throws(StorageError) -> [UInt64] in
            let table = StorageMapping.table(for: entityName)
            let sequenceKey = layout.key(Array(entityName.utf8), in: StorageMapping.sequenceTable)
            let (start, end) = layout.range(of: table, from: nil, to: nil)
            let strip = layout.tableStart(table).count
            for _ in 0..<Self.maxAllocationAttempts {
                var read = WireTxnRequest()
                read.success = [
                    WireRequestOp(request_range: WireRangeRequest(key: sequenceKey)),
                    WireRequestOp(request_range: WireRangeRequest(key: start, range_end: end, limit: WireInt(1),
                                                                  sort_order: "DESCEND", sort_target: "KEY", keys_only: true)),
                ]
                let state = try call("kv/txn", read, as: WireTxnResponse.self, operation: "allocate keys")
                let sequence = state.responses?.first?.response_range?.kvs?.first
                let largest = state.responses?.dropFirst().first?.response_range?.kvs?.first?.key
                var next: UInt64 = 1
                if let sequence {
                    guard let stored = StorageMapping.primaryKey(of: Array(sequence.value ?? Data())) else {
                        throw StorageError(code: .corrupt, operation: "allocate keys",
                                           message: "\(location): the key sequence of \(entityName) is not 8 bytes")
                    }
                    next = max(next, stored)
                }
                if let largest, let key = StorageMapping.primaryKey(of: Array(largest.dropFirst(strip))), key < UInt64.max {
                    next = max(next, key + 1)
                }
                let (after, overflow) = next.addingReportingOverflow(UInt64(count))
                guard !overflow else {
                    throw StorageError(code: .tooLarge(bytes: count, limit: Int(clamping: UInt64.max - next)), operation: "allocate keys",
                                       message: "\(location): \(count) more keys of \(entityName) overflow the key space")
                }
                var txn = WireTxnRequest()
                txn.compare = [.version(of: sequenceKey, equals: sequence?.version?.value ?? 0)]
                txn.success = [WireRequestOp(request_put: WirePutRequest(key: sequenceKey, value: Data(StorageMapping.key(for: after))))]
                do throws(EtcdClientError) {
                    let reply = try client.call("kv/txn", txn, as: WireTxnResponse.self, isWrite: true)
                    if reply.succeeded == true { return Array(next..<after) }
                } catch .outcomeUnknown {
                    continue
                } catch {
                    throw StorageError(error, operation: "allocate keys", location: location)
                }
            }
            throw StorageError(code: .conditionsFailed, operation: "allocate keys",
                               message: "\(location): the key sequence of \(entityName) kept moving under \(Self.maxAllocationAttempts) attempts")
        }
    }
}
