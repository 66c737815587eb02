import Contexts
import Foundation

// A save is one txn (EtcdTxnPlan.swift). Each attempt to send it gets a fresh stamp
// (EtcdWriteStamp.swift) that every entity record it writes carries, so when an attempt gets
// no reply (a timeout, a reset, the member killed) the outcome is settled from its witness
// record without resending it (EtcdStorage+Settle.swift): applied, or fenced for good and
// tried again as a new conditional txn. Nothing acknowledged is lost: etcd acknowledges a txn
// after a quorum has it in its log.
//
// A plan without a witness of its own (no conditioned entity record written) compares and
// stamps this storage's commit marker instead; those commits hold the marker's lock, so the
// marker's version is always known. Every other commit runs without a lock.

extension EtcdStorage {
    /// Attempts per commit whose failed compares all hold at the storage level: a witness or
    /// the marker fenced by an unanswered attempt's settlement, or "absent" over a tombstone.
    static let maxAttempts = 8

    func commit(_ batch: consuming StorageBatch, durability: SaveDurability) throws(StorageError) -> StorageCommitOutcome {
        try checkOpen()
        var plan = try EtcdTxnPlan(batch.takeOperations(), layout: layout)
        if !plan.localFailures.isEmpty { return .conditionsFailed(plan.localFailures) }
        try checkLimits(plan)
        let outcome: StorageCommitOutcome
        if plan.witness != nil {
            var noMarker: MarkerState? = nil
            outcome = try attempts(&plan, marker: &noMarker)
        } else {
            outcome = try marker.withLock { (state: inout MarkerState) throws(StorageError) -> StorageCommitOutcome in
                var held: MarkerState? = state
                defer { state = held! }
                return try attempts(&plan, marker: &held)
            }
        }
        if case .committed(let version, _) = outcome {
            notifyObservers(StorageCommitNotice(version: version, writtenKeys: plan.writtenKeys.map { plan.keys[$0].storageKey }))
        }
        return outcome
    }

    /// Sends the plan's txn until it commits, fails on a record's condition, or cannot be
    /// settled; `marker` is the marker's state when it witnesses.
    private func attempts(_ plan: inout EtcdTxnPlan, marker: inout MarkerState?) throws(StorageError) -> StorageCommitOutcome {
        for _ in 0..<Self.maxAttempts {
            let stamp = nextStamp()
            let txn = plan.txn(stamp: stamp, marker: marker.map { ($0.key, $0.version) }, layout: layout)
            let reply: WireTxnResponse
            do throws(EtcdClientError) {
                reply = try client.call("kv/txn", txn, as: WireTxnResponse.self, isWrite: true)
            } catch .outcomeUnknown {
                let (witnessKey, compared) = marker.map { ($0.key, $0.version) }
                    ?? (plan.keys[plan.witness!].etcdKey, plan.keys[plan.witness!].compared!)
                marker?.unanswered = true
                switch try settle(witness: witnessKey, comparedVersion: compared, stamp: stamp) {
                case .applied(let revision):
                    marker?.version = compared + 1
                    noteRevision(revision)
                    var after = plan.versionsAfterCommit([])
                    for (position, version) in try versions(of: plan.putsOfUnknownVersion, in: plan, at: revision) {
                        after[position] = version
                    }
                    return .committed(version: UInt64(revision), recordVersions: plan.recordVersions(after: after))
                case .fenced:
                    // The witness is one write further, what it held unchanged: compare that.
                    if marker != nil { marker!.version = compared + 1 } else { plan.keys[plan.witness!].compared = compared + 1 }
                    continue
                case .lost:
                    continue  // the next attempt's failed compare reports who won
                }
            } catch {
                throw StorageError(error, operation: "commit", location: location)
            }
            let revision = reply.header?.revision?.value ?? 0
            noteRevision(revision)
            if reply.succeeded == true {
                marker?.version += 1
                let versions = plan.versionsAfterCommit(reply.responses ?? [])
                return .committed(version: UInt64(revision), recordVersions: plan.recordVersions(after: versions))
            }
            // The failure list reads each compared key, then the marker.
            let records = (reply.responses ?? []).map { $0.response_range?.kvs?.first }
            var failures: [FailedStorageCondition] = []
            for (slot, position) in plan.comparedKeys.enumerated() {
                let record = slot < records.count ? records[slot] : nil
                let etcdVersion = record?.version?.value ?? 0
                guard etcdVersion != plan.keys[position].compared else { continue }
                let isTombstone = plan.keys[position].keepsTombstones && EtcdKeyLayout.isTombstone(record?.value)
                if isTombstone && plan.keys[position].expected == 0 {
                    // "Absent" holds over a tombstone: compare its version next time.
                    plan.keys[position].compared = etcdVersion
                    continue
                }
                // Callers see a tombstone as absent, version 0, as on the engine.
                failures.append(FailedStorageCondition(key: plan.keys[position].storageKey,
                                                       currentVersion: isTombstone ? 0 : UInt64(etcdVersion)))
            }
            if !failures.isEmpty { return .conditionsFailed(failures) }
            if marker != nil {
                let markerRecord = records.count > plan.comparedKeys.count ? records[plan.comparedKeys.count] : nil
                marker!.version = markerRecord?.version?.value ?? 0
            }
        }
        throw StorageError(code: .conditionsFailed, operation: "commit",
                           message: "\(location): the save's compares kept failing on keys it alone writes (\(Self.maxAttempts) attempts)")
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

    /// The versions `positions` of the plan have at `revision` (after an attempt settled as
    /// applied, for the puts whose version only the lost reply would have told).
    private func versions(of positions: [Int], in plan: EtcdTxnPlan, at revision: Int64) throws(StorageError) -> [Int: Int64] {
        guard !positions.isEmpty else { return [:] }
        let view = EtcdReadView(storage: self, revision: revision)
        defer { view.close() }
        var versions: [Int: Int64] = [:]
        do {
            try view.visitValues(forKeys: positions.map { plan.keys[$0].storageKey }) { index, _, version in
                versions[positions[index]] = Int64(version)
            }
        } catch {
            // Applied, but the caller cannot be told what it wrote: it must read, as after any
            // unknown outcome.
            throw StorageError(code: .outcomeUnknown, operation: "commit",
                               message: "\(location): a commit got no reply; it applied at revision \(revision), but reading back what it wrote failed: \(error)")
        }
        return versions
    }
}
