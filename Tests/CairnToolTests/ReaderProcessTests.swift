import Foundation
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Readers in other processes than the writer's (`Store.Options.readOnly`, and the `cairn`
// reading commands beside a held store): what they read is a prefix of the acknowledged
// commits and includes every commit acknowledged before they began, while writers and
// readers are killed with SIGKILL at random moments and checkpoints retire segments.

extension CairnToolTests {
    @Suite struct ReaderProcessTests {
        static let torture = ProcessInfo.processInfo.environment["CAIRN_TORTURE"] == "1"

        @Test(.timeLimit(.minutes(5)))
        func readerProcessesSeeAPrefixOfTheAcknowledgedCommitsWhileWritersAndReadersAreKilled() throws {
            _ = try CairnBinary.require()
            signal(SIGPIPE, SIG_IGN)
            var (random, seed) = SeededRandom.announced("CAIRN_READER_SEED", by: "ReaderProcessTests")
            let directory = try TemporaryDirectory(purpose: "readers")
            defer { directory.remove() }
            let store = directory.path + "/store"
            let rounds = Self.torture ? 12 : 3, probes = Self.torture ? 10 : 4, readersPerProbe = 3
            // Per finished round: what its writer acknowledged before it was killed.
            var finished: [Int: Int] = [:]
            var checkedScans = 0, killedReaders = 0
            for round in 0..<rounds {
                // Paced: every scan reads (and this test parses) the whole store, so an unpaced
                // writer made each round's scans longer the faster it wrote (948 s at torture
                // size once, 1.3 s short); 2,000 commits a second still write under every scan.
                let writer = try FedIngest(store: store, round: round, linesPerSecond: 2_000)
                #expect(writer.waitForAcknowledgements(1), "round \(round) (seed \(seed)): the writer acknowledged nothing")
                for probe in 0..<probes {
                    let before = writer.acknowledged
                    let readers = try (0..<readersPerProbe).map { _ in try ReaderRun(["scan", store]) }
                    // One reader of each probe dies at a random moment, mid-scan or not.
                    let victim = Int.random(in: 0..<readersPerProbe, using: &random)
                    usleep(UInt32.random(in: 0...30_000, using: &random))
                    readers[victim].kill9()
                    killedReaders += 1
                    for (index, reader) in readers.enumerated() where index != victim {
                        let (status, lines) = try reader.finish()
                        #expect(status == 0, "round \(round) probe \(probe) (seed \(seed)): scan exited \(status)")
                        let (counts, problems) = prefixesPerRound(lines)
                        #expect(problems.isEmpty, "round \(round) probe \(probe) (seed \(seed)): \(problems.prefix(3))")
                        #expect(counts[round, default: 0] >= before,
                                "round \(round) probe \(probe) (seed \(seed)): \(counts[round, default: 0]) records, \(before) acknowledged before the scan began")
                        for (old, acknowledged) in finished {
                            #expect(counts[old, default: 0] >= acknowledged,
                                    "round \(round) (seed \(seed)): round \(old) shows \(counts[old, default: 0]) of its \(acknowledged) acknowledged records")
                        }
                        checkedScans += 1
                    }
                    usleep(UInt32.random(in: 1_000...40_000, using: &random))
                }
                let acknowledged = writer.kill9()
                finished[round] = acknowledged
                #expect(acknowledged > 0)
            }
            // The last writer's store, read after every kill: still sound, nothing lost.
            let final = try cairn("scan", store)
            let (counts, problems) = prefixesPerRound(final.lines)
            #expect(problems.isEmpty, "seed \(seed): \(problems.prefix(3))")
            for (round, acknowledged) in finished {
                #expect(counts[round, default: 0] >= acknowledged, "seed \(seed): round \(round) lost acknowledged records")
            }
            #expect(try cairn("check", store).status == 0)
            print("ReaderProcessTests: \(rounds) writers killed, \(checkedScans) scans checked, \(killedReaders) readers killed, seed \(seed)")
        }

        @Test(.timeLimit(.minutes(2)))
        func aReaderProcessOpenedDuringCheckpointsSeesEveryAcknowledgedCommit() throws {
            _ = try CairnBinary.require()
            let directory = try TemporaryDirectory(purpose: "checkpoint-readers")
            defer { directory.remove() }
            var options = Store.Options()
            options.segmentSize = 8 << 10
            options.durability = .normal
            let store = try Store(directory: directory.path, options: options)
            defer { store.close() }
            let acknowledged = Counter()
            let stop = StopFlag()
            let removed = Counter()
            let writer = Thread {
                var index = 0
                while !stop.isSet {
                    var batch = WriteBatch()
                    batch.put("value-0-\(index)", forKey: "key-0-\(index)")
                    guard (try? store.commit(batch)) != nil else { return }
                    index += 1
                    acknowledged.set(index)
                }
            }
            let checkpointer = Thread {
                while !stop.isSet {
                    if let report = try? store.checkpoint() { removed.add(report.segmentsRemoved) }
                    usleep(2_000)
                }
            }
            writer.start()
            checkpointer.start()
            defer { stop.set() }
            var scans = 0
            let probes = Self.torture ? 60 : 12
            for probe in 0..<probes {
                let before = acknowledged.value
                let arguments = probe % 3 == 2 ? ["get", directory.path, "key-0-\(max(before - 1, 0))"] : ["scan", directory.path]
                let (status, lines) = try ReaderRun(arguments).finish()
                #expect(status == 0, "probe \(probe): cairn \(arguments) exited \(status)")
                if arguments[0] == "get" {
                    #expect(lines == ["value-0-\(max(before - 1, 0))"], "probe \(probe): \(lines)")
                } else {
                    let (counts, problems) = prefixesPerRound(lines)
                    #expect(problems.isEmpty, "probe \(probe): \(problems.prefix(3))")
                    #expect(counts[0, default: 0] >= before, "probe \(probe): \(counts[0, default: 0]) records, \(before) acknowledged before")
                }
                scans += 1
            }
            stop.set()
            while writer.isExecuting || checkpointer.isExecuting { usleep(1_000) }
            #expect(removed.value > 0, "no checkpoint retired a segment while the readers ran: nothing was exercised")
            print("aReaderProcessOpenedDuringCheckpoints: \(scans) readers, \(acknowledged.value) commits, \(removed.value) segments retired")
        }

        @Test(.timeLimit(.minutes(2)))
        func aReadOnlyStoreFollowsAWriterProcessReadingOnlyWhatIsNew() throws {
            _ = try CairnBinary.require()
            signal(SIGPIPE, SIG_IGN)
            let directory = try TemporaryDirectory(purpose: "follow")
            defer { directory.remove() }
            let path = directory.path + "/store"
            let first = try FedIngest(store: path, round: 0)
            #expect(first.waitForAcknowledgements(300))
            var options = Store.Options()
            options.readOnly = true
            let reader = try Store(directory: path, options: options)
            defer { reader.close() }

            // Every commit acknowledged before a snapshot is in it, from LMDB or the log.
            let seen = first.acknowledged
            let snapshot = try reader.snapshot()
            defer { snapshot.close() }
            #expect(try snapshot.get("key-0-\(seen - 1)")?.value == Array("value-0-\(seen - 1)".utf8))

            // A refresh reads only the records appended since the last one, each once. The writer
            // is stopped (SIGSTOP) while the figures are read, so that both are of one moment.
            let writerPid = first.process.processIdentifier
            func pausedFigures() throws -> StoreStats {
                kill(writerPid, SIGSTOP)
                defer { kill(writerPid, SIGCONT) }
                usleep(50_000)
                return try reader.stats()
            }
            let before = try pausedFigures()
            // The writer publishes a commit before its "ok" line reaches us, so the count of
            // acknowledgements may trail the reader's view: wait until the view itself moved on.
            var after = before
            for _ in 0..<20 where after.commitVersion < before.commitVersion + 5 {
                #expect(first.waitForAcknowledgements(first.acknowledged + 5))
                after = try pausedFigures()
            }
            #expect(after.commitVersion >= before.commitVersion + 5)
            let read = after.followedLogRecords - before.followedLogRecords
            #expect(read == Int(after.commitVersion - before.commitVersion),
                    "a refresh over \(after.commitVersion - before.commitVersion) new commits read \(read) log records")
            #expect(before.readOnly)

            // Only a reader: refused commits write nothing, and so are flush and checkpoint.
            var batch = WriteBatch()
            batch.put("x", forKey: "reader-wrote")
            #expect(throws: KVError.readOnly(path: path)) { try reader.commit(batch) }
            #expect(throws: KVError.readOnly(path: path)) { try reader.flush() }
            #expect(throws: KVError.readOnly(path: path)) { try reader.checkpoint() }
            // A second writer process is refused, naming the first, and writes nothing.
            let second = try cairn("put", path, "second-writer", "x")
            #expect(second.status == 3 && second.errorOutput.contains("locked by pid \(first.process.processIdentifier)"), "\(second)")

            // The writer dies; the open snapshot still reads, and a new one has everything
            // acknowledged. A new writer (a new generation) continues; the reader follows it.
            let killedAt = first.kill9()
            #expect(try snapshot.get("key-0-0") != nil)
            let afterKill = try reader.snapshot()
            #expect(try afterKill.get("key-0-\(killedAt - 1)")?.value == Array("value-0-\(killedAt - 1)".utf8))
            afterKill.close()
            let next = try FedIngest(store: path, round: 1)
            #expect(next.waitForAcknowledgements(100))
            let resumed = next.acknowledged
            let fresh = try reader.snapshot()
            #expect(try fresh.get("key-1-\(resumed - 1)")?.value == Array("value-1-\(resumed - 1)".utf8))
            #expect(try fresh.get("key-0-\(killedAt - 1)") != nil)
            #expect(try fresh.get("second-writer") == nil && fresh.get("reader-wrote") == nil)
            fresh.close()
            _ = next.kill9()
        }

        @Test(.timeLimit(.minutes(2)))
        func aReaderWhoseCommitsTheNextWriterLostExpiresItsSnapshotsAndFollowsTheNewHistory() throws {
            _ = try CairnBinary.require()
            signal(SIGPIPE, SIG_IGN)
            let directory = try TemporaryDirectory(purpose: "lost-history")
            defer { directory.remove() }
            let path = directory.path + "/store"
            var options = Store.Options()
            options.readOnly = true
            // The writer is killed with commits LMDB has not applied yet (the applier runs every
            // 50 ms); a try where it had applied everything is run again.
            for attempt in 0..<10 {
                let writer = try FedIngest(store: path, round: attempt)
                #expect(writer.waitForAcknowledgements(100))
                let reader = try Store(directory: path, options: options)
                defer { reader.close() }
                _ = writer.kill9()
                let held = try reader.snapshot()
                defer { held.close() }
                let figures = try reader.stats()
                // What LMDB holds is read from its newest meta page, not through the lock file
                // this reader shares: a writer killed between its meta page's write and
                // lock.mdb's update leaves the reader's view of LMDB one transaction behind,
                // while `cairn recover` (the next writer) sees the meta page.
                let applied = try StoreCore.appliedVersionOnDisk(directory: path)
                #expect(applied >= figures.appliedVersion)
                guard figures.commitVersion > applied + 1 else { continue }
                // Damage the first record LMDB lacks; `cairn recover` cuts the log there, losing
                // every commit from it on, which this reader has shown.
                print("lost history: attempt \(attempt), LMDB applied \(applied) (the reader's view: \(figures.appliedVersion)), the reader showed \(figures.commitVersion)")
                let lost = applied + 1
                try Self.flipByte(ofRecord: lost, in: path + "/wal")
                let recovered = try cairn("recover", path)
                #expect(recovered.status == 0 && recovered.output.contains("lost"), "\(recovered)")
                let fresh = try reader.snapshot()
                defer { fresh.close() }
                #expect(fresh.version == applied, "the new history ends where LMDB's did")
                #expect(throws: KVError.self) { _ = try held.get(Array("key-\(attempt)-0".utf8)) }
                // Every commit wrote one key never written before: the keys count the commits kept.
                #expect(try Self.keys(in: fresh).count == Int(applied), "commits above the cut are gone, those below kept")
                return
            }
            Issue.record("the writer had applied every commit when it was killed, in every attempt")
        }

        /// Flips a byte inside the payload of the log record of `version`.
        static func flipByte(ofRecord version: UInt64, in wal: String) throws {
            for name in try FileManager.default.contentsOfDirectory(atPath: wal).sorted() where name.hasSuffix(".log") {
                let file = wal + "/" + name
                var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
                var offset = LogFormat.segmentHeaderSize
                while case .record(let found, _, let payload, let next) = bytes.withUnsafeBytes({ LogRecordReader.read($0, at: offset) }) {
                    if found == version {
                        bytes[payload.lowerBound] ^= 0xFF
                        try Data(bytes).write(to: URL(fileURLWithPath: file))
                        return
                    }
                    offset = next
                }
            }
            Issue.record("no log record of version \(version)")
        }

        /// The keys a snapshot holds, in key order.
        static func keys(in snapshot: Snapshot) throws -> [String] {
            var keys: [String] = []
            try snapshot.forEach { key, _, _ in
                keys.append(String(decoding: key, as: UTF8.self))
                return true
            }
            return keys
        }

        @Test(.timeLimit(.minutes(2)))
        func aReaderAdoptsTheMapSizeTheWriterGrewPastItsOwn() throws {
            _ = try CairnBinary.require()
            let directory = try TemporaryDirectory(purpose: "reader-map")
            defer { directory.remove() }
            let path = directory.path + "/store"
            #expect(try cairn("put", path, "small", "v").status == 0)
            var options = Store.Options()
            options.readOnly = true
            options.mapSize = 1 << 20
            let reader = try Store(directory: path, options: options)
            defer { reader.close() }
            #expect(try reader.snapshot().get("small")?.value == Array("v".utf8))
            #expect(try reader.stats().mapSize == 1 << 20)
            // Writer processes (with the default 64 GiB map) write more than the reader's map
            // holds: its next snapshot meets MDB_MAP_RESIZED and, holding no other, takes the
            // writer's map size.
            let large = String(repeating: "x", count: 100_000)
            for index in 0..<14 {
                let put = try cairn("put", path, "large-\(index)", large)
                #expect(put.status == 0, "\(put)")
            }
            let grown = try reader.snapshot()
            defer { grown.close() }
            #expect(try grown.get("large-13")?.value.count == 100_000)
            #expect(try grown.get("small")?.value == Array("v".utf8))
            #expect(try reader.stats().mapSize > 1 << 20)
        }

        @Test(.timeLimit(.minutes(2)))
        func aReaderKilledInsideASnapshotLeavesNoSlotTheWriterTripsOver() throws {
            _ = try CairnBinary.require()
            let directory = try TemporaryDirectory(purpose: "dead-reader")
            defer { directory.remove() }
            let store = try Store(directory: directory.path)
            defer { store.close() }
            var batch = WriteBatch()
            for index in 0..<4_000 { batch.put(Array(repeating: 0x61, count: 200), forKey: Array("key-\(index)".utf8)) }
            try store.commit(batch)
            try store.flush()
            // `cairn scan` into a pipe nobody reads: it blocks inside its snapshot, holding a
            // reader slot, until it is killed.
            let pipe = Pipe()
            let scan = Process()
            scan.executableURL = URL(fileURLWithPath: try CairnBinary.require())
            scan.arguments = ["scan", directory.path]
            scan.standardOutput = pipe
            scan.standardError = FileHandle.nullDevice
            try scan.run()
            var waiting = pollfd(fd: pipe.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            #expect(poll(&waiting, 1, 20_000) == 1, "the reader never began its scan")
            usleep(200_000)
            kill(scan.processIdentifier, SIGKILL)
            scan.waitUntilExit()
            try? pipe.fileHandleForReading.close()
            let deadline = Date().addingTimeInterval(10)
            while try store.stats().staleReadersCleared == 0 && Date() < deadline { usleep(50_000) }
            #expect(try store.stats().staleReadersCleared >= 1, "the writer never reclaimed the dead reader's slot")
            var update = WriteBatch()
            update.put("after", forKey: "key-0")
            try store.commit(update)
            try store.flush()
            #expect(try store.snapshot().get("key-0")?.value == Array("after".utf8))
        }
    }
}

/// An integer several threads set and read.
///
/// `Sendable`: the value is behind the package's lock.
final class Counter: Sendable {
    private let count = ConditionLock<Int>(0)
    var value: Int { count.withLock { $0 } }
    func set(_ value: Int) { count.withLock { $0 = value } }
    func add(_ value: Int) { count.withLock { $0 += value } }
}
