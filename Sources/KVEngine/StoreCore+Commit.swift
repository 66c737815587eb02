// The commit path: a FIFO of waiting writers; the one at the head leads a bounded group,
// checks its conditions, appends it to the log once, syncs once, publishes it to the
// overlay and wakes the others with their results.

import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The writers waiting to commit, under `StoreCore.commitQueue`'s lock.
struct CommitQueue {
    var waiters: [CommitWaiter] = []
    var closed = false
    /// How many commits the last group carried: more than one means writers overlap, and
    /// a new leader may wait briefly for the rest to queue (`Options.groupCommitWait`).
    private(set) var lastGroupSize = 0
    /// About how many writers commit at once: the most seen in a recent group plus the
    /// writers who queued while it was being committed. A gathering leader stops as soon as
    /// this many commits are queued instead of waiting for arrivals to pause, since no more
    /// are coming.
    private(set) var expectedGroupSize = 0
    /// Groups in a row that saw fewer writers than `expectedGroupSize`.
    private var smallerGroups = 0
    /// The recent durable groups' log appends with their fdatasync, averaged (s); 0 before
    /// the first.
    private(set) var recentSyncSeconds = 0.0

    /// How many groups in a row with fewer writers make `expectedGroupSize` follow them
    /// down (when writers have gone away). One group left short by a late writer changes
    /// nothing.
    static let groupSizeMemory = 16

    /// Records how long a durable group's append and sync took.
    mutating func noteSync(seconds: Double) {
        recentSyncSeconds = recentSyncSeconds == 0 ? seconds : recentSyncSeconds * 0.875 + seconds * 0.125
    }

    /// How long a writer queuing now yields before it sleeps: `limit`, or nothing while the
    /// recent syncs averaged more than half of it.
    func spinBudget(limit: Double) -> Double {
        recentSyncSeconds <= limit / 2 ? limit : 0
    }

    /// Records a group of `size` commits just taken off the queue. The writers still queued
    /// arrived while it was committed, so they count as concurrent with it: a writer that
    /// keeps missing its group by a hair still counts, and the gather keeps waiting for it.
    mutating func noteGroup(of size: Int) {
        lastGroupSize = size
        let writers = size + waiters.count
        if writers >= expectedGroupSize {
            expectedGroupSize = writers
            smallerGroups = 0
        } else {
            smallerGroups += 1
            if smallerGroups >= CommitQueue.groupSizeMemory {
                expectedGroupSize = writers
                smallerGroups = 0
            }
        }
    }
}

/// One writer waiting in the commit queue.
///
/// A waiter first yields the processor in a loop, checking whether it was signalled, for at
/// most its spin budget (`Options.commitSpinWait`); only then does it sleep on `wake`. A
/// signal to a writer still yielding is one atomic exchange, with no system call: that is
/// most of the time a durable group of 8 writers spends between two fdatasyncs
/// (Docs/Benchmarks.md).
///
/// `@unchecked Sendable`: `result` is written by the leader before it signals, and read by
/// the owner after it saw the signal; the exchange on `state` (release by the leader,
/// acquire by the owner) orders the two, and `wake`'s lock does for a sleeping owner.
final class CommitWaiter: @unchecked Sendable {
    let batch: WriteBatch
    let durability: Durability
    var result: Result<CommitInfo, KVError>?
    /// `waiting` (yielding), `asleep` (on `wake`), or `signalled`. Only the owner moves it
    /// from `waiting` to `asleep`; only `signal` sets `signalled`, from either.
    private let state = Atomic<Int>(CommitWaiter.waiting)
    /// Made by the owner only when it goes to sleep (most waiters never do), before its
    /// exchange to `asleep`; `signal` reads it only after seeing `asleep`, so that exchange
    /// (release, then acquire) publishes it.
    private var wake: ConditionLock<Bool>? = nil

    private static let waiting = 0, asleep = 1, signalled = 2

    init(batch: WriteBatch, durability: Durability) {
        self.batch = batch
        self.durability = durability
    }

    /// Wakes the owner; a system call only when it already sleeps.
    func signal() {
        if state.exchange(CommitWaiter.signalled, ordering: .acquiringAndReleasing) == CommitWaiter.asleep,
           let wake {
            wake.withLock { $0 = true }
            wake.broadcast()
        }
    }

    /// Returns once signalled: yielding for at most `spin` seconds, then asleep. Returns
    /// whether it slept.
    @discardableResult
    func waitForSignal(spinningFor spin: Double) -> Bool {
        let start = monotonicSeconds()
        while spin > 0 {
            if state.load(ordering: .acquiring) == CommitWaiter.signalled { return false }
            if monotonicSeconds() - start >= spin { break }
            sched_yield()
        }
        let wake = ConditionLock(false)
        self.wake = wake
        // Failing the exchange means `signal` came first: no sleep, and its release is seen.
        guard state.compareExchange(expected: CommitWaiter.waiting, desired: CommitWaiter.asleep,
                                    ordering: .acquiringAndReleasing).exchanged else { return false }
        wake.wait(until: { $0 }) { _, _ in }
        return true
    }
}

/// A table and key, as a dictionary key.
///
/// The overlay, the commit path's checks and the group's states each look a written key up,
/// so hashing is on the path of every write. A `TableKey` hashes its bytes once, when it is
/// made, and keeps the result: the commit path makes one per written key and hands it to
/// both its own table of states and the overlay lookup, and every lookup after that mixes
/// the kept digest with the dictionary's seed instead of hashing the bytes again. Equality
/// compares the digests first and the bytes only when they match.
///
/// The digest is the standard library's `Hasher` (SipHash-1-3, keyed by a random seed per
/// process), so keys a client chooses cannot be made to collide without that seed. A cheaper
/// multiply-xor mix was tried first and dropped: flipping a key word's top bit changes its
/// mixed state by a constant, whatever the secret, so colliding keys could be built offline.
struct TableKey: Hashable {
    let table: String
    let key: [UInt8]
    /// SipHash of `table` and `key`; equal keys have equal digests.
    let digest: UInt64
    /// The key's first eight bytes (zero-padded) and its length, held inline: comparing keys
    /// of at most eight bytes (every object store key) touches no key array. Reaching into an
    /// array retains and releases it (two atomic operations), and the overlay compares keys
    /// twice per write of a commit.
    let head: UInt64
    let count: Int

    init(table: String, key: [UInt8]) {
        self.init(table: table, key: key, seeded: TableKey.seededHasher(table))
    }

    /// `seeded`: `seededHasher(table)`, made once for a run of one table's keys.
    @inline(__always)
    init(table: String, key: [UInt8], seeded: Hasher) {
        self.table = table
        self.key = key
        var hasher = seeded
        (head, count) = key.withUnsafeBytes { bytes in
            hasher.combine(bytes: bytes)
            return (TableKey.head(of: bytes), bytes.count)
        }
        digest = UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// A key whose digest was computed before (by this process: digests are seeded), or 0
    /// when none was (a logged operation decoded from the log), and it is computed here.
    init(table: String, key: [UInt8], digest: UInt64) {
        self = digest == 0 ? TableKey(table: table, key: key) : TableKey(table: table, key: key, knownDigest: digest)
    }

    private init(table: String, key: [UInt8], knownDigest digest: UInt64) {
        self.table = table
        self.key = key
        self.digest = digest
        (head, count) = key.withUnsafeBytes { (TableKey.head(of: $0), $0.count) }
    }

    /// The first eight bytes of `bytes`, zero-padded.
    @inline(__always)
    static func head(of bytes: UnsafeRawBufferPointer) -> UInt64 {
        if bytes.count >= 8 { return bytes.loadUnaligned(as: UInt64.self) }
        var head: UInt64 = 0
        withUnsafeMutableBytes(of: &head) { $0.copyMemory(from: bytes) }
        return head
    }

    /// A hasher that has taken `table` (delimited: a table's end is not a key's start).
    static func seededHasher(_ table: String) -> Hasher {
        var hasher = Hasher()
        hasher.combine(table)
        return hasher
    }

    static func == (lhs: TableKey, rhs: TableKey) -> Bool {
        guard lhs.digest == rhs.digest, lhs.count == rhs.count, lhs.head == rhs.head, lhs.table == rhs.table
        else { return false }
        // Keys of at most eight bytes are equal when their heads are.
        if lhs.count <= 8 { return true }
        return lhs.key.withUnsafeBytes { left in
            rhs.key.withUnsafeBytes { right in memcmp(left.baseAddress! + 8, right.baseAddress! + 8, left.count - 8) == 0 }
        }
    }

    func hash(into hasher: inout Hasher) { hasher.combine(digest) }

    /// What Dictionary and Set call: the digest mixed with the table's seed, no `Hasher`.
    func _rawHashValue(seed: Int) -> Int {
        Int(truncatingIfNeeded: TableKey.mix(digest ^ UInt64(truncatingIfNeeded: seed)))
    }

    /// MurmurHash3's 64-bit finaliser, a bijection: every input bit reaches every output bit,
    /// so tables with different seeds place the same digests differently.
    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        var value = value
        value ^= value >> 33
        value &*= 0xFF51_AFD7_ED55_8CCD
        value ^= value >> 33
        value &*= 0xC4CE_B9FE_1A85_EC53
        value ^= value >> 33
        return value
    }
}

/// The digests of a batch's keys seen so far: enough to tell that its keys are all different
/// (different digests mean different keys), without holding the keys.
///
/// An open-addressing table of the digests themselves, probed linearly from the digest's low
/// bits. A digest is already a keyed hash of its key (SipHash with the process's secret
/// seed), so its bits place it as well as any hash of it would, and keys chosen to collide
/// cannot be built without the seed. `Set` hashed each digest again and went through its
/// generic insertion: about 100 instructions a key, a tenth of the commit path's check of a
/// large batch.
struct DigestSet: ~Copyable {
    private let slots: UnsafeMutableBufferPointer<UInt64>
    private let mask: Int
    /// Whether the digest 0 was inserted (0 marks an empty slot).
    private var hasZero = false

    /// Room for `count` digests, at most three quarters full. With a `count` of 0 it holds
    /// nothing and allocates nothing (a batch of one key has nothing to compare).
    init(capacity count: Int) {
        guard count > 0 else {
            slots = UnsafeMutableBufferPointer(start: nil, count: 0)
            mask = 0
            return
        }
        var size = 16
        while size * 3 < count * 4 { size *= 2 }
        slots = .allocate(capacity: size)
        slots.initialize(repeating: 0)
        mask = size - 1
    }

    deinit { slots.deallocate() }

    /// Adds `digest`; false when it was there already. At most `capacity` digests.
    mutating func insert(_ digest: UInt64) -> Bool {
        precondition(!slots.isEmpty, "DigestSet made with no room")
        if digest == 0 {
            defer { hasZero = true }
            return !hasZero
        }
        var index = Int(truncatingIfNeeded: digest) & mask
        while true {
            let slot = slots[index]
            if slot == 0 {
                slots[index] = digest
                return true
            }
            if slot == digest { return false }
            index = (index + 1) & mask
        }
    }
}

extension StoreCore {
    func commit(_ batch: WriteBatch, durability: Durability) throws(KVError) -> CommitInfo {
        try batch.validate(maxKeySize: maxKeySize)
        let waiter = CommitWaiter(batch: batch, durability: durability)
        let (isLeader, spin) = try commitQueue.withLock { (queue) throws(KVError) -> (Bool, Double) in
            if queue.closed { throw KVError.closed }
            queue.waiters.append(waiter)
            return (queue.waiters.count == 1, queue.spinBudget(limit: options.commitSpinWait))
        }
        // Woken once: either done by a leader, or made the head of the queue.
        if !isLeader { waiter.waitForSignal(spinningFor: spin) }
        if let result = waiter.result { return try result.get() }

        if durability == .full { gatherGroup() }
        let group = commitQueue.withLock { queue in Array(queue.waiters.prefix(max(1, options.maxGroupCommits))) }
        let syncSeconds = lead(group)
        let (next, closing) = commitQueue.withLock { queue -> (CommitWaiter?, Bool) in
            queue.waiters.removeFirst(group.count)
            queue.noteGroup(of: group.count)
            if let syncSeconds { queue.noteSync(seconds: syncSeconds) }
            return (queue.waiters.first, queue.closed)
        }
        // Only `close` waits on the queue's condition, for it to drain.
        if closing { commitQueue.broadcast() }
        for member in group where member !== waiter { member.signal() }
        next?.signal()
        return try waiter.result!.get()
    }

    /// Lets writers of the previous group join this one before it syncs.
    ///
    /// Without it, concurrent writers settle into two alternating half-groups: the writers
    /// of one group are still being woken when the next leader (who queued during the
    /// previous fdatasync) takes the queue, so each fdatasync carries about half of them.
    /// When the last group held more than one commit, the leader yields the processor
    /// while writers keep arriving (each within 20 µs of the one before), for at most
    /// `Options.groupCommitWait`, and stops at once when as many commits are queued as
    /// writers were recently seen committing at once (`CommitQueue.expectedGroupSize`):
    /// without that stop, every group waited 20 µs after its last writer for one that was
    /// not coming. A lone writer never waits: its last group held one commit. Like
    /// PostgreSQL's `commit_delay`, but bounded by arrivals rather than a fixed sleep.
    private func gatherGroup() {
        guard options.groupCommitWait > 0 else { return }
        let (previous, expected, queued) = commitQueue.withLock { ($0.lastGroupSize, $0.expectedGroupSize, $0.waiters.count) }
        let limit = max(1, min(options.maxGroupCommits, expected))
        guard previous > 1 && queued < limit else { return }
        var seen = queued
        let start = monotonicSeconds()
        var lastArrival = start
        while true {
            sched_yield()
            let now = monotonicSeconds()
            let count = commitQueue.withLock { $0.waiters.count }
            if count >= limit || now - start >= options.groupCommitWait { return }
            if count > seen {
                seen = count
                lastArrival = now
            } else if now - lastArrival >= 20e-6 {
                return
            }
        }
    }

    /// Commits one group; sets every member's result. Results are set only once the
    /// group's log append has succeeded: a member whose batch only checks conditions may
    /// have been checked against an earlier member's writes, which count only if logged.
    /// Returns how long the log append took when it synced.
    private func lead(_ group: [CommitWaiter]) -> Double? {
        var syncSeconds: Double? = nil
        do {
            try waitForOverlaySpace()
            let view = try makeSnapshot(reserved: true)
            defer { view.close() }
            var knownTables = overlay.withLock { state in Set(state.tableHandles.keys).union(state.pendingTables) }
            var groupVersions: [TableKey: RecordState] = [:]
            var nextVersion = view.version + 1
            var commits: [LoggedCommit] = []
            var accepted: [(member: CommitWaiter, info: CommitInfo)] = []
            try view.withStateReader { (reader) throws(KVError) in
                for member in group {
                    do throws(KVError) {
                        let outcome = try evaluate(member.batch, reader: &reader, viewVersion: view.version,
                                                   group: &groupVersions, knownTables: &knownTables,
                                                   isLast: member === group.last)
                        if outcome.operations.isEmpty {
                            accepted.append((member, CommitInfo(version: nextVersion - 1, recordVersions: outcome.versions)))
                            continue
                        }
                        commits.append(LoggedCommit(version: nextVersion, operations: outcome.operations,
                                                    payloadSize: outcome.payloadSize))
                        accepted.append((member, CommitInfo(version: nextVersion, recordVersions: outcome.versions)))
                        nextVersion += 1
                    } catch {
                        member.result = .failure(error)
                    }
                }
            }
            // Done reading. Closed before the publish, so the view does not count as a live
            // snapshot that still needs the versions this group replaces.
            view.close()
            if !commits.isEmpty {
                let sync = accepted.contains { $0.member.durability == .full }
                let appendStart = monotonicSeconds()
                do {
                    try log.withLock { (log) throws(KVError) in try log.append(commits, sync: sync) }
                } catch {
                    for (member, _) in accepted { member.result = .failure(error) }
                    return nil
                }
                if sync { syncSeconds = monotonicSeconds() - appendStart }
                // The versions the commits replaced are freed once the lock is released, not
                // while readers and the applier wait for it.
                let (wakeApplier, replaced) = overlay.withLock { state in
                    let replaced = state.publish(commits)
                    return (state.bytes >= options.applyThreshold, replaced)
                }
                if wakeApplier { overlay.broadcast() }
                _ = consume replaced
            }
            for (member, info) in accepted { member.result = .success(info) }
        } catch {
            for member in group where member.result == nil { member.result = .failure(error) }
        }
        return syncSeconds
    }

    /// Checks a batch's conditions against the latest state plus the group's earlier
    /// commits; returns the operations to log and each operation's resulting version.
    ///
    /// `isLast`: no later batch of the group reads `group`, so this one's states need not go
    /// there.
    private func evaluate(_ batch: WriteBatch, reader: inout StateReader, viewVersion: UInt64,
                          group: inout [TableKey: RecordState], knownTables: inout Set<String>,
                          isLast: Bool) throws(KVError)
        -> (operations: [LoggedOperation], versions: [UInt64], payloadSize: Int)
    {
        var evaluation = BatchEvaluation(viewVersion: viewVersion, tableLimit: options.maxTables - 1)
        var local: [TableKey: RecordState] = [:]
        evaluation.versions.reserveCapacity(batch.operations.count)
        evaluation.operations.reserveCapacity(batch.operations.count)
        if batch.operations.count > 64 { local.reserveCapacity(batch.operations.count) }
        // The group's last batch (often its only one) keeps no states for later batches. While
        // each of its keys' digests differs from the ones before, so do the keys, and no
        // operation can see an earlier one's outcome: each is checked against the latest state
        // (and the group's earlier batches) alone, with no table of the batch's own states (a
        // hash table entry per key, holding the key, freed at the end). At the first repeated
        // digest (a key written twice, or two keys sharing a digest) the batch starts again on
        // the general path below.
        // The operations are reached through a pointer, in place (see `evaluateOne`).
        let batchOperations = batch.operations
        let count = batchOperations.count
        if isLast {
            var distinct = true
            var seen = DigestSet(capacity: count > 1 ? count : 0)
            try batchOperations.withUnsafeBufferPointer { (operations) throws(KVError) in
                for index in operations.indices {
                    let operation = operations.baseAddress! + index
                    let tableKey = evaluation.tableKey(of: operation)
                    if count > 1, !seen.insert(tableKey.digest) {
                        distinct = false
                        break
                    }
                    var slot = RecordState.unresolved
                    try evaluation.evaluateOne(operation, tableKey: tableKey, slot: &slot, reader: &reader,
                                               group: group, knownTables: &knownTables)
                }
            }
            if distinct {
                if !evaluation.failures.isEmpty { throw KVError.conditionFailed(evaluation.failures) }
                return (evaluation.operations, evaluation.versions, evaluation.payloadSize)
            }
            evaluation.restart()
        }
        try batchOperations.withUnsafeBufferPointer { (operations) throws(KVError) in
            for index in operations.indices {
                let operation = operations.baseAddress! + index
                let tableKey = evaluation.tableKey(of: operation)
                try evaluation.evaluateOne(operation, tableKey: tableKey, slot: &local[tableKey, default: .unresolved],
                                           reader: &reader, group: group, knownTables: &knownTables)
            }
        }
        if !evaluation.failures.isEmpty { throw KVError.conditionFailed(evaluation.failures) }
        if group.isEmpty { group = local } else { group.merge(local) { _, new in new } }
        return (evaluation.operations, evaluation.versions, evaluation.payloadSize)
    }

    /// Back-pressure: waits while the overlay is over its bound and the applier can drain
    /// it. Also where a dead applier poisons the commit path.
    private func waitForOverlaySpace() throws(KVError) {
        let full = { (state: OverlayState) in state.bytes >= self.options.overlayLimit && state.unappliedCount > 0 }
        let mustWait = try overlay.withLock { (state) throws(KVError) -> Bool in
            if let error = state.applyError { throw KVError.poisoning(error) }
            if full(state) { state.flushRequested = true }
            return full(state)
        }
        guard mustWait else { return }
        overlay.broadcast()
        while true {
            let outcome = try overlay.wait(
                until: { !full($0) || $0.applyError != nil || $0.stopping },
                timeout: options.mapFullTimeout
            ) { (state, ready) throws(KVError) -> Bool in
                if let error = state.applyError { throw KVError.poisoning(error) }
                if state.stopping { throw KVError.closed }
                if ready { return true }
                if state.mapGrowthPending {
                    throw KVError.mapFull(mapSize: self.env.info.mapSize, openSnapshots: state.liveSnapshots.count)
                }
                state.flushRequested = true
                return false
            }
            if outcome { return }
        }
    }
}

/// One batch's check in progress (see `StoreCore.evaluate`): what it has made so far, and the
/// run of one table its keys are in.
///
/// A struct whose steps are mutating methods, handed everything else as parameters, rather
/// than local functions capturing `evaluate`'s variables: the operations are walked inside a
/// closure (`withUnsafeBufferPointer`), and variables that local functions captured there
/// were boxed and checked for exclusive access at run time on every read and write, about
/// 2.5M instructions for a batch of 10,000 keys.
private struct BatchEvaluation {
    let viewVersion: UInt64
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

    init(viewVersion: UInt64, tableLimit: Int) {
        self.viewVersion = viewVersion
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
        case .put(let table, let key, _, _), .delete(let table, let key, _), .check(let table, let key, _):
            if table != runTable {
                seeded = TableKey.seededHasher(table)
                runTable = table
                runTableBytes = table.utf8.count
            }
            return TableKey(table: table, key: key, seeded: seeded)
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
            if runTable != lastTable, let table = runTable, !knownTables.contains(table) {
                // LMDB's table limit is fixed at open; past it the applier could not
                // create the table, so refuse here, before anything is logged.
                guard knownTables.count < tableLimit else {
                    throw KVError.tooManyTables(limit: tableLimit)
                }
                knownTables.insert(table)
            }
            lastTable = runTable
            // A put continues from a tombstone's version: a key's versions never repeat.
            let next = state.version + 1
            var replacesTombstone = false
            if case .deleted = state { replacesTombstone = true }
            let logged = operation.pointee.logged(recordVersion: next, replacesTombstone: replacesTombstone,
                                                  digest: tableKey.digest)
            payloadSize += LoggedCommit.size(tableBytes: runTableBytes, keyBytes: tableKey.count,
                                             valueBytes: logged.value?.count)
            operations.append(logged)
            slot = .live(next)
            versions.append(next)
        case .delete:
            if state.exists {
                operations.append(operation.pointee.logged(recordVersion: current, replacesTombstone: false,
                                                           digest: tableKey.digest))
                payloadSize += LoggedCommit.size(tableBytes: runTableBytes, keyBytes: tableKey.count, valueBytes: nil)
                slot = .deleted(current)
            }
            versions.append(0)
        case .check:
            versions.append(current)
        }
        if let condition {
            let holds: Bool
            switch condition {
            case .absent: holds = !state.exists
            case .version(let expected): holds = state.exists && current == expected
            }
            if !holds {
                failures.append(FailedCondition(table: operation.pointee.table, key: operation.pointee.key,
                                                expected: condition, currentVersion: current))
            }
        }
    }
}
