import Contexts
import Foundation

// A storage batch applies its operations in order, each condition against the state the ones
// before it left; an etcd txn compares everything against the state before it and refuses a
// key written twice. The plan folds the batch into one txn shape:
//
//   compare   VERSION(key) == v (0: absent), for each key's first condition
//   success   the last put or delete of each written key, entity records stamped with the attempt
//   failure   a range of each compared key (its current version, for the conflict report)
//
// Its WITNESS is the first entity record it both compares and writes: what settles the txn
// when no reply comes (EtcdStorage+Settle.swift). A batch without one (only unconditioned or
// non-entity writes) has the storage's commit marker compared and written as its witness.
//
// A later condition on a key is checked here against the state the batch itself leaves (all
// known, given the first condition or a delete before it); a batch where that state is not
// known (a condition after an unconditioned put) is refused as invalid input.

/// One batch, folded per key into the compares and writes of one etcd txn.
struct EtcdTxnPlan {
    struct KeyPlan {
        let storageKey: StorageKey
        let etcdKey: Data
        /// The first condition's version (0: absent): a compare against the state before.
        var expected: Int64?
        /// The etcd version compared: `expected`, or a tombstone's version once the first try
        /// found one where the condition wanted "absent" (a re-insert).
        var compared: Int64?
        let keepsTombstones: Bool
        /// The version the batch's earlier operations leave, when known.
        var simulated: Int64?
        var write: Write = .none
    }

    enum Write {
        case none
        /// The value as the batch gives it (its stored form depends on the attempt's stamp).
        case put([UInt8])
        case delete
    }

    enum Kind {
        case put, delete, check
    }

    var keys: [KeyPlan] = []
    /// Per operation of the batch, in order: which key and what kind.
    var operations: [(key: Int, kind: Kind)] = []
    /// Conditions the batch fails by itself (against its own earlier writes).
    var localFailures: [FailedStorageCondition] = []
    /// Key and value bytes the txn carries, for the request-size limit.
    var payloadBytes = 0

    init(_ batch: [StorageBatch.Operation], layout: EtcdKeyLayout) throws(StorageError) {
        var index: [StorageKey: Int] = [:]
        for operation in batch {
            let table: String, key: [UInt8], condition: StorageBatch.Condition?, kind: Kind
            var value: [UInt8]? = nil
            switch operation {
            case let .put(t, k, v, c): (table, key, condition, kind, value) = (t, k, c, .put, v)
            case let .delete(t, k, c): (table, key, condition, kind) = (t, k, c, .delete)
            case let .check(t, k, c): (table, key, condition, kind) = (t, k, c, .check)
            // etcd keeps no tombstone for a table outside `entity:` (EtcdKeyLayout), so an
            // unversioned write is the same unconditioned put or delete there.
            case let .unversionedPut(t, k, v): (table, key, condition, kind, value) = (t, k, nil, .put, v)
            case let .unversionedDelete(t, k): (table, key, condition, kind) = (t, k, nil, .delete)
            }
            let storageKey = StorageKey(table: table, key: key)
            let position: Int
            if let known = index[storageKey] {
                position = known
            } else {
                position = keys.count
                index[storageKey] = position
                keys.append(KeyPlan(storageKey: storageKey, etcdKey: layout.key(key, in: table),
                                    keepsTombstones: layout.keepsTombstones(table)))
            }
            if let condition {
                let wanted: Int64 = switch condition {
                case .absent: 0
                case .version(let version): Int64(clamping: version)
                }
                if keys[position].expected == nil && isUntouched(keys[position]) {
                    keys[position].expected = wanted
                    keys[position].compared = wanted
                    keys[position].simulated = wanted
                } else if let simulated = keys[position].simulated {
                    if simulated != wanted {
                        localFailures.append(FailedStorageCondition(key: storageKey, currentVersion: UInt64(simulated)))
                    }
                } else {
                    throw StorageError(code: .invalidInput, operation: "commit",
                                       message: "an etcd txn cannot check \(table) after an unconditioned put of the same key in one batch")
                }
            }
            switch kind {
            case .put:
                keys[position].write = .put(value ?? [])
                keys[position].simulated = keys[position].simulated.map { $0 + 1 }
                payloadBytes += key.count + (value?.count ?? 0)
            case .delete:
                keys[position].write = .delete
                keys[position].simulated = 0
            case .check:
                break
            }
            payloadBytes += layout.prefix.count + table.utf8.count + key.count + 1
            if kind != .check && keys[position].keepsTombstones { payloadBytes += EtcdKeyLayout.headerCount }
            operations.append((position, kind))
        }
        witness = keys.indices.first { keys[$0].keepsTombstones && keys[$0].expected != nil && !isUntouched(keys[$0]) }
        comparedKeys = keys.indices.filter { keys[$0].expected != nil }
        writtenKeys = keys.indices.filter { !isUntouched(keys[$0]) }
    }

    private func isUntouched(_ key: KeyPlan) -> Bool {
        if case .none = key.write { return true }
        return false
    }

    /// The keys with a condition, in order: the txn's compares and its failure reads.
    private(set) var comparedKeys: [Int] = []
    /// The keys the txn writes, in order: its success operations.
    private(set) var writtenKeys: [Int] = []
    /// The first entity record both compared and written; nil when the marker must witness.
    private(set) var witness: Int?

    /// The txn of one attempt, its entity records stamped `stamp`; `marker` (the storage's
    /// marker and the version it is at) is compared and stamped too when the plan has no
    /// witness of its own.
    func txn(stamp: EtcdWriteStamp, marker: (key: Data, version: Int64)?, layout: EtcdKeyLayout) -> WireTxnRequest {
        var txn = WireTxnRequest()
        txn.compare.reserveCapacity(comparedKeys.count + 1)
        txn.failure.reserveCapacity(comparedKeys.count + 1)
        txn.success.reserveCapacity(writtenKeys.count + 1)
        for position in comparedKeys {
            txn.compare.append(.version(of: keys[position].etcdKey, equals: keys[position].compared!))
            // A tombstone is told apart by its value: entity keys are read whole.
            txn.failure.append(WireRequestOp(request_range: WireRangeRequest(
                key: keys[position].etcdKey, keys_only: keys[position].keepsTombstones ? nil : true)))
        }
        if let marker {
            txn.compare.append(.version(of: marker.key, equals: marker.version))
            txn.failure.append(WireRequestOp(request_range: WireRangeRequest(key: marker.key, keys_only: true)))
        }
        for position in writtenKeys {
            switch keys[position].write {
            case .put(let value):
                // The previous version comes back only where the plan does not know it.
                let needsPrevious = keys[position].expected == nil
                let stored = layout.stored(value, in: keys[position].storageKey.table, stamp: stamp)
                txn.success.append(WireRequestOp(request_put: WirePutRequest(key: keys[position].etcdKey, value: stored,
                                                                             prev_kv: needsPrevious ? true : nil)))
            case .delete where keys[position].keepsTombstones:
                txn.success.append(WireRequestOp(request_put: WirePutRequest(key: keys[position].etcdKey, value: EtcdKeyLayout.tombstone(stamp))))
            case .delete:
                txn.success.append(WireRequestOp(request_delete_range: WireDeleteRequest(key: keys[position].etcdKey)))
            case .none:
                break
            }
        }
        if let marker {
            txn.success.append(WireRequestOp(request_put: WirePutRequest(key: marker.key, value: EtcdKeyLayout.markerValue(stamp))))
        }
        return txn
    }

    /// The most entries any of the txn's three lists has (what `--max-txn-ops` bounds).
    var txnOps: Int { max(comparedKeys.count, writtenKeys.count) + (witness == nil ? 1 : 0) }

    /// Written puts whose version after the commit the plan cannot know without a reply
    /// (unconditioned ones: their `prev_kv` tells).
    var putsOfUnknownVersion: [Int] {
        writtenKeys.filter {
            guard case .put = keys[$0].write else { return false }
            return keys[$0].compared == nil
        }
    }

    /// The record version each operation reports, given the version each written key has
    /// after the commit.
    func recordVersions(after versions: [Int: Int64]) -> [UInt64] {
        operations.map { operation in
            switch operation.kind {
            case .put: return UInt64(versions[operation.key] ?? 0)
            case .delete: return 0
            case .check: return UInt64(keys[operation.key].expected ?? 0)
            }
        }
    }

    /// The version each written put has after a committed txn, from the success responses
    /// (in `writtenKeys` order): known ones from the compare, the others from `prev_kv`.
    func versionsAfterCommit(_ responses: [WireResponseOp]) -> [Int: Int64] {
        var versions: [Int: Int64] = [:]
        for (slot, position) in writtenKeys.enumerated() {
            guard case .put = keys[position].write else { continue }
            if let compared = keys[position].compared {
                versions[position] = compared + 1
            } else {
                let previous = slot < responses.count ? responses[slot].response_put?.prev_kv?.version?.value ?? 0 : 0
                versions[position] = previous + 1
            }
        }
        return versions
    }
}
