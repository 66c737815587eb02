import CairnTestSupport
import Foundation
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct CommitTests {
    @Test func recordVersionsStartAtOneAndCountUpdates() throws {
        try withStore { store, _ in
            #expect(try store.put("k", "a").recordVersions == [1])
            #expect(try store.put("k", "b").recordVersions == [2])
            let snapshot = try store.snapshot()
            #expect(try snapshot.get("k")?.version == 2)
            #expect(text(try snapshot.get("k")?.value) == "b")
            snapshot.close()
            var batch = WriteBatch()
            batch.delete("k")
            #expect(try store.commit(batch).recordVersions == [0])
            #expect(try store.string("k") == nil)
            // A re-inserted key continues from the version it was deleted at.
            #expect(try store.put("k", "c", if: .absent).recordVersions == [3])
            #expect(try store.put("fresh", "x").recordVersions == [1])
        }
    }

    @Test(arguments: [false, true])
    func aWriterHoldingAnOldVersionCannotOverwriteAReinsertedRecord(applyBetween: Bool) throws {
        // The ABA case: A reads k at version 1; B deletes k; C inserts k again. A's write
        // conditioned on version 1 must fail, whether the delete is still in the overlay or
        // already a tombstone in LMDB.
        try withStore(applyBetween ? Store.Options() : lazyOptions()) { store, _ in
            try store.put("k", "original")
            let seenByA = try #require(try store.snapshot().recordVersion(of: bytes("k")))
            var delete = WriteBatch()
            delete.delete("k", if: .version(seenByA))
            try store.commit(delete)
            if applyBetween { try store.flush() }
            let reinserted = try store.put("k", "reinserted", if: .absent)
            #expect(reinserted.recordVersions == [2])
            if applyBetween { try store.flush() }
            #expect(throws: KVError.conditionFailed([FailedCondition(table: "default", key: bytes("k"),
                                                                     expected: .version(1), currentVersion: 2)])) {
                try store.put("k", "stale write by A", if: .version(seenByA))
            }
            #expect(try store.string("k") == "reinserted")
        }
    }

    @Test func deletesLeaveTombstonesThatReadsScansAndCountsIgnore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        var batch = WriteBatch()
        for index in 0..<10 { batch.put("v\(index)", forKey: "k\(index)") }
        try store.commit(batch)
        batch = WriteBatch()
        for index in stride(from: 0, to: 10, by: 2) { batch.delete("k\(index)") }
        batch.delete("never-existed")
        try store.commit(batch)
        try store.flush()
        let snapshot = try store.snapshot()
        #expect(try snapshot.scan().map { text($0.key)! } == ["k1", "k3", "k5", "k7", "k9"])
        #expect(try snapshot.scan(reverse: true).count == 5)
        #expect(try snapshot.get("k4") == nil)
        #expect(try snapshot.recordVersion(of: bytes("k4")) == nil)
        snapshot.close()
        #expect(try store.stats().recordCount == 5)
        // A put over a tombstone makes it live again; the count follows.
        try store.put("k4", "back", if: .absent)
        try store.flush()
        #expect(try store.stats().recordCount == 6)
        store.close()
        let report = try Store.check(directory: directory.path)
        #expect(report.isSound, "\(report.problems)")
        #expect(report.recordsPerTable["default"] == 6)
        let reopened = try Store(directory: directory.path)
        defer { reopened.close() }
        #expect(try reopened.stats().recordCount == 6)
        #expect(try reopened.snapshot().get("k4")?.version == 2)
    }

    @Test func commitVersionsIncreaseByOnePerCommit() throws {
        try withStore { store, _ in
            var last: UInt64 = 0
            for index in 0..<50 {
                let version = try store.put("k\(index % 7)", "v\(index)").version
                #expect(version == last + 1)
                last = version
            }
        }
    }

    @Test func aFailedConditionWritesNothingAndListsEveryFailure() throws {
        try withStore { store, _ in
            try store.put("a", "1")
            try store.put("b", "1")
            try store.put("b", "2")
            let before = try store.stats().commitVersion
            var batch = WriteBatch()
            batch.put("x", forKey: "new")                     // would succeed alone
            batch.put("a2", forKey: "a", if: .version(1))     // holds
            batch.put("b2", forKey: "b", if: .version(1))     // fails: b is at 2
            batch.put("c", forKey: "c", if: .version(4))      // fails: c is absent
            batch.delete("a", if: .absent)                    // fails: a is at 2 after the put above
            do {
                try store.commit(batch)
                Issue.record("commit should have failed")
            } catch KVError.conditionFailed(let failures) {
                #expect(failures.map { text($0.key) } == ["b", "c", "a"])
                #expect(failures.map(\.currentVersion) == [2, 0, 2])
                #expect(failures[0].expected == .version(1))
            }
            #expect(try store.string("new") == nil)
            #expect(try store.string("a") == "1")
            #expect(try store.stats().commitVersion == before)
        }
    }

    @Test func conditionsSeeEarlierOperationsOfTheSameBatchAndGroup() throws {
        try withStore { store, _ in
            var batch = WriteBatch()
            batch.put("1", forKey: "k", if: .absent)
            batch.put("2", forKey: "k", if: .version(1))
            batch.require(.version(2), forKey: Array("k".utf8))
            let info = try store.commit(batch)
            #expect(info.recordVersions == [1, 2, 2])
            #expect(try store.string("k") == "2")
        }
    }

    /// A batch is checked without a table of its own states while its keys are all different;
    /// a key written again late in the batch sends it back to the general path, which must
    /// give the same versions and failures as if it had taken that path from the start.
    @Test func aKeyRepeatedLateInALargeBatchSeesItsEarlierWrite() throws {
        try withStore { store, _ in
            try store.put("k7", "old")   // at version 1
            var batch = WriteBatch()
            for index in 0..<100 { batch.put("v", forKey: "k\(index)", if: index == 7 ? .version(1) : .absent) }
            batch.put("again", forKey: "k50", if: .version(1))   // the batch's own first write of k50
            batch.require(.version(2), forKey: Array("k7".utf8))
            let info = try store.commit(batch)
            #expect(info.recordVersions == Array(repeating: 1, count: 7) + [2] + Array(repeating: 1, count: 92) + [2, 2])
            #expect(try store.string("k50") == "again")

            var failing = WriteBatch()
            failing.put("x", forKey: "k1", if: .version(5))       // fails: k1 is at 1
            for index in 100..<150 { failing.put("v", forKey: "k\(index)", if: .absent) }
            failing.delete("k120", if: .version(2))               // fails: this batch puts k120 at 1
            do {
                try store.commit(failing)
                Issue.record("commit should have failed")
            } catch KVError.conditionFailed(let failures) {
                #expect(failures.map { text($0.key) } == ["k1", "k120"])
                #expect(failures.map(\.currentVersion) == [1, 1])
            }
            #expect(try store.string("k100") == nil)
        }
    }

    /// When a key repeats, the rest of the batch is checked against the states its earlier
    /// operations left, rebuilt from what they logged: a versioned delete leaves a tombstone
    /// that a later put continues from, an unversioned put a live entry at version 0, an
    /// unversioned delete nothing, and a check or a delete of an absent key what the store
    /// holds.
    @Test func aRepeatedKeySeesEveryKindOfEarlierOperation() throws {
        try withStore { store, _ in
            try store.put("gone", "old")   // at version 1
            var setup = WriteBatch()
            setup.putUnversioned(Array("entry".utf8), forKey: Array("was".utf8), in: WriteBatch.defaultTable)
            try store.commit(setup)
            var batch = WriteBatch()
            batch.delete("gone", if: .version(1))                                               // a tombstone at 1
            batch.putUnversioned(Array("e".utf8), forKey: Array("entry".utf8), in: WriteBatch.defaultTable)
            batch.deleteUnversioned(Array("was".utf8), in: WriteBatch.defaultTable)              // no tombstone
            batch.require(.absent, forKey: Array("never".utf8))                                 // logs nothing
            batch.delete("absent")                                                              // logs nothing
            for index in 0..<50 { batch.put("v", forKey: "k\(index)", if: .absent) }
            batch.put("k0 again", forKey: "k0", if: .version(1))                                // the repeat
            batch.put("back", forKey: "gone", if: .absent)                                      // continues from 1
            batch.require(.version(0), forKey: Array("entry".utf8))
            batch.put("new", forKey: "was", if: .absent)
            batch.require(.absent, forKey: Array("never".utf8))
            batch.put("now", forKey: "absent", if: .absent)
            let info = try store.commit(batch)
            #expect(info.recordVersions == [0, 0, 0, 0, 0] + Array(repeating: 1, count: 50) + [2, 2, 0, 1, 0, 1])
            #expect(try store.string("gone") == "back")
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            #expect(try snapshot.recordVersion(of: Array("gone".utf8)) == 2)
            #expect(try store.string("k0") == "k0 again")
            #expect(try store.string("was") == "new")
        }
    }

    @Test func concurrentConditionalIncrementsLoseNoUpdate() throws {
        // Many threads do read-modify-write with a version condition, retrying on conflict:
        // the final count equals the number of successful commits.
        try withStore(busyOptions()) { store, _ in
            try store.put("counter", "0")
            let threads = 8, perThread = 40
            DispatchApply.run(threads) { _ in
                var done = 0
                while done < perThread {
                    let snapshot = try! store.snapshot()
                    let record = try! snapshot.get("counter")!
                    snapshot.close()
                    let next = Int(text(record.value)!)! + 1
                    var batch = WriteBatch()
                    batch.put(String(next), forKey: "counter", if: .version(record.version))
                    do {
                        try store.commit(batch)
                        done += 1
                    } catch KVError.conditionFailed {
                        continue
                    } catch {
                        Issue.record("unexpected \(error)")
                        return
                    }
                }
            }
            let snapshot = try store.snapshot()
            let record = try #require(try snapshot.get("counter"))
            #expect(text(record.value) == String(threads * perThread))
            #expect(record.version == UInt64(threads * perThread + 1))
        }
    }

    @Test func concurrentCommitsAreGroupedIntoFewerSyncs() throws {
        try withStore { store, _ in
            DispatchApply.run(16) { thread in
                for index in 0..<50 { try! store.put("t\(thread)-\(index)", "v") }
            }
            let stats = try store.stats()
            #expect(stats.commitVersion == 800)
            // With 16 writers, commits share fdatasyncs; one per commit would be 800.
            #expect(stats.logSyncs < 800)
            #expect(stats.logSyncs >= 1)
        }
    }

    /// The gather stops once as many commits are queued as writers were seen committing at
    /// once; this pins how that number is kept.
    @Test func theExpectedGroupSizeCountsWritersQueuedDuringAGroupAndForgetsSlowly() {
        var queue = CommitQueue()
        func queueWriters(_ count: Int) {
            queue.waiters = (0..<count).map { _ in CommitWaiter(batch: WriteBatch(), durability: .full) }
        }
        queue.noteGroup(of: 8)
        #expect(queue.lastGroupSize == 8)
        #expect(queue.expectedGroupSize == 8)
        // A group of 7 while one writer queued meanwhile: still 8 writers at once.
        queueWriters(1)
        queue.noteGroup(of: 7)
        #expect(queue.lastGroupSize == 7)
        #expect(queue.expectedGroupSize == 8)
        // More writers than before count at once.
        queueWriters(3)
        queue.noteGroup(of: 9)
        #expect(queue.expectedGroupSize == 12)
        // Fewer writers: one short group, or fifteen, change nothing; the sixteenth in a row does.
        queueWriters(0)
        for _ in 1..<CommitQueue.groupSizeMemory {
            queue.noteGroup(of: 4)
            #expect(queue.expectedGroupSize == 12)
        }
        queue.noteGroup(of: 4)
        #expect(queue.expectedGroupSize == 4)
        // A full-size group resets the count of short ones.
        queue.noteGroup(of: 3)
        queue.noteGroup(of: 4)
        for _ in 1..<CommitQueue.groupSizeMemory { queue.noteGroup(of: 3) }
        #expect(queue.expectedGroupSize == 4)
    }

    /// A writer waiting for its group yields first and sleeps only after its budget; a signal
    /// reaches it in either state, and one sent before it waits is not lost.
    @Test func aWaitingWriterYieldsBeforeItSleepsAndNoSignalIsLost() async {
        let signalledFirst = CommitWaiter(batch: WriteBatch(), durability: .full)
        signalledFirst.signal()
        #expect(signalledFirst.waitForSignal(spinningFor: 0) == false, "a waiter signalled before it waits must not sleep")

        // Signalled 20 ms into a 30 s budget: seen while yielding, no sleep.
        let yielding = CommitWaiter(batch: WriteBatch(), durability: .full)
        let start = monotonicSeconds()
        Thread.detachNewThread { usleep(20_000); yielding.signal() }
        #expect(yielding.waitForSignal(spinningFor: 30) == false)
        #expect(monotonicSeconds() - start < 10, "the yielding waiter missed its signal")

        // No budget: asleep at once, and still woken.
        let sleeping = CommitWaiter(batch: WriteBatch(), durability: .full)
        Thread.detachNewThread { usleep(20_000); sleeping.signal() }
        #expect(sleeping.waitForSignal(spinningFor: 0) == true)

        // Many signals racing the switch from yielding to sleeping: every waiter returns.
        let waiters = (0..<200).map { _ in CommitWaiter(batch: WriteBatch(), durability: .full) }
        let returned = ConditionLock(0)
        let done = DispatchGroup()
        for (index, waiter) in waiters.enumerated() {
            done.enter()
            Thread.detachNewThread {
                waiter.waitForSignal(spinningFor: Double(index % 4) * 50e-6)
                returned.withLock { $0 += 1 }
                done.leave()
            }
            Thread.detachNewThread {
                usleep(UInt32(index % 7) * 30)
                waiter.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(returned.value == waiters.count, "a signal was lost between yielding and sleeping")
    }

    /// Waiters yield only while the disk syncs fast; a slow disk's writers sleep at once.
    @Test func writersYieldOnlyWhileSyncsAreFast() {
        var queue = CommitQueue()
        #expect(queue.spinBudget(limit: 1e-3) == 1e-3, "before any sync")
        queue.noteSync(seconds: 100e-6)
        #expect(queue.recentSyncSeconds == 100e-6)
        #expect(queue.spinBudget(limit: 1e-3) == 1e-3)
        // One slow sync moves the average an eighth of the way.
        queue.noteSync(seconds: 4.1e-3)
        #expect(abs(queue.recentSyncSeconds - 600e-6) < 1e-9)
        #expect(queue.spinBudget(limit: 1e-3) == 0)
        for _ in 0..<40 { queue.noteSync(seconds: 100e-6) }
        #expect(queue.spinBudget(limit: 1e-3) == 1e-3)
        #expect(queue.spinBudget(limit: 0) == 0)
    }

    @Test func badKeysAndTablesAreTypedErrors() throws {
        try withStore { store, _ in
            var batch = WriteBatch()
            batch.put([1], forKey: [UInt8](repeating: 7, count: 512))
            #expect(throws: KVError.keyTooLong(length: 512, limit: 511)) { try store.commit(batch) }
            batch = WriteBatch()
            batch.put([1], forKey: [UInt8](repeating: 7, count: 511))
            #expect(try store.commit(batch).recordVersions == [1])
            batch = WriteBatch()
            batch.put([1], forKey: [])
            #expect(throws: KVError.emptyKey) { try store.commit(batch) }
            batch = WriteBatch()
            batch.put("v", forKey: "k", in: "__cairn_meta")
            #expect(throws: KVError.invalidTableName("__cairn_meta")) { try store.commit(batch) }
            let snapshot = try store.snapshot()
            #expect(throws: KVError.keyTooLong(length: 600, limit: 511)) {
                _ = try snapshot.get([UInt8](repeating: 1, count: 600))
            }
            #expect(KVError.keyTooLong(length: 512, limit: 511).description.contains("511"))
        }
    }

    /// A batch counts its keys and table names as they are added; a commit checks the counts
    /// and reads the operations again only to name the first bad one, in order.
    @Test func theFirstBadOperationOfABatchIsTheOneReported() throws {
        try withStore { store, _ in
            var batch = WriteBatch()
            batch.put([1], forKey: [1], in: "a")
            batch.put([1], forKey: [UInt8](repeating: 7, count: 600), in: "a")
            batch.delete([], in: "a")
            #expect(throws: KVError.keyTooLong(length: 600, limit: 511)) { try store.commit(batch) }
            batch = WriteBatch()
            batch.put([1], forKey: [1], in: "a")
            batch.require(.absent, forKey: [], in: "a")
            batch.put([1], forKey: [UInt8](repeating: 7, count: 600), in: "a")
            #expect(throws: KVError.emptyKey) { try store.commit(batch) }
            // A bad table name between runs of a good one, and a good name after it.
            batch = WriteBatch()
            batch.put([1], forKey: [1], in: "a")
            batch.delete([2], in: "__cairn_x")
            batch.put([1], forKey: [3], in: "a")
            #expect(throws: KVError.invalidTableName("__cairn_x")) { try store.commit(batch) }
            batch = WriteBatch()
            batch.put([1], forKey: [1], in: String(repeating: "t", count: 201))
            #expect(throws: KVError.invalidTableName(String(repeating: "t", count: 201))) { try store.commit(batch) }
            // Nothing of the refused batches was written.
            #expect(try store.snapshot().get([1], in: "a") == nil)
            // Every kind of operation, across tables, with deletes of absent keys and checks
            // (counted by the batch, not logged): the log record's size is counted as the
            // operations are evaluated, and the writer checks it against the bytes it encodes.
            batch = WriteBatch()
            batch.put([1], forKey: [1], in: "a")
            batch.put([2, 2], forKey: [2], in: "bb")
            try store.commit(batch)
            batch = WriteBatch()
            batch.delete([1], in: "a")
            batch.delete([9], in: "a")
            batch.require(.version(1), forKey: [2], in: "bb")
            batch.put([3, 3, 3], forKey: [3], in: "ccc")
            batch.put([4], forKey: [1], in: "a")
            #expect(try store.commit(batch).recordVersions == [0, 0, 1, 1, 2])
        }
    }

    @Test func tablesAreIndependent() throws {
        try withStore { store, _ in
            try store.put("k", "in-a", in: "a")
            try store.put("k", "in-b", in: "b")
            #expect(try store.string("k", in: "a") == "in-a")
            #expect(try store.string("k", in: "b") == "in-b")
            #expect(try store.string("k") == nil)
            try store.flush()
            #expect(try store.stats().recordsPerTable == ["a": 1, "b": 1])
        }
    }

    @Test func aSecondOpenIsLockedAndNamesThePid() throws {
        try withStore { store, directory in
            #expect(throws: KVError.locked(path: directory.path, pid: getpid())) {
                _ = try Store(directory: directory.path)
            }
            #expect(KVError.locked(path: "/s", pid: 12).description
                == "store /s is locked by pid 12: one process writes a store; others may read it beside the writer (Store.Options.readOnly)")
        }
    }

    @Test func filesAreCreatedWithMode0600() throws {
        try withStore { store, directory in
            try store.put("k", "v")
            for name in ["data.mdb", "lock.mdb", "LOCK"] {
                var info = stat()
                #expect(stat(directory.path + "/" + name, &info) == 0)
                #expect(info.st_mode & 0o777 == 0o600, "\(name) has mode \(String(info.st_mode & 0o777, radix: 8))")
            }
            let segments = try PosixFileSystem().contentsOfDirectory(directory.path + "/wal")
            #expect(!segments.isEmpty)
            for name in segments {
                var info = stat()
                #expect(stat(directory.path + "/wal/" + name, &info) == 0)
                #expect(info.st_mode & 0o777 == 0o600)
            }
        }
    }

    @Test func aFullMapGrowsAndTheWriteIsRetried() throws {
        var options = Store.Options()
        options.mapSize = 256 << 10
        options.applyThreshold = 64 << 10
        try withStore(options) { store, _ in
            let value = String(repeating: "x", count: 1000)
            for round in 0..<40 {
                var batch = WriteBatch()
                for index in 0..<100 { batch.put(value, forKey: "r\(round)-\(index)") }
                try store.commit(batch)
            }
            try store.flush()
            let stats = try store.stats()
            #expect(stats.mapSize > 256 << 10)
            #expect(stats.recordCount == 4000)
            #expect(try store.string("r39-99") == value)
        }
    }

    @Test func aMapThatCannotGrowUnderAnOpenSnapshotFailsWritersClearlyAndLosesNothing() throws {
        var options = Store.Options()
        options.mapSize = 256 << 10
        options.overlayLimit = 256 << 10
        options.applyThreshold = 16 << 10
        options.applyInterval = 0.01
        options.mapFullTimeout = 0.3
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path, options: options)
        let snapshot = try store.snapshot()
        let value = String(repeating: "m", count: 1000)
        var committed = 0
        var failure: KVError? = nil
        while failure == nil && committed < 5000 {
            do {
                try store.put("k\(committed)", value)
                committed += 1
            } catch let error as KVError {
                failure = error
            }
        }
        guard case .mapFull(_, let openSnapshots)? = failure else {
            Issue.record("expected mapFull, got \(String(describing: failure)) after \(committed) commits")
            return
        }
        #expect(openSnapshots >= 1)
        #expect(failure!.description.contains("close them"))
        // Closing the snapshot lets the map grow; nothing acknowledged was lost.
        snapshot.close()
        try store.flush()
        try store.put("after", "ok")
        #expect(try store.string("k\(committed - 1)") == value)
        #expect(try store.stats().recordCount >= committed)
        // And close never hangs, even with a snapshot open while the map is full.
        let blocker = try store.snapshot()
        _ = blocker
        store.close()
        let reopened = try Store(directory: directory.path)
        #expect(try reopened.string("after") == "ok")
        reopened.close()
    }

    @Test func commitsWaitAtTheOverlayBoundAndStatsReportItsPeak() throws {
        var options = Store.Options()
        options.overlayLimit = 64 << 10
        // The applier runs only when a commit at the bound asks it to.
        options.applyThreshold = Int.max
        options.applyInterval = 3600
        try withStore(options) { store, _ in
            let value = String(repeating: "o", count: 1000)
            DispatchApply.run(4) { thread in
                for index in 0..<100 { try! store.put("w\(thread)-\(index)", value) }
            }
            let stats = try store.stats()
            #expect(stats.overlayLimit == 64 << 10)
            // About 400 KB went through a 64 KiB overlay: it filled up to the bound, never far past it.
            #expect(stats.overlayPeakBytes >= 64 << 10)
            #expect(stats.overlayLargestGroupBytes > 1000)
            #expect(stats.overlayLargestGroupBytes <= 4 * 1100)
            #expect(stats.overlayPeakBytes <= stats.overlayLimit + stats.overlayLargestGroupBytes)
            #expect(stats.appliedVersion > 0)
            #expect(stats.commitVersion == 400)
            for thread in 0..<4 {
                #expect(try store.string("w\(thread)-99") == value)
            }
        }
    }

    @Test func openingWithoutCreateRefusesAnEmptyDirectory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var options = Store.Options()
        options.createIfMissing = false
        #expect(throws: KVError.noStore(path: directory.path)) { _ = try Store(directory: directory.path, options: options) }
        #expect(!PosixFileSystem().exists(directory.path + "/data.mdb"))
        #expect(throws: KVError.noStore(path: directory.path)) { _ = try Store.check(directory: directory.path) }
        try Store(directory: directory.path).close()
        let store = try Store(directory: directory.path, options: options)
        store.close()
    }

    @Test func commitsAfterCloseFail() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        try store.put("k", "v")
        store.close()
        #expect(throws: KVError.closed) { try store.put("k", "w") }
        #expect(throws: KVError.closed) { _ = try store.snapshot() }
        let reopened = try Store(directory: directory.path)
        #expect(try reopened.string("k") == "v")
    }
}

/// Runs `body(index)` on `count` threads at once and waits for all of them.
enum DispatchApply {
    static func run(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let threads = (0..<count).map { index in startThread { body(index) } }
        for thread in threads { pthread_join(thread, nil) }
    }
}

/// Large applies go to LMDB in key order, with `MDB_APPEND` for keys above a table's
/// greatest: keys below, among and above existing ones, repeated keys across commits,
/// deletes and tombstones must all land exactly as a key-by-key apply would leave them.
@Suite struct LargeApplyTests {
    @Test func aLargeApplyInKeyOrderLandsEveryWriteExactly() throws {
        var options = lazyOptions()
        options.mapSize = 256 << 20
        try withStore(options) { store, directory in
            // Existing keys: every third of 0..<30000, applied.
            var expected: [String: String] = [:]
            var batch = WriteBatch()
            for index in stride(from: 0, to: 30_000, by: 3) {
                let key = "k" + String(index).leftPadded(to: 6)
                batch.put("old\(index)", forKey: key)
                expected[key] = "old\(index)"
            }
            batch.put("x", forKey: "a-second-table-key", in: "other")
            try store.commit(batch)
            try store.flush()
            // Several commits applied together (the applier waits): new keys among and
            // above the existing ones, rewrites of one key in every commit, deletes.
            for round in 0..<4 {
                var batch = WriteBatch()
                for index in stride(from: round, to: 40_000, by: 4) {
                    let key = "k" + String(index).leftPadded(to: 6)
                    batch.put("r\(round)-\(index)", forKey: key)
                    expected[key] = "r\(round)-\(index)"
                }
                batch.put("round\(round)", forKey: "k999999")
                expected["k999999"] = "round\(round)"
                let doomed = "k" + String(round * 3).leftPadded(to: 6)
                batch.delete(doomed)
                expected[doomed] = nil
                batch.put("t\(round)", forKey: "t\(round)", in: "other")
                try store.commit(batch)
            }
            try store.flush()
            store.close()
            let reopened = try Store(directory: directory.path, options: options)
            #expect(reopened.recoveryReport.replayedCommits == 0)  // all of it was in LMDB
            let snapshot = try reopened.snapshot()
            let records = try snapshot.scan()
            #expect(records.count == expected.count)
            for record in records {
                #expect(expected[text(record.key)!] == text(record.value), "key \(text(record.key)!)")
            }
            #expect(try snapshot.scan(in: "other").count == 5)
            snapshot.close()
            reopened.close()
            #expect(try Store.check(directory: directory.path).isSound == true)
        }
    }
}

/// The commit path reads the versions of records LMDB holds through one cursor kept across a
/// batch (`StateReader`): the same answers as a lookup from the root, whatever the order of
/// the keys and however the batch moves between tables.
@Suite struct StoredVersionCheckTests {
    /// Two tables of 1,500 records each (many leaf pages) with the same keys but different
    /// versions (some updated once, some deleted), applied to LMDB so that every check reads
    /// LMDB, not the overlay. Returns each key's live version (0: deleted) and, for a deleted
    /// key, the version its tombstone holds.
    private func seeded(_ store: Store) throws -> (live: [String: [String: UInt64]], tombstones: [String: [String: UInt64]]) {
        var live: [String: [String: UInt64]] = [:], tombstones: [String: [String: UInt64]] = [:]
        for (table, updateEvery, deleteEvery) in [("alpha", 2, 50), ("beta", 3, 41)] {
            var batch = WriteBatch()
            for index in 0..<1_500 { batch.put("value \(index)", forKey: key(index), in: table) }
            try store.commit(batch)
            batch = WriteBatch()
            for index in stride(from: 0, to: 1_500, by: updateEvery) { batch.put("again \(index)", forKey: key(index), in: table) }
            try store.commit(batch)
            batch = WriteBatch()
            for index in stride(from: 7, to: 1_500, by: deleteEvery) { batch.delete(key(index), in: table) }
            try store.commit(batch)
            for index in 0..<1_500 {
                let version: UInt64 = index % updateEvery == 0 ? 2 : 1
                if index >= 7 && (index - 7) % deleteEvery == 0 {
                    live[table, default: [:]][key(index)] = 0
                    tombstones[table, default: [:]][key(index)] = version
                } else {
                    live[table, default: [:]][key(index)] = version
                }
            }
        }
        try store.flush()
        #expect(try store.stats().overlayBytes == 0)
        return (live, tombstones)
    }

    private func key(_ index: Int) -> String { String(format: "k%05d", index) }

    @Test(arguments: ["ascending", "descending", "shuffled", "each table ascending, with gaps"])
    func conditionsOnStoredRecordsHoldOrFailAsTheirVersionsSay(order: String) throws {
        try withStore { store, _ in
            let (versions, tombstones) = try seeded(store)
            var targets: [(table: String, key: String)] = []
            if order == "each table ascending, with gaps" {
                // One table's keys in order, as a save of fetched objects checks them, found at
                // the record after the one before: with keys never written between stored ones
                // and after the last (absent, as the record after says), and stored keys left
                // out (the record after is not the key: a search).
                for table in ["alpha", "beta"] {
                    for index in 0..<1_500 where index % 7 != 3 {
                        targets.append((table, key(index)))
                        if index % 5 == 0 { targets.append((table, key(index) + "+")) }
                    }
                    targets.append((table, "k99999"))
                }
            } else {
                // Every key of both tables, interleaved.
                for index in 0..<1_500 { targets.append(("alpha", key(index))); targets.append(("beta", key(index))) }
            }
            switch order {
            case "descending": targets.reverse()
            case "shuffled":
                var random = SeededRandom(seed: 20261201)
                targets.shuffle(using: &random)
            default: break
            }
            // Every 97th expects the wrong version. A key never written is at 0.
            var wrong: [FailedCondition] = []
            var batch = WriteBatch()
            for (position, target) in targets.enumerated() {
                let current = versions[target.table]?[target.key] ?? 0
                let condition: Condition
                if position % 97 == 0 {
                    condition = current == 0 ? .version(1) : .version(current + 1)
                    wrong.append(FailedCondition(table: target.table, key: bytes(target.key),
                                                 expected: condition, currentVersion: current))
                } else {
                    condition = current == 0 ? .absent : .version(current)
                }
                batch.require(condition, forKey: bytes(target.key), in: target.table)
            }
            #expect(throws: KVError.conditionFailed(wrong)) { try store.commit(batch) }

            // The same checks, all right this time, with a write of each: every version is
            // the stored one plus one, and a deleted key's continues from its tombstone's.
            batch = WriteBatch()
            for target in targets {
                let current = versions[target.table]?[target.key] ?? 0
                batch.put("checked", forKey: target.key, in: target.table, if: current == 0 ? .absent : .version(current))
            }
            let info = try store.commit(batch)
            let expected = targets.map { target in
                let current = versions[target.table]?[target.key] ?? 0
                return current == 0 ? (tombstones[target.table]?[target.key] ?? 0) + 1 : current + 1
            }
            #expect(info.recordVersions == expected)
        }
    }
}
