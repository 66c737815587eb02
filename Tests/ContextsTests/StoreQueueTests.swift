import CairnTestSupport
import Contexts
import Dispatch
import Foundation
import KVEngine
import KeyValueQueue
import Locking
import Testing

/// StoreQueue: the FMDB-style serial queue for plain key-value work.
@Suite("StoreQueue")
struct StoreQueueTests {
    /// The committed string value of `key` in table "kv", read straight from the engine.
    func committed(_ key: String, _ store: TestStore) throws -> String? {
        let snapshot = try store.objects.store.snapshot()
        defer { snapshot.close() }
        return try snapshot.get(key, in: "kv").map { String(decoding: $0.value, as: UTF8.self) }
    }

    @Test("a transaction commits all its writes at once and reads its own writes; the rollback flag discards everything")
    func transactionAndRollbackFlag() throws {
        try withTestStore { store in
            let queue = StoreQueue(store: store.objects.store, label: "kv")
            let seen = try queue.inTransaction { db, _ -> [String?] in
                #expect(db.isInTransaction)
                try db.put("1", forKey: "a", in: "kv")
                try db.put("2", forKey: "b", in: "kv")
                try db.delete("a", in: "kv")
                try db.put("3", forKey: "a", in: "kv")
                // Not in the store yet; visible inside.
                #expect(try committed("a", store) == nil)
                return [try db.string(forKey: "a", in: "kv"), try db.string(forKey: "b", in: "kv")]
            }
            #expect(seen == ["3", "2"])
            #expect(try committed("a", store) == "3")
            #expect(try committed("b", store) == "2")

            let returned = try queue.inTransaction { db, rollback -> Int in
                try db.put("changed", forKey: "a", in: "kv")
                try db.put("new", forKey: "c", in: "kv")
                rollback = true
                return 7
            }
            #expect(returned == 7)
            #expect(try committed("a", store) == "3")
            #expect(try committed("c", store) == nil)
        }
    }

    @Test("a thrown error rolls the whole transaction back and is rethrown")
    func thrownErrorRollsBack() throws {
        struct Abort: Error {}
        try withTestStore { (store: TestStore) throws -> Void in
            let queue = StoreQueue(store: store.objects.store)
            #expect(throws: Abort.self) {
                try queue.inTransaction { db, _ -> Void in
                    try db.put("1", forKey: "x", in: "kv")
                    try db.put("2", forKey: "y", in: "kv")
                    throw Abort()
                }
            }
            #expect(try committed("x", store) == nil)
            #expect(try committed("y", store) == nil)
        }
    }

    @Test("nested savepoints roll back to themselves only, by flag or by a thrown error")
    func nestedSavepoints() throws {
        struct Abort: Error {}
        try withTestStore { store in
            let queue = StoreQueue(store: store.objects.store)
            try queue.inSavePoint { db, _ in
                try db.put("a", forKey: "a", in: "kv")
                try db.inSavePoint { db, _ in
                    try db.put("b", forKey: "b", in: "kv")
                    try db.inSavePoint { db, rollback in
                        try db.put("c", forKey: "c", in: "kv")
                        try db.put("b-overwritten", forKey: "b", in: "kv")
                        rollback = true
                    }
                    // Rolled back to the inner savepoint: "c" gone, "b" as before it.
                    #expect(try db.string(forKey: "c", in: "kv") == nil)
                    #expect(try db.string(forKey: "b", in: "kv") == "b")
                    #expect(try db.get(Array("b".utf8), in: "kv")?.version == 1)
                    do {
                        try db.inSavePoint { db, _ -> Void in
                            try db.put("d", forKey: "d", in: "kv")
                            throw Abort()
                        }
                        Issue.record("the savepoint's error was not rethrown")
                    } catch is Abort {
                        // caught here: the enclosing savepoint goes on
                    }
                    #expect(try db.string(forKey: "d", in: "kv") == nil)
                    try db.put("e", forKey: "e", in: "kv")
                }
                #expect(try committed("a", store) == nil)   // nothing commits before the outermost ends
            }
            #expect(try ["a", "b", "c", "d", "e"].map { try committed($0, store) } == ["a", "b", nil, nil, "e"])
        }
    }

    @Test("inDatabase commits each write at once; a savepoint there is a transaction of its own")
    func autocommitAndImplicitTransaction() throws {
        try withTestStore { store in
            let queue = StoreQueue(store: store.objects.store)
            try queue.inDatabase { db in
                #expect(!db.isInTransaction)
                try db.put("1", forKey: "auto", in: "kv")
                #expect(try committed("auto", store) == "1")
                try db.inSavePoint { db, rollback in
                    #expect(db.isInTransaction)
                    try db.put("2", forKey: "auto", in: "kv")
                    rollback = true
                }
                try db.inSavePoint { db, _ in try db.put("3", forKey: "kept", in: "kv") }
                #expect(!db.isInTransaction)
                #expect(try committed("kept", store) == "3")
            }
            #expect(try committed("auto", store) == "1")
        }
    }

    @Test("conditions are checked at once; keys a transaction read must not be changed by writers outside the queue before it commits")
    func conditionsAndOutsideWriters() throws {
        try withTestStore { store in
            let queue = StoreQueue(store: store.objects.store)
            try queue.inDatabase { db in try db.put("1", forKey: "k", in: "kv") }
            #expect(throws: KVError.self) {
                try queue.inTransaction { db, _ in try db.put("again", forKey: "k", in: "kv", if: .absent) }
            }
            // Read-modify-write while another writer (not on this queue) changes the key.
            var outside = WriteBatch()
            outside.put("outside", forKey: "k", in: "kv")
            do {
                try queue.inTransaction { db, _ in
                    let value = try db.string(forKey: "k", in: "kv") ?? "0"
                    try store.objects.store.commit(outside)      // lands between the read and the commit
                    try db.put(value + "+1", forKey: "k", in: "kv")
                    try db.put("side effect", forKey: "other", in: "kv")
                }
                Issue.record("the transaction committed over a change it did not read")
            } catch KVError.conditionFailed(let failures) {
                #expect(failures.map(\.key) == [Array("k".utf8)])
            }
            #expect(try committed("k", store) == "outside")
            #expect(try committed("other", store) == nil)
        }
    }

    @Test("scans inside a transaction include its own puts and hide its deletes")
    func scansSeeBufferedWrites() throws {
        try withTestStore { store in
            let queue = StoreQueue(store: store.objects.store)
            try queue.inDatabase { db in
                for key in ["k1", "k2", "k3"] { try db.put(key, forKey: key, in: "kv") }
            }
            let keys = try queue.inTransaction { db, rollback -> [[String]] in
                try db.delete("k2", in: "kv")
                try db.put("new", forKey: "k0", in: "kv")
                try db.put("k4", forKey: "k4", in: "kv")
                rollback = true
                let all = try db.scan(in: "kv").map { String(decoding: $0.key, as: UTF8.self) }
                let limited = try db.scan(in: "kv", reverse: true, limit: 2).map { String(decoding: $0.key, as: UTF8.self) }
                return [all, limited]
            }
            #expect(keys == [["k0", "k1", "k3", "k4"], ["k4", "k3"]])
            #expect(try committed("k2", store) == "k2")
        }
    }

    @Test("many threads queue transactions at once: none is lost and none interleaves with another", .timeLimit(.minutes(5)))
    func manyThreads() async throws {
        let threads = 6
        let tasks = 2
        let perWorker = 60
        try await withTestStore { store in
            let queue = StoreQueue(store: store.objects.store, label: "counter", durability: .normal)
            let stop = ConditionLock<Bool>(false)
            let torn = ConditionLock<Int>(0)
            let observations = ConditionLock<Int>(0)
            let failures = ConditionLock<[String]>([])
            /// One transaction: read the counter, bump it and its mirror, and log who did it.
            @Sendable func increment(by worker: String) -> @Sendable (KeyValueDatabase, inout Bool) throws -> Void {
                { db, _ in
                    let current = Int(try db.string(forKey: "counter", in: "kv") ?? "0")!
                    try db.put(String(current + 1), forKey: "counter", in: "kv")
                    try db.put(worker, forKey: "log/\(current + 1)", in: "kv")
                    try db.put(String(current + 1), forKey: "mirror", in: "kv")
                }
            }
            // Plain threads (not the cooperative pool): the blocking form, and an observer outside
            // the queue checking that in every committed state the counter and its mirror agree.
            let finished = DispatchGroup()
            let observer = Thread {
                while !stop.value {
                    guard let snapshot = try? store.objects.store.snapshot() else { continue }
                    let counter = try? snapshot.get("counter", in: "kv")?.value
                    let mirror = try? snapshot.get("mirror", in: "kv")?.value
                    snapshot.close()
                    if counter != mirror { torn.withLock { $0 += 1 } }
                    observations.withLock { $0 += 1 }
                }
            }
            observer.start()
            for thread in 0..<threads {
                finished.enter()
                Thread {
                    defer { finished.leave() }
                    do {
                        for index in 0..<perWorker { try queue.inTransaction(increment(by: "thread\(thread):\(index)")) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }.start()
            }
            // Tasks with the async form, at the same time.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for index in 0..<perWorker { try await queue.inTransaction(increment(by: "task\(task):\(index)")) }
                    }
                }
                try await group.waitForAll()
            }
            await withCheckedContinuation { continuation in finished.notify(queue: .global()) { continuation.resume() } }
            stop.withLock { $0 = true }
            while !observer.isFinished { try await Task.sleep(for: .milliseconds(1)) }

            #expect(failures.value.isEmpty)
            let total = (threads + tasks) * perWorker
            #expect(try committed("counter", store) == String(total))
            let log = try await queue.inDatabase { db in try db.scan(in: "kv", prefix: Array("log/".utf8)) }
            #expect(log.count == total)
            #expect(Set(log.map(\.value)).count == total)   // every transaction left its own entry
            #expect(torn.value == 0)
            #expect(observations.value > 0)
        }
    }

    @Test("async forms: inDatabase, inTransaction with rollback, inSavePoint")
    func asyncForms() async throws {
        try await withTestStore { store in
            let queue = StoreQueue(store: store.objects.store)
            try await queue.inDatabase { db in try db.put("1", forKey: "a", in: "kv") }
            let value = try await queue.inTransaction { db, rollback -> String? in
                try db.put("2", forKey: "a", in: "kv")
                rollback = true
                return try db.string(forKey: "a", in: "kv")
            }
            #expect(value == "2")
            try await queue.inSavePoint { db, _ in try db.put("3", forKey: "b", in: "kv") }
            let read = try await queue.inDatabase { db in [try db.string(forKey: "a", in: "kv"), try db.string(forKey: "b", in: "kv")] }
            #expect(read == ["1", "3"])
        }
    }

    @Test("calling the queue from inside its own block stops the process with a clear message (FMDB deadlocks)")
    func reentranceDetected() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let queue = StoreQueue(store: store.objects.store, label: "settings")
                try queue.inDatabase { _ in
                    try queue.inTransaction { db, _ in try db.put("1", forKey: "a") }
                }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains(
            "StoreQueue 'settings': inTransaction called from inside one of this queue's own blocks; it would wait for itself forever"))
        #expect(stderr.contains("Use the db handle your block was given"))
    }

    @Test("the db handle used after its block stops the process")
    func escapedHandle() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let queue = StoreQueue(store: store.objects.store, label: "escape")
                let escaped = queue.inDatabase { db in db }
                _ = try queue.inDatabase { _ in try escaped.get(Array("a".utf8)) }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("StoreQueue 'escape': its database handle was used after its block returned"))
    }
}
