import CairnTestSupport
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Tests for defects found by reading the engine closely; each names what went wrong.
@Suite struct DefectRegressionTests {
    @Test func aSnapshotNeverAnswersWithACommitNewerThanItsVersion() throws {
        // One writer updates one key, so its record version equals the commit version that
        // wrote it. A snapshot's LMDB read used to begin after its version was chosen, so
        // the applier could slip a newer commit in between.
        var options = busyOptions()
        options.applyInterval = 0.0005
        options.applyThreshold = 1
        try withStore(options) { store, _ in
            try store.put("k", "0")
            let stop = ConditionLock(false)
            let writer = startThread {
                var index = 1
                while !stop.withLock({ $0 }) {
                    var batch = WriteBatch()
                    batch.put(String(index), forKey: "k")
                    try! store.commit(batch, durability: .normal)
                    // Caught up after every commit: snapshots then read from LMDB alone,
                    // where a late-begun read transaction would see the next commit.
                    try! store.flush()
                    index += 1
                }
            }
            defer {
                stop.withLock { $0 = true }
                pthread_join(writer, nil)
            }
            for _ in 0..<3000 {
                let snapshot = try store.snapshot()
                let record = try #require(try snapshot.get("k"))
                #expect(record.version <= snapshot.version, "snapshot at \(snapshot.version) read record version \(record.version)")
                snapshot.close()
            }
        }
    }

    @Test func closingWhileSnapshotsAreBeingTakenNeverCrashes() throws {
        for _ in 0..<40 {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let store = try Store(directory: directory.path)
            try store.put("k", "v")
            let takers = (0..<3).map { _ in
                startThread {
                    while true {
                        do {
                            let snapshot = try store.snapshot()
                            _ = try? snapshot.get("k")
                            snapshot.close()
                        } catch {
                            return  // closed
                        }
                    }
                }
            }
            usleep(2000)
            store.close()
            for taker in takers { pthread_join(taker, nil) }
        }
    }

    @Test func commitsKeepWorkingWhenOpenSnapshotsHoldEveryReaderSlot() throws {
        var options = Store.Options()
        options.maxReaders = 6
        try withStore(options) { store, _ in
            try store.put("k", "v")
            var held: [Snapshot] = []
            var refusal: KVError? = nil
            while refusal == nil && held.count < 10 {
                do { held.append(try store.snapshot()) } catch let error as KVError { refusal = error }
            }
            // The engine keeps one slot for its commit leader; the rest went to snapshots.
            #expect(held.count == 5)
            guard case .lmdb(let code, _)? = refusal else {
                Issue.record("expected MDB_READERS_FULL, got \(String(describing: refusal))")
                return
            }
            #expect(code == lmdbReadersFull)
            for index in 0..<20 { try store.put("k\(index)", "v") }  // commits still go through
            held.removeLast().close()
            let snapshot = try store.snapshot()  // a freed slot can be taken again
            #expect(try snapshot.get("k19") != nil)
            snapshot.close()
            held.forEach { $0.close() }
        }
    }

    @Test func shutDownReportsAFinalSyncThatFailed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fileSystem = FaultFileSystem()
        var options = lazyOptions()
        options.durability = .normal
        let store = try Store(directory: directory.path, options: options, fileSystem: fileSystem)
        try store.put("k", "v")  // acknowledged without a sync
        fileSystem.inject(.sync, at: 1, errno: EIO)  // the sync the final flush needs
        do {
            try store.shutDown()
            Issue.record("shutDown hid a failed sync")
        } catch {
            var underlying = error
            while case .poisoned(let inner) = underlying { underlying = inner }
            guard case .io(let code, _, _) = underlying else {
                Issue.record("expected the injected I/O error, got \(error)")
                return
            }
            #expect(code == EIO)
        }
        #expect(throws: KVError.closed) { try store.put("k", "w") }
        store.close()  // closing again is harmless and reports nothing
    }

    @Test func aFailedApplierPoisonsCommitsAtOnce() throws {
        try withStore { store, _ in
            try store.put("k", "v")
            let failure = KVError.lmdb(code: 5, operation: "mdb_txn_commit")
            store.core.overlay.withLock { $0.applyError = failure }
            #expect(throws: KVError.poisoned(failure)) { try store.put("k", "w") }
            #expect(throws: KVError.poisoned(failure)) { try store.put("other", "w") }
            #expect(try store.string("k") == "v")
        }
    }

    @Test func aCommitThatWouldExceedTheTableLimitIsRefusedBeforeLogging() throws {
        var options = Store.Options()
        options.maxTables = 4  // the meta table plus three
        try withStore(options) { store, directory in
            for table in ["a", "b", "c"] { try store.put("k", "v", in: table) }
            let before = try store.stats().commitVersion
            #expect(throws: KVError.tooManyTables(limit: 3)) { try store.put("k", "v", in: "d") }
            #expect(try store.stats().commitVersion == before)
            try store.put("k", "again", in: "a")  // existing tables still take commits
            try store.flush()
            #expect(try store.string("k", in: "a") == "again")
        }
    }

    @Test func aCorruptRecordCanBeReplacedOrDeletedWithoutACondition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        let marker = "corrupt-me-" + String(repeating: "Z", count: 30)
        var batch = WriteBatch()
        batch.put(marker, forKey: "bad")
        batch.put(marker.uppercased() + "2", forKey: "bad2")
        try store.commit(batch)
        store.close()
        let path = directory.path + "/data.mdb"
        var data = try readFile(path)
        for needle in [Array(marker.utf8), Array((marker.uppercased() + "2").utf8)] {
            guard let offset = firstIndex(of: needle, in: data) else {
                Issue.record("value not found in the data file")
                return
            }
            data[offset + 3] ^= 0x01
        }
        try writeFile(path, data)
        let reopened = try Store(directory: directory.path)
        defer { reopened.close() }
        #expect(throws: KVError.self) { try reopened.put("bad", "x", if: .version(1)) }
        let repaired = try reopened.put("bad", "fresh")
        #expect(try reopened.string("bad") == "fresh")
        #expect(repaired.recordVersions[0] > 1)
        var delete = WriteBatch()
        delete.delete("bad2")
        try reopened.commit(delete)
        #expect(try reopened.string("bad2") == nil)
    }

    @Test func underNormalDurabilityTheLogIsSyncedBeforeLMDBGetsACommit() throws {
        var options = Store.Options()
        options.durability = .normal
        // Nothing applies (and so syncs) on its own while the commits go in.
        options.applyInterval = 3600
        options.applyThreshold = Int.max
        try withStore(options) { store, _ in
            for index in 0..<20 { try store.put("k\(index)", "v") }
            #expect(try store.stats().durableVersion < 20)  // nothing forced a sync yet
            try store.flush()
            let stats = try store.stats()
            #expect(stats.appliedVersion == 20)
            #expect(stats.durableVersion >= stats.appliedVersion)
        }
    }

    @Test func usingASnapshotInsideItsOwnClosureStopsWithAMessage() async throws {
        // The child stops before it could remove its store; the parent removes the scratch.
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            let directory = try TemporaryDirectory(in: parent)
            let store = try Store(directory: directory.path)
            try store.put("k", "v")
            let snapshot = try store.snapshot()
            try snapshot.forEach { _, _, _ in
                _ = try snapshot.get("k")  // would deadlock
                return true
            }
        }.map { result in
            let message = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(message.contains("inside a closure that is reading from the same snapshot"))
        }
    }
}
