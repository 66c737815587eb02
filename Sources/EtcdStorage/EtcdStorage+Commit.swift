import Contexts
import Foundation

// A save is one txn (EtcdTxnPlan.swift) that also compares and advances this storage's commit
// marker, a key only this storage writes:
//
//   compare  VERSION(marker) == m              success  put marker = <nonce of this attempt>
//
// Commits through one storage hold the marker's lock, so m is always known. When a txn gets
// no reply (a timeout, a reset, the member killed), it may still be applied later by the
// cluster. The outcome is resolved without resending it:
//   1. read the marker: its value is this attempt's nonce -> applied, at the marker's
//      mod_revision;
//   2. otherwise send a fence (compare VERSION(marker) == m, put marker = fence nonce): once
//      it applies, the lost txn's compare can never hold again, so it was not applied, and the
//      save is tried again as a new conditional txn (its compares still guard the records);
//      if the fence's compare fails, the txn was applied after all: back to 1.
// Nothing acknowledged is lost: etcd acknowledges a txn after a quorum has it in its log.

extension EtcdStorage {
    /// Attempts per commit whose failed compares all hold at the storage level: the marker's
    /// (fenced by an unanswered commit's resolution) or "absent" over a tombstone.
    static let maxMarkerRetries = 8

    func commit(_ batch: consuming StorageBatch, durability: SaveDurability) throws(StorageError) -> StorageCommitOutcome {
        try checkOpen()
        var plan = try EtcdTxnPlan(batch.takeOperations(), layout: layout)
        if !plan.localFailures.isEmpty { return .conditionsFailed(plan.localFailures) }
        try checkLimits(plan)
        let outcome = try marker.withLock { (state: inout MarkerState) throws(StorageError) -> (StorageCommitOutcome, [StorageKey]?) in
            for _ in 0..<Self.maxMarkerRetries {
                let nonce = Data(UUID().uuidString.utf8)
                let txn = plan.txn(marker: state.key, markerVersion: state.version, nonce: nonce)
                let reply: WireTxnResponse
                do throws(EtcdClientError) {
                    reply = try client.call("kv/txn", txn, as: WireTxnResponse.self, isWrite: true)
                } catch .outcomeUnknown {
                    guard let revision = try resolveUnknownOutcome(&state, nonce: nonce) else { continue }
                    let versions = try versions(of: plan, at: revision)
                    return (.committed(version: UInt64(revision), recordVersions: plan.recordVersions(after: versions)),
                            plan.writtenKeys.map { plan.keys[$0].storageKey })
                } catch {
                    throw StorageError(error, operation: "commit", location: location)
                }
                let revision = reply.header?.revision?.value ?? 0
                if reply.succeeded == true {
                    state.version += 1
                    let versions = plan.versionsAfterCommit(reply.responses ?? [])
                    return (.committed(version: UInt64(revision), recordVersions: plan.recordVersions(after: versions)),
                            plan.writtenKeys.map { plan.keys[$0].storageKey })
                }
                // The failure list reads each compared key, then the marker.
                let records = (reply.responses ?? []).map { $0.response_range?.kvs?.first }
                var failures: [FailedStorageCondition] = []
                for (slot, position) in plan.comparedKeys.enumerated() {
                    let record = slot < records.count ? records[slot] : nil
                    let etcdVersion = record?.version?.value ?? 0
                    guard etcdVersion != plan.keys[position].compared else { continue }
                    let isTombstone = plan.keys[position].keepsTombstones && record?.value == EtcdKeyLayout.tombstone
                    if isTombstone && plan.keys[position].expected == 0 {
                        // "Absent" holds over a tombstone: compare its version next time.
                        plan.keys[position].compared = etcdVersion
                        continue
                    }
                    // Callers see a tombstone as absent, version 0, as on the engine.
                    failures.append(FailedStorageCondition(key: plan.keys[position].storageKey,
                                                           currentVersion: isTombstone ? 0 : UInt64(etcdVersion)))
                }
                if !failures.isEmpty { return (.conditionsFailed(failures), nil) }
                let markerRecord = records.last ?? nil
                state.version = markerRecord?.version?.value ?? 0
            }
            throw StorageError(code: .conditionsFailed, operation: "commit",
                               message: "\(location): this storage's commit marker kept moving under it")
        }
        if case .committed(let version, _) = outcome.0, let written = outcome.1 {
            notifyObservers(StorageCommitNotice(version: version, writtenKeys: written))
        }
        return outcome.0
    }

    /// Refuses a txn the cluster would refuse, before sending it, naming the limit.
    func checkLimits(_ plan: EtcdTxnPlan) throws(StorageError) {
        if plan.txnOps > configuration.maxTxnOps {
            throw StorageError(
                code: .limitExceeded(limit: "--max-txn-ops", size: plan.txnOps, maximum: configuration.maxTxnOps),
                operation: "commit",
                message: "\(location): the save needs \(plan.txnOps) operations in one etcd txn, more than --max-txn-ops (\(configuration.maxTxnOps)); nothing was written (a save is never split: it would stop being atomic)")
        }
        // Each compare, write and read costs its key and value plus a few bytes of framing.
        let estimate = plan.payloadBytes + 16 * (plan.operations.count + 2)
        if estimate > configuration.maxRequestBytes {
            throw StorageError(
                code: .limitExceeded(limit: "--max-request-bytes", size: estimate, maximum: configuration.maxRequestBytes),
                operation: "commit",
                message: "\(location): the save is about \(estimate) bytes in one etcd request, more than --max-request-bytes (\(configuration.maxRequestBytes)); nothing was written (a save is never split: it would stop being atomic)")
        }
    }

    /// The revision the unanswered txn carrying `nonce` committed at, or nil when it is now
    /// certain never to apply (the marker was fenced); `state` follows the marker.
    private func resolveUnknownOutcome(_ state: inout MarkerState, nonce: Data) throws(StorageError) -> Int64? {
        var fences: Set<Data> = []
        for _ in 0..<Self.maxMarkerRetries {
            let reply: WireRangeResponse
            do {
                reply = try client.call("kv/range", WireRangeRequest(key: state.key), as: WireRangeResponse.self, isWrite: false)
            } catch {
                // Whatever the reason, the commit's outcome stays unknown: say so, not "unreachable".
                throw StorageError(code: .outcomeUnknown, operation: "commit",
                                   message: "\(location): a commit got no reply, and asking whether it applied failed: \(error)")
            }
            let current = reply.kvs?.first
            let value = current?.value ?? Data()
            let version = current?.version?.value ?? 0
            if value == nonce {
                state.version = version
                return current?.mod_revision?.value ?? reply.header?.revision?.value ?? 0
            }
            if fences.contains(value) {
                state.version = version
                return nil
            }
            let fence = Data(("fence-" + UUID().uuidString).utf8)
            fences.insert(fence)
            var txn = WireTxnRequest()
            txn.compare = [.version(of: state.key, equals: state.version)]
            txn.success = [WireRequestOp(request_put: WirePutRequest(key: state.key, value: fence))]
            do throws(EtcdClientError) {
                let fenced = try client.call("kv/txn", txn, as: WireTxnResponse.self, isWrite: true)
                if fenced.succeeded == true {
                    state.version += 1
                    return nil
                }
                // The marker moved: the lost txn applied meanwhile; the next read shows it.
            } catch .outcomeUnknown {
                // The fence's own outcome is unknown: the next read tells which applied.
            } catch {
                throw StorageError(error, operation: "resolve commit", location: location)
            }
        }
        throw StorageError(code: .outcomeUnknown, operation: "commit",
                           message: "\(location): a commit got no reply and its outcome could not be settled")
    }

    /// The versions the plan's put keys have at `revision` (after a commit resolved as applied).
    private func versions(of plan: EtcdTxnPlan, at revision: Int64) throws(StorageError) -> [Int: Int64] {
        let view = EtcdReadView(storage: self, revision: revision)
        defer { view.close() }
        let positions = plan.writtenKeys
        var versions: [Int: Int64] = [:]
        do {
            try view.visitValues(forKeys: positions.map { plan.keys[$0].storageKey }) { index, _, version in
                versions[positions[index]] = Int64(version)
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(code: .corrupt, operation: "resolve commit", message: "\(error)")
        }
        return versions
    }
}
