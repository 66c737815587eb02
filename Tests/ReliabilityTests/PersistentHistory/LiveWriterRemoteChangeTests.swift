import CairnTestSupport
import Contexts
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Remote changes from a writer that is still running, in another process: this process
// opens the store read-only beside it (`ObjectStore.Options.readOnly`) and is told of each
// save the writer acknowledged, in commit order, while the writer goes on saving.

@Suite struct LiveWriterRemoteChangeTests {
    // A hang guard only: an async test can wait on the 2-core cooperative pool for as long as
    // `make torture`'s synchronous suites hold its threads (about eight minutes).
    @Test(.timeLimit(.minutes(20)))
    func aReadOnlyStoreIsToldOfALiveWritersSavesInCommitOrder() async throws {
        let directory = try TemporaryDirectory(prefix: "cairn-history-live")
        defer { directory.remove() }
        let storePath = directory.path + "/store", acks = directory.path + "/acks"
        let kept = try RemoteChangeProcessTests.seedStore(storePath)
        // The child saves until it is killed.
        let child = try ChildProcess.start(role: HistorySaverChild.role, arguments: ["STORE": storePath, "ACKS": acks],
                                           outputPath: directory.path + "/child.out")
        defer { _ = ChildProcess.kill9(child) }
        let deadline = monotonicNow() + 30
        while RemoteChangeProcessTests.acknowledged(acks).count < 3 && child.isRunning && monotonicNow() < deadline { usleep(1_000) }
        #expect(child.isRunning, "the saver ended: \(ChildProcess.completeLines(acks).suffix(3))")

        var options = HistoryProcessModel.options()
        options.readOnly = true
        options.observesRemoteChanges = true
        let objects = try ObjectStore(directory: storePath, schema: HistoryProcessModel.schema, options: options)
        defer { objects.close() }
        // Saves acknowledged before the stream began, and saves made while it runs.
        let wanted = RemoteChangeProcessTests.acknowledged(acks).count + 5
        var announced: [HistoryTransaction] = []
        for await transaction in objects.remoteChanges(after: kept) {
            announced.append(transaction)
            if announced.count == wanted { break }
        }
        // A save is visible once the writer acknowledged it, a moment before its child writes
        // the line: wait for the lines of everything announced.
        let acknowledgedBy = monotonicNow() + 10
        while RemoteChangeProcessTests.acknowledged(acks).count < announced.count && monotonicNow() < acknowledgedBy { usleep(1_000) }
        let saved = RemoteChangeProcessTests.acknowledged(acks)
        #expect(saved.count >= announced.count, "the stream announced saves the writer never acknowledged")
        let versions = announced.map(\.commitVersion)
        print("live writer: \(announced.count) saves announced (versions \(versions.first ?? 0)...\(versions.last ?? 0)), \(wanted - 5) acknowledged before the stream began, \(saved.count) by the end")
        #expect(versions == versions.sorted() && Set(versions).count == versions.count)
        // Every announced save is an acknowledged one, in the writer's order, with no gap.
        #expect(Array(saved.prefix(announced.count)).map(\.version) == versions)
        #expect(Array(saved.prefix(announced.count)).map { [$0.item] } == announced.map(\.insertedObjectIDs))
        for transaction in announced {
            #expect(transaction.processID == child.processIdentifier && transaction.author == "child")
        }
        // Reads see the same: every save announced is in a fetch.
        let context = objects.newBackgroundContext(name: "reader")
        let items = try context.performAndWait { Set(try context.fetch(FetchRequest(entityName: "Item")).map(\.objectID)) }
        #expect(Set(announced.flatMap(\.insertedObjectIDs)).isSubset(of: items))
    }
}
