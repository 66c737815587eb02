import Contexts
import Foundation

// A txn that got no reply may still be applied by the cluster later (it can sit in a raft log
// through an election), so it is never resent. What became of it is settled by re-reading its
// WITNESS: a key the txn compared at version v and wrote with the attempt's stamp, whose
// versions never go back (an entity record: deletes are tombstone puts; or this storage's
// marker, which only it writes and never deletes while an attempt on it is unsettled).
// Version v + 1 of the witness was written by exactly one txn, the first whose compare on it
// held after v; every later compare at v fails for good. So:
//
//   witness at v        nothing applied it yet. FENCE: compare VERSION == v, put the same
//                       record (or a tombstone, when absent) under a fence stamp. Once the
//                       fence applies, the lost txn can never apply -> fenced. If the fence's
//                       compare fails, or its reply is lost too, read again.
//   witness past v      read version v + 1 (the current record, or back through its earlier
//                       revisions with range `revision`): our stamp -> applied at its
//                       mod_revision; one of our fences' -> fenced; another writer's -> lost
//                       (its compare at v failed for good).
//   no answer, or a     StorageError.Code.outcomeUnknown: never a guess.
//   compacted revision

/// What became of an attempt that got no reply.
enum EtcdSettlement: Equatable {
    /// It committed, at this revision.
    case applied(revision: Int64)
    /// It never will: our fence moved the witness to v + 1, holding what it held at v.
    case fenced
    /// It never will: another writer's txn moved the witness first.
    case lost
}

extension EtcdStorage {
    /// Settles the attempt stamped `stamp` whose witness `key` it compared at `version`.
    func settle(witness key: Data, comparedVersion version: Int64, stamp: EtcdWriteStamp) throws(StorageError) -> EtcdSettlement {
        var fences: [EtcdWriteStamp] = []
        for _ in 0..<Self.maxAttempts {
            let current = try settlingRead(key, at: nil)
            let currentVersion = current?.version?.value ?? 0
            if currentVersion == version {
                let fence = nextStamp()
                fences.append(fence)
                var txn = WireTxnRequest()
                txn.compare = [.version(of: key, equals: version)]
                txn.success = [WireRequestOp(request_put: WirePutRequest(key: key, value: EtcdKeyLayout.restamped(current?.value, with: fence)))]
                do throws(EtcdClientError) {
                    let reply = try client.call("kv/txn", txn, as: WireTxnResponse.self, isWrite: true)
                    if reply.succeeded == true { return .fenced }
                } catch .outcomeUnknown {
                    // The fence's outcome is unknown as well: the next read tells.
                } catch {
                    throw unsettled("the fence failed: \(error)")
                }
                continue
            }
            guard currentVersion > version, var found = current else {
                throw unsettled("its witness went from version \(version) back to \(currentVersion) (keys under the prefix deleted outside Cairn?)")
            }
            // Back to version v + 1: each step reads the key as it was just before its write.
            while let foundVersion = found.version?.value, foundVersion > version + 1 {
                let before = (found.mod_revision?.value ?? 0) - 1
                guard let earlier = try settlingRead(key, at: before), (earlier.version?.value ?? 0) == foundVersion - 1 else {
                    throw unsettled("its witness's version \(foundVersion - 1) is not where its history says")
                }
                found = earlier
            }
            let written = EtcdKeyLayout.stamp(of: found.value)
            if written == stamp { return .applied(revision: found.mod_revision?.value ?? 0) }
            if let written, fences.contains(written) { return .fenced }
            return .lost
        }
        throw unsettled("it could not be settled in \(Self.maxAttempts) rounds")
    }

    /// The witness as the cluster has it now (or at `revision`); a failure leaves the outcome unknown.
    private func settlingRead(_ key: Data, at revision: Int64?) throws(StorageError) -> WireKeyValue? {
        do {
            let reply = try client.call("kv/range", WireRangeRequest(key: key, revision: revision.map(WireInt.init)),
                                        as: WireRangeResponse.self, isWrite: false)
            return reply.kvs?.first
        } catch .compacted {
            throw unsettled("revision \(revision ?? 0), which would tell, was compacted away")
        } catch {
            throw unsettled("asking whether it applied failed: \(error)")
        }
    }

    private func unsettled(_ why: String) -> StorageError {
        StorageError(code: .outcomeUnknown, operation: "commit", message: "\(location): a commit got no reply, and its outcome is unknown: \(why)")
    }
}
