import CairnTestSupport
import Contexts
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Persistent history across real processes. A second process cannot open a store while a
// writer holds it (the process lock), so here the other process saves and ends (exits or is
// killed) before this one opens; the remote-change stream after a kept token then announces
// what it did. Watching a live writer from another process, read-only beside it:
// LiveWriterRemoteChangeTests.

@Suite struct RemoteChangeProcessTests {
    /// The child's acknowledged saves: (commit version, item ID), in order.
    static func acknowledged(_ path: String) -> [(version: UInt64, item: ObjectID)] {
        ChildProcess.completeLines(path).compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "saved", let version = UInt64(parts[1]),
                  let id = ObjectID(uriString: String(parts[2])) else { return nil }
            return (version, id)
        }
    }

    static func seedStore(_ path: String) throws -> HistoryToken {
        let objects = try ObjectStore(directory: path, schema: HistoryProcessModel.schema, options: HistoryProcessModel.options())
        defer { objects.close() }
        try HistoryProcessModel.seed(objects)
        return try objects.currentHistoryToken()
    }

    // A hang guard only: beside `make torture`'s long synchronous suites, which hold the
    // 2-core cooperative pool's threads, this async test can wait there for as long as they
    // run (about eight minutes; it failed a five-minute limit once while doing nothing wrong).
    @Test(.timeLimit(.minutes(20)))
    func anotherProcessesSavesAreAnnouncedAfterTheTokenThisOneKept() async throws {
        let directory = try TemporaryDirectory(prefix: "cairn-history-process")
        defer { directory.remove() }
        let storePath = directory.path + "/store", acks = directory.path + "/acks"
        let kept = try Self.seedStore(storePath)

        let child = try ChildProcess.start(role: HistorySaverChild.role, arguments: ["STORE": storePath, "ACKS": acks, "COUNT": "5"],
                                           outputPath: directory.path + "/child.out")
        let childPID = child.processIdentifier
        let (ending, timedOut) = ChildProcess.wait(child, timeout: 60)
        #expect(ending == .exited(0) && !timedOut, "child \(ending): \(ChildProcess.completeLines(acks))")
        let saved = Self.acknowledged(acks)
        #expect(saved.count == 5)

        var options = HistoryProcessModel.options()
        options.observesRemoteChanges = true
        let objects = try ObjectStore(directory: storePath, schema: HistoryProcessModel.schema, options: options)
        defer { objects.close() }
        var announced: [HistoryTransaction] = []
        for await transaction in objects.remoteChanges(after: kept) {
            announced.append(transaction)
            if announced.count == saved.count { break }
        }
        #expect(announced.map(\.commitVersion) == saved.map(\.version))
        #expect(announced.map(\.insertedObjectIDs) == saved.map { [$0.item] })
        for transaction in announced {
            #expect(transaction.processID == childPID && transaction.author == "child" && transaction.contextName == "child-saver")
            #expect(transaction.updatedObjectIDs == [HistoryProcessModel.tallyID])
            #expect(transaction.changes.first { $0.kind == .update }?.updatedProperties == ["saves"])
        }
        #expect(try objects.fetchHistory(after: kept) == announced)
    }

    /// Kill -9 a process in the middle of tracked saves, rounds on one store: the history must
    /// match the data exactly, one transaction per save that reached the store.
    @Test(.timeLimit(.minutes(10)))
    func aSaverKilledMidwayLeavesHistoryThatMatchesTheDataExactly() throws {
        let rounds = Reliability.size("HISTORY_KILL_ROUNDS", short: 3, torture: 40)
        let seed = Reliability.seed("HISTORY_KILL")
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory(prefix: "cairn-history-kill")
        defer { directory.remove() }
        let storePath = directory.path + "/store"
        let start = try Self.seedStore(storePath)
        var acknowledgedTotal = 0
        for round in 1...rounds {
            let acks = directory.path + "/acks\(round)"
            let child = try ChildProcess.start(role: HistorySaverChild.role, arguments: ["STORE": storePath, "ACKS": acks],
                                               outputPath: directory.path + "/child\(round).out")
            let deadline = monotonicNow() + 30
            let wanted = random.int(in: 1...30)
            while Self.acknowledged(acks).count < wanted && child.isRunning && monotonicNow() < deadline { usleep(1_000) }
            usleep(UInt32(random.int(5_000)))
            let ending = ChildProcess.kill9(child)
            let replay = "CAIRN_HISTORY_KILL_SEED=\(seed) CAIRN_HISTORY_KILL_ROUNDS=\(round)"
            #expect(ending == .signaled(SIGKILL), "\(replay): child \(ending): \(ChildProcess.completeLines(acks).suffix(3))")
            let saved = Self.acknowledged(acks)
            acknowledgedTotal += saved.count

            let objects = try ObjectStore(directory: storePath, schema: HistoryProcessModel.schema, options: HistoryProcessModel.options())
            defer { objects.close() }
            let history = try objects.fetchHistory(after: start)
            let context = objects.newBackgroundContext(name: "check")
            let (items, tally) = try context.performAndWait {
                (Set(try context.fetch(FetchRequest(entityName: "Item")).map(\.objectID)),
                 try context.existingObject(with: HistoryProcessModel.tallyID)["saves", as: Int64.self] ?? -1)
            }
            #expect(Set(history.flatMap(\.insertedObjectIDs)) == items, "\(replay): history and items differ")
            #expect(history.count == Int(tally), "\(replay): \(history.count) transactions, tally \(tally)")
            #expect(history.count >= acknowledgedTotal, "\(replay): an acknowledged save has no transaction")
            let byVersion = Dictionary(history.map { ($0.commitVersion, $0.insertedObjectIDs) }, uniquingKeysWith: { first, _ in first })
            for ack in saved {
                #expect(byVersion[ack.version] == [ack.item], "\(replay): acknowledged save \(ack.version) is not in the history")
            }
        }
        Reliability.report("history kill", "\(rounds) rounds, \(acknowledgedTotal) acknowledged saves, seed \(seed)")
    }
}
