import CairnTestSupport
import Contexts
import Foundation
import KVEngine
import Locking
import Policies
import Testing

/// Remote change notifications between two ObjectStores on one engine store: each is told of
/// the other's saves (AsyncSequence and NotificationCenter), never of its own, and merges them
/// as it merges a local did-save. The same watcher serves other processes
/// (ReliabilityTests' RemoteChangeProcessTests).
@Suite struct RemoteChangeTests {
    /// Two object stores on one engine store, both tracking history and observing remote changes.
    final class Pair: Sendable {
        let directory: TemporaryDirectory
        let store: Store
        let left: ObjectStore
        let right: ObjectStore

        init() throws {
            directory = try TemporaryDirectory(prefix: "cairn-remote")
            var engine = Store.Options()
            engine.durability = .normal
            store = try Store(directory: directory.path, options: engine)
            var options = ObjectStore.Options()
            options.saveDurability = .normal
            options.tracksHistory = true
            options.observesRemoteChanges = true
            left = try ObjectStore(store: store, schema: testSchema, options: options)
            right = try ObjectStore(store: store, schema: testSchema, options: options)
        }

        func close() {
            left.close()
            right.close()
            directory.remove()
        }
    }

    /// Saves one person through `objects`; returns its ID and the save's commit version.
    static func save(_ name: String, age: Int64, in objects: ObjectStore) throws -> (id: ObjectID, version: UInt64) {
        let context = objects.newBackgroundContext(name: "saver")
        return try context.performAndWait {
            let object = context.insert(entity: "Person")
            object["name"] = .string(name); object["age"] = .int(age)
            try context.save()
            return (object.objectID, context.lastDidSaveNotification!.commitVersion!)
        }
    }

    /// The first `count` elements of `stream`, or fewer when `timeout` seconds pass first.
    ///
    /// The timeout and the tests' time limits are hang guards, generous on purpose: beside the
    /// long synchronous suites of a full run, the 2-core cooperative pool can be busy for a
    /// minute or two before these tasks run at all.
    static func first(_ count: Int, of stream: AsyncStream<HistoryTransaction>, timeout: Double = 200) async -> [HistoryTransaction] {
        await withTaskGroup(of: [HistoryTransaction]?.self) { group in
            group.addTask {
                var found: [HistoryTransaction] = []
                for await transaction in stream {
                    found.append(transaction)
                    if found.count == count { break }
                }
                return found
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                return nil
            }
            let first = await group.next()!
            group.cancelAll()
            return first ?? []
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func eachObjectStoreIsToldOfTheOthersSavesAndNotOfItsOwn() async throws {
        let pair = try Pair()
        defer { pair.close() }
        let rightStream = pair.right.remoteChanges()
        let leftStream = pair.left.remoteChanges()
        let posted = ConditionLock<[HistoryToken]>([])
        let observer = NotificationCenter.default.addObserver(forName: .cairnStoreRemoteChange, object: pair.right, queue: nil) { note in
            guard let transaction = HistoryTransaction(note),
                  note.userInfo?[RemoteChangeKey.historyToken] as? HistoryToken == transaction.token
            else { return }
            posted.withLock { $0.append(transaction.token) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        let fromLeft = try (1...3).map { try Self.save("L\($0)", age: Int64($0), in: pair.left) }
        let fromRight = try Self.save("R", age: 9, in: pair.right)
        let seenByRight = await Self.first(3, of: rightStream)
        #expect(seenByRight.map(\.commitVersion) == fromLeft.map(\.version))
        #expect(seenByRight.map(\.insertedObjectIDs) == fromLeft.map { [$0.id] })
        let seenByLeft = await Self.first(1, of: leftStream)
        #expect(seenByLeft.map(\.commitVersion) == [fromRight.version])
        // The notifications run on the watcher's thread, before the stream's elements.
        #expect(posted.value == fromLeft.map { HistoryToken(version: $0.version) })
    }

    @Test(.timeLimit(.minutes(5)))
    func aStreamAfterATokenStartsWithTheTransactionsSinceThenAndMergesLikeADidSave() async throws {
        let pair = try Pair()
        defer { pair.close() }
        let ann = try Self.save("Ann", age: 30, in: pair.left)
        // The right side holds Ann with a local edit.
        let view = pair.right.newBackgroundContext(name: "view")
        try view.performAndWait { try view.existingObject(with: ann.id)["note"] = .string("mine") }
        let since = try pair.right.currentHistoryToken()
        let editor = pair.left.newBackgroundContext(name: "editor")
        editor.transactionAuthor = "editor-app"
        try editor.performAndWait {
            try editor.existingObject(with: ann.id)["age"] = .int(31)
            try editor.save()
        }
        let seen = await Self.first(1, of: pair.right.remoteChanges(after: since))
        let transaction = try #require(seen.first)
        #expect(transaction.author == "editor-app" && transaction.contextName == "editor")
        #expect(transaction.changes == [HistoryChange(objectID: ann.id, kind: .update, updatedProperties: ["age"])])
        try view.performAndWait {
            try view.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
            let object = try view.existingObject(with: ann.id)
            #expect(object["age"] == .int(31) && object["note"] == .string("mine"))
            try view.save()  // no conflict: the merge moved the ancestor
        }
        // Everything after the start, the first save included.
        let all = await Self.first(2, of: pair.right.remoteChanges(after: .start))
        #expect(all.map(\.commitVersion) == [ann.version, transaction.commitVersion])
    }

    @Test(.timeLimit(.minutes(5)))
    func droppingAnObservingStoreWithoutClosingItEndsItsStreamsAndReleasesTheStore() async throws {
        let directory = try TemporaryDirectory(prefix: "cairn-remote-drop")
        defer { directory.remove() }
        var options = ObjectStore.Options()
        options.observesRemoteChanges = true
        var objects: ObjectStore? = try ObjectStore(directory: directory.path, schema: testSchema, options: options)
        let stream = objects!.remoteChanges()
        objects = nil
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
        // The watcher let go of the engine store: this process can open it again.
        let again = try ObjectStore(directory: directory.path, schema: testSchema, options: options)
        again.close()
    }

    @Test(.timeLimit(.minutes(5)))
    func closingTheStoreEndsItsStreams() async throws {
        let pair = try Pair()
        let stream = pair.right.remoteChanges()
        pair.right.close()
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
        pair.left.close()
        pair.directory.remove()
    }
}
