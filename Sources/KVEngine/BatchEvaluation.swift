/// One batch's check in progress (see `StoreCore.evaluate`): what it has made so far, and the
/// run of one table its keys are in.
///
/// A struct whose steps are mutating methods, handed everything else as parameters, rather
/// than local functions capturing `evaluate`'s variables: variables that local functions
/// captured were boxed and checked for exclusive access at run time on every read and write,
/// about 2.5M instructions for a batch of 10,000 keys.
///
/// Each operation is handed over whole (`consuming`): its table, key and value move into the
/// logged operation, never copied. A copy retained each of them, and the batch's end released
/// them again, by then out of the cache: about a fifth of a large save's commit.
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
    // `evaluate` does, hashes the table's part of each key's digest and counts its name's
    // bytes once a run.
    private var runTable: String? = nil
    private var seeded = SipHash(key: (0, 0))
    private var runTableBytes = 0
    private var lastTable: String? = nil

    init(viewVersion: UInt64, commitVersion: UInt64, tableLimit: Int) {
        self.viewVersion = viewVersion
        self.commitVersion = commitVersion
        self.tableLimit = tableLimit
    }

    @inline(__always)
    mutating func tableKey(of operation: borrowing WriteBatch.Operation) -> TableKey {
        switch operation {
        case .put(let table, let key, _, _), .delete(let table, let key, _), .check(let table, let key, _),
             .unversionedPut(let table, let key, _), .unversionedDelete(let table, let key):
            startRun(of: table)
            return TableKey(table: table, key: key, seeded: seeded)
        case .putAtCommitVersion(let table, _, _):
            startRun(of: table)
            return TableKey(table: table, key: WriteBatch.commitVersionKey(commitVersion), seeded: seeded)
        }
    }

    @inline(__always)
    private mutating func startRun(of table: String) {
        if table != runTable {
            seeded = TableKey.seed(table)
            runTable = table
            runTableBytes = table.utf8.count
        }
    }

    /// The states the operations evaluated so far left, by key: what the batch's own table of
    /// states would hold had it been kept from the start. Only logged operations change a
    /// key's state (a check, or a delete of an absent key, leaves the one a lookup finds).
    func statesLeft() -> [TableKey: RecordState] {
        var states: [TableKey: RecordState] = [:]
        states.reserveCapacity(operations.count)
        for operation in operations {
            let state: RecordState
            if operation.isUnversioned {
                state = operation.value == nil ? .absent : .live(0)
            } else {
                state = operation.value == nil ? .deleted(operation.recordVersion) : .live(operation.recordVersion)
            }
            states[operation.tableKey] = state
        }
        return states
    }

    /// Evaluates one operation against its key's slot in the batch's own states, which holds
    /// the unresolved marker when the key is new to this batch; leaves the key's state after
    /// the operation in the slot. (One hash of the key per operation: a bulk load has a
    /// million of them.)
    ///
    /// Each logged operation's write for the overlay goes to `inserts` (its key, its entry at
    /// `commitVersion`), made here while the key and value are at hand.
    @inline(__always)
    mutating func evaluate(
        _ operation: consuming WriteBatch.Operation, tableKey: consuming TableKey, slot: inout RecordState,
        reader: inout StateReader, group: [TableKey: RecordState], knownTables: inout KnownTables,
        inserts: inout OverlayInserts
    ) throws(KVError) {
        switch consume operation {
        case let .unversionedPut(table, key, value):
            // No condition and no version to continue from: nothing to look up.
            try noteTableOfPut(knownTables: &knownTables)
            log(LoggedOperation(table: table, key: key, recordVersion: 0, value: value,
                                replacesTombstone: false, isUnversioned: true, digest: tableKey.digest),
                tableKey: tableKey, inserts: &inserts)
            // A later operation of the group on the key sees what this one left.
            slot = .live(0)
            versions.append(0)
        case let .unversionedDelete(table, key):
            log(LoggedOperation(table: table, key: key, recordVersion: 0, value: nil,
                                replacesTombstone: false, isUnversioned: true, digest: tableKey.digest),
                tableKey: tableKey, inserts: &inserts)
            slot = .absent
            versions.append(0)
        case let .put(table, key, value, condition):
            try put(table: table, key: key, value: value, condition: condition, tableKey: tableKey, slot: &slot,
                    reader: &reader, group: group, knownTables: &knownTables, inserts: &inserts)
        case let .putAtCommitVersion(table, value, condition):
            try put(table: table, key: tableKey.key, value: value, condition: condition, tableKey: tableKey, slot: &slot,
                    reader: &reader, group: group, knownTables: &knownTables, inserts: &inserts)
        case let .delete(table, key, condition):
            try resolve(&slot, of: tableKey, unconditional: condition == nil, reader: &reader, group: group)
            let state = slot
            check(condition, against: state, of: tableKey)
            versions.append(0)
            if state.exists {
                slot = .deleted(state.version)
                log(LoggedOperation(table: table, key: key, recordVersion: state.version, value: nil,
                                    replacesTombstone: false, isUnversioned: false, digest: tableKey.digest),
                    tableKey: tableKey, inserts: &inserts)
            }
        case let .check(_, _, condition):
            try resolve(&slot, of: tableKey, unconditional: false, reader: &reader, group: group)
            versions.append(slot.exists ? slot.version : 0)
            check(condition, against: slot, of: tableKey)
        }
    }

    /// Logs `operation`, counting its payload, and makes its write for the overlay.
    @inline(__always)
    private mutating func log(_ operation: consuming LoggedOperation, tableKey: consuming TableKey,
                              inserts: inout OverlayInserts) {
        let valueBytes = operation.value?.count
        payloadSize += LoggedCommit.size(tableBytes: runTableBytes, keyBytes: tableKey.count, valueBytes: valueBytes)
        let entry = OverlayEntry(commitVersion: commitVersion, recordVersion: operation.recordVersion, value: operation.value)
        operations.append(operation)
        inserts.append(key: tableKey, entry: entry)
    }

    /// A put: continues from the key's version, even a tombstone's, so a key's versions never
    /// repeat.
    @inline(__always)
    private mutating func put(
        table: consuming String, key: consuming [UInt8], value: consuming [UInt8], condition: Condition?,
        tableKey: consuming TableKey, slot: inout RecordState, reader: inout StateReader, group: [TableKey: RecordState],
        knownTables: inout KnownTables, inserts: inout OverlayInserts
    ) throws(KVError) {
        try resolve(&slot, of: tableKey, unconditional: condition == nil, reader: &reader, group: group)
        try noteTableOfPut(knownTables: &knownTables)
        let state = slot
        let next = state.version + 1
        var replacesTombstone = false
        if case .deleted = state { replacesTombstone = true }
        check(condition, against: state, of: tableKey)
        slot = .live(next)
        versions.append(next)
        log(LoggedOperation(table: table, key: key, recordVersion: next, value: value,
                            replacesTombstone: replacesTombstone, isUnversioned: false, digest: tableKey.digest),
            tableKey: tableKey, inserts: &inserts)
    }

    /// Looks the key's state up when the batch has not seen the key yet: the group's earlier
    /// batches first, then the snapshot.
    @inline(__always)
    private func resolve(
        _ slot: inout RecordState, of tableKey: TableKey, unconditional: Bool, reader: inout StateReader,
        group: [TableKey: RecordState]
    ) throws(KVError) {
        guard slot == .unresolved else { return }
        if !group.isEmpty, let known = group[tableKey] {
            slot = known
            return
        }
        do {
            slot = try reader.recordState(of: tableKey)
        } catch KVError.corruptRecord(let table, let key, let reason) {
            // A record that fails its checksum can still be replaced or deleted without a
            // condition (nothing to compare), so it can be repaired. No record version can
            // exceed the commit version, so continuing from it keeps versions from repeating.
            guard unconditional else { throw KVError.corruptRecord(table: table, key: key, reason: reason) }
            slot = .live(viewVersion)
        }
    }

    /// Records a failure when `condition` does not hold of `state` (the key's state before
    /// the operation).
    @inline(__always)
    private mutating func check(_ condition: Condition?, against state: RecordState, of tableKey: TableKey) {
        guard let condition else { return }
        // What conditions and callers see: the live version, 0 when absent or deleted.
        let current = state.exists ? state.version : 0
        let holds: Bool
        switch condition {
        case .absent: holds = !state.exists
        case .version(let expected): holds = state.exists && current == expected
        }
        if !holds {
            failures.append(FailedCondition(table: tableKey.table, key: tableKey.key, expected: condition,
                                            currentVersion: current))
        }
    }

    /// Counts a put's table among the known ones. LMDB's table limit is fixed at open; past it
    /// the applier could not create the table, so refuse here, before anything is logged.
    @inline(__always)
    private mutating func noteTableOfPut(knownTables: inout KnownTables) throws(KVError) {
        // Once a run: assigning the name on every put retained it (a long name is counted).
        guard runTable != lastTable else { return }
        if let table = runTable, !knownTables.contains(table) {
            guard knownTables.count < tableLimit else {
                throw KVError.tooManyTables(limit: tableLimit)
            }
            knownTables.insert(table)
        }
        lastTable = runTable
    }
}
