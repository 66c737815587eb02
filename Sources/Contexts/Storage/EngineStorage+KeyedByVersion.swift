import KVEngine

// A record keyed by its own commit's version: the engine fills the key in where it assigns the
// version, inside the commit (`WriteBatch.putAtCommitVersion`), so the key is the commit's
// version exactly, whatever else commits to the store meanwhile, and these commits share a
// group commit with any others. The engine's key is StorageMapping's version key (8 bytes
// big-endian), so history reads keep using `StorageMapping.key(for:)`.

extension EngineStorage {
    func commit(
        _ batch: consuming StorageBatch, durability: SaveDurability, keyedByVersion record: [UInt8], in table: String
    ) throws(StorageError) -> StorageCommitOutcome {
        var engineBatch = batch.takeEngineBatch()
        engineBatch.putAtCommitVersion(record, in: table, if: .absent)
        switch try commit(consume engineBatch, durability: durability) {
        case .committed(let version, var recordVersions):
            recordVersions.removeLast()  // the record's own: the caller's operations stay in step
            return .committed(version: version, recordVersions: recordVersions)
        case .conditionsFailed(let failures):
            return .conditionsFailed(failures)
        }
    }
}
