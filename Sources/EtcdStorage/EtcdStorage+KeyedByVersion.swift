import Contexts

// A record keyed by its own commit's version (the persistent history's), on etcd: the revision
// a txn gets is known only after it, so the key is predicted as the current revision + 1 and
// put on condition "absent", in the save's own txn. Recording commits of one storage hold
// `recordingLock` from the prediction to the commit's return, so their keys rise in commit
// order. Another writer (another process, another prefix of the cluster) may commit in
// between: the record then keeps its predicted key, below its commit's revision, which the
// seam allows. Two storages recording on one prefix may predict the same key: the one whose
// "absent" fails predicts again; one that predicted lower but committed later breaks the
// rising order across them (history on etcd assumes one recording writer per prefix).

extension EtcdStorage {
    func commit(
        _ batch: consuming StorageBatch, durability: SaveDurability, keyedByVersion record: [UInt8], in table: String
    ) throws(StorageError) -> StorageCommitOutcome {
        let operations = batch.takeOperations()
        return try recordingLock.withLock { (_) throws(StorageError) -> StorageCommitOutcome in
            for _ in 0..<Self.maxAttempts {
                let predicted = StorageMapping.key(for: try commitVersion() + 1)
                var attempt = StorageBatch()
                attempt.reserveCapacity(operations.count + 1)
                for operation in operations {
                    switch operation {
                    case let .put(table, key, value, condition): attempt.put(value, forKey: key, in: table, if: condition)
                    case let .delete(table, key, condition): attempt.delete(key, in: table, if: condition)
                    case let .check(table, key, condition): attempt.require(condition, forKey: key, in: table)
                    case let .unversionedPut(table, key, value): attempt.putUnversioned(value, forKey: key, in: table)
                    case let .unversionedDelete(table, key): attempt.deleteUnversioned(key, in: table)
                    }
                }
                attempt.put(record, forKey: predicted, in: table, if: .absent)
                switch try commit(attempt, durability: durability) {
                case .committed(let version, var recordVersions):
                    recordVersions.removeLast()  // the record's own: the caller's operations stay in step
                    return .committed(version: version, recordVersions: recordVersions)
                case .conditionsFailed(let failures):
                    let recordKey = StorageKey(table: table, key: predicted)
                    let others = failures.filter { $0.key != recordKey }
                    if others.isEmpty { continue }  // only the prediction was taken: predict again
                    return .conditionsFailed(others)
                }
            }
            throw StorageError(code: .conditionsFailed, operation: "commit",
                               message: "\(location): the history record's predicted revision kept being taken")
        }
    }

    /// No directory to watch: saves made elsewhere arrive through the etcd watch
    /// (EtcdWatcher.swift), and pollers of `commitVersion()` ask the cluster.
    var commitSignalDirectory: String? { nil }
}
