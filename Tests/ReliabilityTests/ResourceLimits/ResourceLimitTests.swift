import CairnTestSupport
import Foundation
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Running out of something: file space held by a pinned snapshot, reader slots, map
/// space while snapshots are open, disk space.
///
/// Each test's work takes seconds, but its time limit (there to stop a hang) counts until the
/// test runner resumes the test after its body returns. Under `make torture` the other
/// reliability suites hold the runner's few threads for minutes with synchronous sweeps, so
/// a test whose work ended in its first seconds was resumed after 340 s once, and failed a
/// five-minute limit (2026-12-01). The limits are the torture suites' own, thirty minutes.
@Suite(.serialized) struct ResourceLimitTests {
    func options(mapSize: Int = 64 << 20) -> Store.Options {
        var options = Store.Options()
        options.applyInterval = 0.002
        options.applyThreshold = 16 << 10
        options.mapSize = mapSize
        options.durability = .normal
        return options
    }

    /// Rewrites `keys` keys with `size`-byte values, `rounds` times, and waits for LMDB.
    func rewrite(_ store: Store, keys: Int, size: Int, rounds: Int, tag: String) throws {
        for round in 0..<rounds {
            var batch = WriteBatch()
            for key in 0..<keys {
                batch.put(String(repeating: "\(tag)\(round % 10)", count: size / 2), forKey: "key\(key)")
            }
            try store.commit(batch)
            try store.flush()
        }
    }

    /// A long-lived snapshot keeps LMDB from reusing the pages of every later version, so
    /// the data file grows while it is open; `stats()` names its version and age; once it is
    /// closed the same work reuses pages and the growth stops.
    /// `Options.maxSnapshotLag` and `maxSnapshotAge` bound it (the next test).
    @Test(.timeLimit(.minutes(30)))
    func aPinnedSnapshotGrowsTheFileUntilItCloses() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-pinned")
        defer { directory.remove() }
        let store = try Store(directory: directory.path, options: options())
        defer { store.close() }
        try rewrite(store, keys: 200, size: 2000, rounds: 3, tag: "a")
        let pinned = try store.snapshot()
        usleep(50_000)
        let start = try store.stats()
        #expect(start.oldestSnapshotVersion == pinned.version)
        #expect((start.oldestSnapshotAge ?? 0) >= 0.04)
        try rewrite(store, keys: 200, size: 2000, rounds: 25, tag: "b")
        let whilePinned = try store.stats()
        #expect(whilePinned.oldestSnapshotVersion == pinned.version)
        #expect((whilePinned.oldestSnapshotAge ?? 0) > (start.oldestSnapshotAge ?? 0))
        // The pinned snapshot still reads its own version.
        #expect(try pinned.get("key7")?.value.first == UInt8(ascii: "a"))
        pinned.close()
        try rewrite(store, keys: 200, size: 2000, rounds: 3, tag: "c")  // lets LMDB free the old pages
        let afterClose = try store.stats()
        #expect(afterClose.oldestSnapshotVersion == nil && afterClose.oldestSnapshotAge == nil)
        try rewrite(store, keys: 200, size: 2000, rounds: 25, tag: "d")
        let end = try store.stats()
        let grewPinned = whilePinned.lmdbFileBytes - start.lmdbFileBytes
        let grewUnpinned = end.lmdbFileBytes - afterClose.lmdbFileBytes
        Reliability.report("resources", "pinned snapshot: data file grew \(grewPinned) bytes over 25 rewrites while pinned, \(grewUnpinned) after it closed")
        #expect(grewPinned > 1 << 20)
        #expect(grewUnpinned < grewPinned / 4)
    }

    /// The same forgotten snapshot under `Options.maxSnapshotLag`: the applier expires it
    /// once it falls too far behind, its reads fail with `snapshotExpired`, and the file
    /// grows by what the last few commits wrote, not by all of them.
    @Test(.timeLimit(.minutes(30)))
    func maxSnapshotLagBoundsTheGrowthAPinnedSnapshotCauses() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-pinned-bounded")
        defer { directory.remove() }
        var bounded = options()
        bounded.maxSnapshotLag = 3
        let store = try Store(directory: directory.path, options: bounded)
        defer { store.close() }
        try rewrite(store, keys: 200, size: 2000, rounds: 3, tag: "a")
        let pinned = try store.snapshot()
        defer { pinned.close() }
        let start = try store.stats()
        #expect(start.oldestSnapshotVersion == pinned.version)
        try rewrite(store, keys: 200, size: 2000, rounds: 25, tag: "b")
        let end = try store.stats()
        #expect(end.expiredSnapshots == 1)
        #expect(end.oldestSnapshotVersion == nil)
        var expired = false
        do { _ = try pinned.get("key7") } catch { if case .snapshotExpired = error { expired = true } }
        #expect(expired)
        let grew = end.lmdbFileBytes - start.lmdbFileBytes
        Reliability.report("resources", "pinned snapshot under maxSnapshotLag 3: data file grew \(grew) bytes over 25 rewrites")
        // The snapshot pins the pages of at most lag + 1 rewrites of 400 KB before it expires
        // (about 1.6 MB); unbounded, the same 25 rewrites grow the file by about 18 MB.
        #expect(grew < 3 << 20)
    }

    /// With every reader slot taken, a new snapshot fails with LMDB's MDB_READERS_FULL as a
    /// typed error, commits keep working (the engine keeps a slot of its own for the commit
    /// leader), and closing a snapshot frees a slot.
    @Test(.timeLimit(.minutes(30)))
    func exhaustedReaderSlotsAreATypedErrorAndCloseFreesThem() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-readers")
        defer { directory.remove() }
        var options = self.options()
        options.maxReaders = 8
        let store = try Store(directory: directory.path, options: options)
        defer { store.close() }
        var batch = WriteBatch()
        batch.put("v", forKey: "k")
        try store.commit(batch)
        var snapshots: [Snapshot] = []
        var failure: KVError? = nil
        while failure == nil && snapshots.count < 10_000 {
            do { snapshots.append(try store.snapshot()) } catch { failure = error }
        }
        // One slot is the engine's own (the commit leader's view).
        #expect(snapshots.count >= options.maxReaders - 1)
        guard case .lmdb(let code, _)? = failure else {
            Issue.record("expected MDB_READERS_FULL after \(snapshots.count) snapshots, got \(String(describing: failure))")
            return
        }
        #expect(code == lmdbReadersFull)
        Reliability.report("resources", "reader slots: \(snapshots.count) snapshots for maxReaders \(options.maxReaders), then \(failure!)")
        // Readers cannot stop writers: the commit leader's view uses the reserved slot.
        for _ in 0..<3 { try store.commit(batch) }
        snapshots.removeLast().close()
        let again = try store.snapshot()
        #expect(try again.get("k")?.value == Array("v".utf8))
        again.close()
        try store.commit(batch)
        for snapshot in snapshots { snapshot.close() }
    }

    /// A process that dies holding reader slots does not keep them: the next open of the
    /// store gets every slot back.
    ///
    /// (Also seen here: `Options.maxReaders` only takes effect when lock.mdb is created;
    /// reopening with a smaller value keeps the old, larger table, as LMDB sizes the table
    /// from an existing lock file.)
    @Test(.timeLimit(.minutes(30)))
    func readerSlotsOfAKilledProcessAreReclaimed() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-stale-readers")
        defer { directory.remove() }
        let storePath = directory.path + "/store"
        var options = self.options()
        options.maxReaders = 8
        // LMDB sizes the reader table when it creates lock.mdb; a later open with a smaller
        // `maxReaders` keeps the larger table. Create it with the small one.
        try Store(directory: storePath, options: options).close()
        let results = directory.path + "/results"
        let process = try ChildProcess.start(
            role: ReaderHolder.role,
            arguments: ["STORE": storePath, "MAXREADERS": "8", "COUNT": "100000", "RESULTS": results],
            outputPath: directory.path + "/output")
        let deadline = monotonicNow() + 60
        while ChildProcess.completeLines(results).isEmpty && process.isRunning && monotonicNow() < deadline { usleep(5_000) }
        let held = ChildProcess.completeLines(results).first ?? "nothing"
        #expect(ChildProcess.kill9(process) == .signaled(SIGKILL), "the reader holder ended before the kill: \(held)")
        let taken = Int(held.split(separator: " ").last ?? "") ?? 0
        #expect(held.hasPrefix("ready") && taken >= 7, "\(held)")
        let store = try Store(directory: storePath, options: options)
        defer { store.close() }
        var snapshots: [Snapshot] = []
        while snapshots.count < taken, let snapshot = try? store.snapshot() { snapshots.append(snapshot) }
        #expect(snapshots.count == taken, "the dead process's \(taken) slots: only \(snapshots.count) came back")
        Reliability.report("resources", "stale readers: a killed process held \(taken) slots; the next open got \(snapshots.count) back")
        for snapshot in snapshots { snapshot.close() }
    }

    /// The map must double many times while reader threads keep opening short snapshots:
    /// the applier waits for a moment with no snapshot open, grows the map, and nothing fails
    /// or reads wrong.
    @Test(.timeLimit(.minutes(30)))
    func theMapGrowsWhileSnapshotsComeAndGo() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-map-growth")
        defer { directory.remove() }
        var options = self.options(mapSize: 256 << 10)
        options.mapFullTimeout = 30
        let store = try Store(directory: directory.path, options: options)
        defer { store.close() }
        let writersDone = ConditionLock(false)
        let problems = ConditionLock<[String]>([])
        let value = [UInt8](repeating: 0x6D, count: 1500)
        runThreads(4) { thread in
            if thread == 0 {
                defer { writersDone.withLock { $0 = true } }
                for round in 0..<60 {
                    var batch = WriteBatch()
                    for index in 0..<40 { batch.put(value, forKey: Array("r\(round)-\(index)".utf8)) }
                    do { try store.commit(batch) } catch {
                        problems.withLock { $0.append("commit \(round): \(error)") }
                        return
                    }
                }
                return
            }
            var random = SeededRandom(seed: UInt64(thread))
            while !writersDone.withLock({ $0 }) {
                do {
                    let snapshot = try store.snapshot()
                    let round = random.int(60)
                    if let record = try snapshot.get("r\(round)-\(random.int(40))"), record.value != value {
                        problems.withLock { $0.append("read a wrong value of round \(round)") }
                    }
                    snapshot.close()
                } catch {
                    problems.withLock { $0.append("snapshot: \(error)") }
                    return
                }
                usleep(UInt32(random.int(500)))
            }
        }
        for problem in problems.withLock({ $0 }).prefix(5) { Issue.record("\(problem)") }
        try store.flush()
        let stats = try store.stats()
        #expect(stats.mapSize > 256 << 10)
        #expect(stats.recordCount == 2400)
        Reliability.report("resources", "map growth under snapshots: map grew from \(256 << 10) to \(stats.mapSize) bytes, \(stats.recordCount) records")
    }

    /// The disk fills up: every log write fails with ENOSPC from some point on. The commit
    /// that hits it gets the typed error, later ones `poisoned`, reads keep working; while
    /// the disk stays full the store reopens for reading only (every acknowledged commit
    /// reads, commits fail with the disk-full error, nothing damaged); once space is back it
    /// opens with every acknowledged commit.
    @Test(.timeLimit(.minutes(30)))
    func aFullDiskIsATypedErrorAndLosesNothingAcknowledged() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-disk-full")
        defer { directory.remove() }
        let disk = FaultFileSystem()
        var options = self.options()
        options.durability = .full
        options.segmentSize = 8 << 10
        let store = try Store(directory: directory.path, options: options, fileSystem: disk)
        let fullAfter = 25
        for occurrence in fullAfter..<(fullAfter + 1000) { disk.inject(.write, at: occurrence, errno: ENOSPC) }
        var acknowledged: [String] = []
        var errors: [KVError] = []
        for index in 0..<60 {
            var batch = WriteBatch()
            batch.put(String(repeating: "x", count: 300), forKey: "k\(index)")
            do {
                try store.commit(batch)
                acknowledged.append("k\(index)")
            } catch {
                errors.append(error)
            }
        }
        // One write per commit, apart from a rotation's header and seal.
        #expect(acknowledged.count >= fullAfter - 3 && acknowledged.count <= fullAfter - 1, "\(acknowledged.count)")
        guard let first = errors.first else {
            Issue.record("no commit failed on a full disk")
            return
        }
        #expect(first == .io(errno: ENOSPC, operation: "write", path: first.path))
        #expect(errors.dropFirst().allSatisfy { $0 == .poisoned(first) }, "\(Set(errors.map(\.description)))")
        let snapshot = try store.snapshot()
        #expect(try snapshot.get(acknowledged.last!)?.value.count == 300)
        snapshot.close()
        store.simulateCrash()

        // Still full: opening cannot start a fresh segment, so the store opens for reading
        // only: every acknowledged commit reads, commits fail with the disk-full error.
        let stillFull = disk.afterPowerLoss(.dropUnsynced, seed: 1)
        for occurrence in 1...100 { stillFull.inject(.write, at: occurrence, errno: ENOSPC) }
        do {
            let reading = try Store(directory: directory.path, options: options, fileSystem: stillFull)
            #expect(reading.recoveryReport.openedReadOnly?.isDiskFull == true, "\(reading.recoveryReport)")
            let view = try reading.snapshot()
            for key in acknowledged { #expect(try view.get(key)?.value.count == 300, "\(key) unreadable on a full disk") }
            view.close()
            var batch = WriteBatch()
            batch.put("x", forKey: "refused")
            let refused = #expect(throws: KVError.self) { try reading.commit(batch) }
            #expect(refused?.isDiskFull == true, "\(String(describing: refused))")
            reading.close()
        }
        // Space is back.
        let freed = stillFull.afterPowerLoss(.dropUnsynced, seed: 2)
        let reopened = try Store(directory: directory.path, options: options, fileSystem: freed)
        defer { reopened.close() }
        let after = try reopened.snapshot()
        for key in acknowledged { #expect(try after.get(key)?.value.count == 300, "\(key) lost") }
        after.close()
        Reliability.report("resources", "disk full: \(acknowledged.count) commits acknowledged, then \(first); \(errors.count - 1) later commits refused as poisoned; reopened with all acknowledged")
    }
}

extension KVError {
    /// The path of an I/O error ("" for other errors).
    var path: String {
        if case .io(_, _, let path) = self { return path }
        return ""
    }
}
