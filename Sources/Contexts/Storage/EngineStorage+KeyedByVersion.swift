import KVEngine
import Locking

// A record keyed by its own commit's version, on an engine that assigns versions only inside
// the commit: the version is predicted (the newest version + 1) and the commit made while no
// other commit of this process's object layer can take that version first. Every commit of a
// storage that records history (saves, key allocation, history deletes) holds one lock per
// `Store`, shared by every such storage on it, from the prediction to the commit's return.
//
// A commit that bypasses those storages (a raw `Store.commit`, or an ObjectStore opened on the
// same Store without history) can still land in between: the record then keeps the predicted
// key, below its commit's version. Keys still rise in commit order, because every recording
// commit predicts after the previous one returned, so `fetchHistory(after:)` misses nothing.
// The price of the lock: a recording storage's commits no longer share a group commit.

extension EngineStorage {
    func commit(
        _ batch: consuming StorageBatch, durability: SaveDurability, keyedByVersion record: [UInt8], in table: String
    ) throws(StorageError) -> StorageCommitOutcome {
        guard let versionLock else {
            preconditionFailure("a record keyed by version needs a storage opened with recordsHistory")
        }
        var held: StorageBatch? = batch
        return try versionLock.withLock { (_) throws(StorageError) -> StorageCommitOutcome in
            let predicted = try commitVersion() + 1
            var batch = held.take()!
            batch.put(record, forKey: StorageMapping.key(for: predicted), in: table, if: .absent)
            switch try commitNow(batch, durability: durability) {
            case .committed(let version, var recordVersions):
                recordVersions.removeLast()  // the record's own: the caller's operations stay in step
                return .committed(version: version, recordVersions: recordVersions)
            case .conditionsFailed(let failures):
                return .conditionsFailed(failures)
            }
        }
    }

    /// The lock every recording storage on `store` shares. Entries stay for the process's life
    /// (one small lock per Store opened); a Store allocated where a freed one was takes its lock,
    /// which is harmless: the lock guards no state.
    static func versionLock(of store: Store) -> ConditionLock<Int> {
        versionLocks.withLock { locks in
            if let lock = locks[ObjectIdentifier(store)] { return lock }
            let lock = ConditionLock<Int>(0)
            locks[ObjectIdentifier(store)] = lock
            return lock
        }
    }

    private static let versionLocks = ConditionLock<[ObjectIdentifier: ConditionLock<Int>]>([:])
}
