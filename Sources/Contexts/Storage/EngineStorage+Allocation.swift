import KVEngine

// Primary keys come from one sequence record per entity, advanced by a conditional commit:
//
//   put  meta:sequences/<Entity> = next + count   if .version(v)  (or .absent the first time)
//   require entity:<Entity>/<key> .absent           for each key handed out
//
// The first line makes two allocators (two ObjectStores on one Store) unable to hand out the
// same key; the second skips keys that someone inserted with a chosen primary key. The commit
// uses `.normal` durability on purpose: the log is one ordered stream, so any later save that
// uses these keys and is durable makes this record durable too, and if this record is lost in a
// crash, so is every save that used its keys. Keys of failed saves are never reused (gaps).

extension EngineStorage {
    func allocatePrimaryKeys(count: Int, for entityName: String) throws(StorageError) -> [UInt64] {
        precondition(count > 0, "allocatePrimaryKeys needs a positive count")
        return try allocationLock.withLock { (_) throws(StorageError) -> [UInt64] in
            let table = StorageMapping.table(for: entityName)
            let sequenceKey = Array(entityName.utf8)
            var floor: UInt64 = 1
            for _ in 0..<Self.maxAllocationAttempts {
                let sequence: Record?
                let largestStored: UInt64?
                do throws(KVError) {
                    let snapshot = try store.snapshot()
                    defer { snapshot.close() }
                    sequence = try snapshot.get(sequenceKey, in: StorageMapping.sequenceTable)
                    // Only read when a key was found taken: jumps past every chosen key at once.
                    largestStored = floor > 1
                        ? try snapshot.scan(in: table, reverse: true, limit: 1).first.flatMap { StorageMapping.primaryKey(of: $0.key) }
                        : nil
                } catch {
                    throw StorageError(error, operation: "allocate keys")
                }
                var next = floor
                if let sequence {
                    guard let stored = StorageMapping.primaryKey(of: sequence.value) else {
                        throw StorageError(
                            KVError.corruptRecord(table: StorageMapping.sequenceTable, key: sequenceKey,
                                                  reason: "sequence value is not 8 bytes"),
                            operation: "allocate keys")
                    }
                    next = max(next, stored)
                }
                if let largestStored, largestStored < UInt64.max { next = max(next, largestStored + 1) }
                let (end, overflow) = next.addingReportingOverflow(UInt64(count))
                guard !overflow else {
                    throw StorageError(.tooLarge(bytes: count, limit: Int(clamping: UInt64.max - next)), operation: "allocate keys")
                }
                var batch = WriteBatch()
                batch.put(StorageMapping.key(for: end), forKey: sequenceKey, in: StorageMapping.sequenceTable,
                          if: sequence.map { .version($0.version) } ?? .absent)
                let keys = Array(next..<end)
                for key in keys { batch.require(.absent, forKey: StorageMapping.key(for: key), in: table) }
                do throws(KVError) {
                    try store.commit(batch, durability: .normal)
                    return keys
                } catch .conditionFailed(let failures) {
                    let taken = failures.filter { $0.table == table }.compactMap { StorageMapping.primaryKey(of: $0.key) }
                    if let largestTaken = taken.max() { floor = max(floor, largestTaken &+ 1) }
                    continue
                } catch {
                    throw StorageError(error, operation: "allocate keys")
                }
            }
            throw StorageError(.conditionFailed([]), operation: "allocate keys")
        }
    }

    static let maxAllocationAttempts = 64
}
