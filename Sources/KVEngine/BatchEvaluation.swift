/// One batch's check in progress (see `StoreCore.evaluate`): what it has made so far, and the
/// run of one table its keys are in.
///
/// A struct whose steps are mutating methods, handed everything else as parameters, rather
/// than local functions capturing `evaluate`'s variables: the operations are walked inside a
/// closure (`withUnsafeBufferPointer`), and variables that local functions captured there
/// were boxed and checked for exclusive access at run time on every read and write, about
/// 2.5M instructions for a batch of 10,000 keys.
struct BatchEvaluation {
    let viewVersion: UInt64
    /// The version the batch commits at if it writes: the key of its version-keyed puts.
    let commitVersion: UInt64
    /// How many tables a commit may name (LMDB's table limit, fixed at open, less the meta table).
    let tableLimit: Int
    var failures: [FailedCondition] = []
    var operations: [LoggedOperation] = []
    var versions: [UInt64] = []
    /// The logged operations' payload, counted while their keys and values are at hand.
    var payloadSize = 4
    // Batches write runs of one table: `tableKey(of:)`, which sees each operation before
    // `evaluateOne` does, hashes the table's part of each key's digest and counts its name's
    // bytes once a run.
    private var runTable: String? = nil
    private var seeded = Hasher()
    private var runTableBytes = 0
    private var lastTable: String? = nil

    init(viewVersion: UInt64, commitVersion: UInt64, tableLimit: Int) {
        self.viewVersion = viewVersion
        self.commitVersion = commitVersion
        self.tableLimit = tableLimit
    }

    /// Forgets what was made, to check the batch again from its start.
    mutating func restart() {
        operations.removeAll(keepingCapacity: true)
        versions.removeAll(keepingCapacity: true)
        failures.removeAll()
        payloadSize = 4
        lastTable = nil
    }

    @inline(__always)
    mutating func tableKey(of operation: UnsafePointer<WriteBatch.Operation>) -> TableKey {
        switch operation.pointee {
        case .put(let table, let key, _, _), .delete(let table, let key, _), .check(let table, let key, _),
             .unversionedPut(let table, let key, _), .unversionedDelete(let table, let key):
            if table != runTable {
                seeded = TableKey.seededHasher(table)
                runTable = table
                runTableBytes = table.utf8.count
            }
            return TableKey(table: table, key: key, seeded: seeded)
        case .putAtCommitVersion(let table, _, _):
            if table != runTable {
                seeded = TableKey.seededHasher(table)
                runTable = table
                runTableBytes = table.utf8.count
            }
            return TableKey(table: table, key: WriteBatch.commitVersionKey(commitVersion), seeded: seeded)
        }
    }

    /// Evaluates one operation against its key's slot in the batch's own states, which holds
    /// the unresolved marker when the key is new to this batch; leaves the key's state after
    /// the operation in the slot. (One hash of the key per operation: a bulk load has a
    /// million of them.)
    @inline(__always)
    mutating func evaluateOne(
        _ operation: UnsafePointer<WriteBatch.Operation>, tableKey: TableKey, slot: inout RecordState,
        reader: inout StateReader, group: [TableKey: RecordState], knownTables: inout Set<String>
    ) throws(KVError) {
        let kind = operation.pointee.kind
        if kind == .unversionedPut || kind == .unversionedDelete {
            // No condition and no version to continue from: nothing to look up.
            if kind == .unversionedPut { try noteTableOfPut(knownTables: &knownTables) }
            let logged = operation.pointee.logged(key: tableKey.key, recordVersion: 0, replacesTombstone: false, digest: tableKey.digest)
            payloadSize += LoggedCommit.size(tableBytes: runTableBytes, keyBytes: tableKey.count,
                                             valueBytes: logged.value?.count)
            operations.append(logged)
            // A later operation of the group on the key sees what this one left.
            slot = kind == .unversionedPut ? .live(0) : .absent
            versions.append(0)
            return
        }
        if slot == .unresolved {
            if !group.isEmpty, let known = group[tableKey] {
                slot = known
            } else {
                do {
                    slot = try reader.recordState(of: tableKey)
                } catch KVError.corruptRecord(let table, let key, let reason) {
                    // A record that fails its checksum can still be replaced or deleted
                    // without a condition (nothing to compare), so it can be repaired. No
                    // record version can exceed the commit version, so continuing from it
                    // keeps versions from repeating.
                    switch (operation.pointee.kind, operation.pointee.condition) {
                    case (.put, nil), (.delete, nil): slot = .live(viewVersion)
                    default: throw KVError.corruptRecord(table: table, key: key, reason: reason)
                    }
                }
            }
        }
        let state = slot
        // What conditions and callers see: the live version, 0 when absent or deleted.
        let current = state.exists ? state.version : 0
        // The operation is read in place (its kind, its condition, a logged copy), never
        // copied whole: a copy retained its key and value and released them again.
        let condition = operation.pointee.condition
        switch operation.pointee.kind {
        case .put:
            try noteTableOfPut(knownTables: &knownTables)
            // A put continues from a tombstone's version: a key's versions never repeat.
            let next = state.version + 1
            var replacesTombstone = false
            if case .deleted = state { replacesTombstone = true }
            let logged = operation.pointee.logged(key: tableKey.key, recordVersion: next, replacesTombstone: replacesTombstone,
                                                  digest: tableKey.digest)
            payloadSize += LoggedCommit.size(tableBytes: runTableBytes, keyBytes: tableKey.count,
                                             valueBytes: logged.value?.count)
            operations.append(logged)
            slot = .live(next)
            versions.append(next)
        case .delete:
            if state.exists {
                operations.append(operation.pointee.logged(key: tableKey.key, recordVersion: current, replacesTombstone: false,
                                                           digest: tableKey.digest))
                payloadSize += LoggedCommit.size(tableBytes: runTableBytes, keyBytes: tableKey.count, valueBytes: nil)
                slot = .deleted(current)
            }
            versions.append(0)
        case .check:
            versions.append(current)
        case .unversionedPut, .unversionedDelete:
            preconditionFailure("unversioned operations are evaluated above")
        }
        if let condition {
            let holds: Bool
            switch condition {
            case .absent: holds = !state.exists
            case .version(let expected): holds = state.exists && current == expected
            }
            if !holds {
                failures.append(FailedCondition(table: operation.pointee.table, key: tableKey.key,
                                                expected: condition, currentVersion: current))
            }
        }
    }

    /// Counts a put's table among the known ones. LMDB's table limit is fixed at open; past it
    /// the applier could not create the table, so refuse here, before anything is logged.
    @inline(__always)
    private mutating func noteTableOfPut(knownTables: inout Set<String>) throws(KVError) {
        if runTable != lastTable, let table = runTable, !knownTables.contains(table) {
            guard knownTables.count < tableLimit else {
                throw KVError.tooManyTables(limit: tableLimit)
            }
            knownTables.insert(table)
        }
        lastTable = runTable
    }
}
