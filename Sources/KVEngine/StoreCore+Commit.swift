import Locking
// The commit path: a FIFO of waiting writers; the one at the head leads a bounded group,
// checks its conditions, appends it to the log once, syncs once, publishes it to the
// overlay and wakes the others with their results.

#if canImport(Glibc)
import Glibc
#endif

extension StoreCore {
    func commit(_ batch: consuming WriteBatch, durability: Durability) throws(KVError) -> CommitInfo {
        if options.readOnly { throw KVError.readOnly(path: directory) }
        try batch.validate(maxKeySize: maxKeySize)
        let waiter = CommitWaiter(batch: consume batch, durability: durability)
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
            var knownTables = overlay.withLock { state in KnownTables(handles: state.tableHandles, pending: state.pendingTables) }
            var groupVersions: [TableKey: RecordState] = [:]
            var nextVersion = view.version + 1
            var commits: [LoggedCommit] = []
            var accepted: [(member: CommitWaiter, info: CommitInfo)] = []
            // The group's writes for the overlay, in commit order: a member that fails its
            // check takes its own back out.
            var inserts = OverlayInserts()
            try view.withStateReader { (reader) throws(KVError) in
                for member in group {
                    let mark = inserts.count
                    do throws(KVError) {
                        let outcome = try evaluate(member.takeOperations(), reader: &reader, viewVersion: view.version,
                                                   commitVersion: nextVersion,
                                                   group: &groupVersions, knownTables: &knownTables,
                                                   isLast: member === group.last, inserts: &inserts)
                        if outcome.operations.isEmpty {
                            accepted.append((member, CommitInfo(version: nextVersion - 1, recordVersions: outcome.versions)))
                            continue
                        }
                        commits.append(LoggedCommit(version: nextVersion, operations: outcome.operations,
                                                    payloadSize: outcome.payloadSize))
                        accepted.append((member, CommitInfo(version: nextVersion, recordVersions: outcome.versions)))
                        nextVersion += 1
                    } catch {
                        inserts.removeLast(from: mark)
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
                    try log.withLock { (log) throws(KVError) in
                        try log.append(commits, sync: sync)
                        // Under the log lock, so marks fill their slots in turn.
                        if let published, let (mark, count) = log.takeMark() { published.publishMark(mark, count: count) }
                    }
                } catch {
                    for (member, _) in accepted { member.result = .failure(error) }
                    return nil
                }
                if sync { syncSeconds = monotonicSeconds() - appendStart }
                // Before any member hears of it: a reader process that starts after the
                // acknowledgment must see the commit.
                published?.publish(commits[commits.count - 1].version)
                // The versions the commits replaced are freed once the lock is released, not
                // while readers and the applier wait for it.
                let (wakeApplier, replaced) = overlay.withLock { state in
                    let replaced = state.publish(commits, inserts: &inserts)
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
    ///
    /// `commitVersion`: the version the batch gets if it writes (its version-keyed puts' key).
    ///
    /// The operations are consumed one by one (see `BatchEvaluation`): reversed in place, then
    /// each moved out of the array's end (`removeLast`), so the array is empty when it is
    /// freed. A placeholder swapped in for each, instead, left one per operation for the
    /// array's end to destroy, each through the enum's destroy function: about 90 instructions
    /// an operation, 1.5M of a 20,000-operation batch.
    private func evaluate(_ batchOperations: consuming [WriteBatch.Operation], reader: inout StateReader,
                          viewVersion: UInt64, commitVersion: UInt64,
                          group: inout [TableKey: RecordState], knownTables: inout KnownTables,
                          isLast: Bool, inserts: inout OverlayInserts) throws(KVError)
        -> (operations: [LoggedOperation], versions: [UInt64], payloadSize: Int)
    {
        var operations = batchOperations
        let count = operations.count
        // Moves only: a buffer's `swapAt` moves its elements, never copies (retains) them.
        operations.withUnsafeMutableBufferPointer { $0.reverse() }
        var evaluation = BatchEvaluation(viewVersion: viewVersion, commitVersion: commitVersion, tableLimit: options.maxTables - 1)
        evaluation.versions.reserveCapacity(count)
        evaluation.operations.reserveCapacity(count)
        inserts.reserve(count)
        var next = 0
        // The group's last batch (often its only one) keeps no states for later batches. While
        // each of its keys' digests differs from the ones before, so do the keys, and no
        // operation can see an earlier one's outcome: each is checked against the latest state
        // (and the group's earlier batches) alone, with no table of the batch's own states (a
        // hash table entry per key, holding the key, freed at the end). At the first repeated
        // digest (a key written twice, or two keys sharing a digest) the rest of the batch
        // goes the general way below, with the states the operations before it left.
        var local: [TableKey: RecordState] = [:]
        if isLast {
            var seen = DigestSet(capacity: count > 1 ? count : 0)
            while next < count {
                let operation = operations.removeLast()
                let tableKey = evaluation.tableKey(of: operation)
                if count > 1, !seen.insert(tableKey.digest) {
                    local = evaluation.statesLeft()
                    try evaluation.evaluate(operation, tableKey: tableKey, slot: &local[tableKey, default: .unresolved],
                                            reader: &reader, group: group, knownTables: &knownTables, inserts: &inserts)
                    next += 1
                    break
                }
                var slot = RecordState.unresolved
                try evaluation.evaluate(operation, tableKey: tableKey, slot: &slot, reader: &reader,
                                        group: group, knownTables: &knownTables, inserts: &inserts)
                next += 1
            }
            if next == count && local.isEmpty {
                if !evaluation.failures.isEmpty { throw KVError.conditionFailed(evaluation.failures) }
                return (evaluation.operations, evaluation.versions, evaluation.payloadSize)
            }
        } else if count > 64 {
            local.reserveCapacity(count)
        }
        while next < count {
            let operation = operations.removeLast()
            let tableKey = evaluation.tableKey(of: operation)
            try evaluation.evaluate(operation, tableKey: tableKey, slot: &local[tableKey, default: .unresolved],
                                    reader: &reader, group: group, knownTables: &knownTables, inserts: &inserts)
            next += 1
        }
        if !evaluation.failures.isEmpty { throw KVError.conditionFailed(evaluation.failures) }
        if !isLast {
            if group.isEmpty { group = local } else { group.merge(local) { _, new in new } }
        }
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
