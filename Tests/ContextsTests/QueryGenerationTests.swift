import CairnTestSupport
import Contexts
import Dispatch
import Foundation
import KVEngine
import Locking
import Policies
import Testing

/// Query generations: the contract's "Versioned snapshots".
@Suite("Query generations")
struct QueryGenerationTests {
    /// Seeds `count` counters at 0; returns their IDs.
    func seedCounters(_ store: TestStore, count: Int) throws -> [ObjectID] {
        let context = store.context("seed-counters")
        return try context.performAndWait {
            let counters = (0..<count).map { index -> StoredObject in
                let counter = context.insert(entity: "Counter")
                counter["label"] = .string("c\(index)")
                return counter
            }
            try context.save()
            return counters.map(\.objectID)
        }
    }

    /// Adds 1 to every counter in one save.
    func bumpAll(_ context: ObjectContext) throws {
        try context.performAndWait {
            for counter in try context.fetch(FetchRequest(entityName: "Counter")) {
                counter["count"] = .int(counter["count", as: Int64.self]! + 1)
            }
            try context.save()
            context.reset()
        }
    }

    /// How many counters the context sees at `value` (registers nothing).
    func counters(at value: Int64, in context: ObjectContext) throws -> Int {
        try context.performAndWait {
            try context.count(for: FetchRequest(entityName: "Counter", predicate: .compare("count", .equal, .int(value))))
        }
    }

    @Test("pinned to .current, a context pins at its next read (not when set) and then keeps reading that generation")
    func pinsLazily() throws {
        try withTestStore { store in
            _ = try seedCounters(store, count: 3)
            let writer = store.context("writer")
            let reader = store.context("reader")
            try reader.performAndWait { try reader.setQueryGenerationFrom(.current) }
            try bumpAll(writer)                       // after the pin was asked for, before the first read
            #expect(try counters(at: 1, in: reader) == 3)
            try bumpAll(writer)
            #expect(try counters(at: 1, in: reader) == 3)
            #expect(try counters(at: 2, in: reader) == 0)
            // An unpinned context sees the latest.
            #expect(try counters(at: 2, in: store.context("fresh")) == 3)
            // Unpinning moves it to the latest too.
            try reader.performAndWait {
                #expect(reader.queryGenerationToken != nil)
                try reader.setQueryGenerationFrom(nil)
                #expect(reader.queryGenerationToken == nil)
            }
            #expect(try counters(at: 2, in: reader) == 3)
        }
    }

    @Test("a pinned context advances on save, merge, reset and a new token, and only then")
    func advancing() throws {
        try withTestStore { store in
            let ids = try seedCounters(store, count: 3)
            let writer = store.context("writer")
            let reader = store.context("reader")
            var expected: Int64 = 0
            let advances: [(String, () throws -> Void)] = [
                ("save", {
                    try reader.performAndWait {
                        let person = reader.insert(entity: "Person")
                        person["name"] = .string("x")
                        person["age"] = .int(1)
                        try reader.save()
                    }
                }),
                ("merge", {
                    let saved = try writer.performAndWait { try #require(writer.lastDidSaveNotification) }
                    try reader.performAndWait { try reader.mergeChanges(fromContextDidSave: saved) }
                }),
                ("reset", { reader.performAndWait { reader.reset() } }),
                ("new token", { try reader.performAndWait { try reader.setQueryGenerationFrom(.current) } }),
            ]
            try reader.performAndWait { try reader.setQueryGenerationFrom(.current) }
            for (name, advance) in advances {
                let before = reader.performAndWait { reader.queryGenerationToken }
                #expect(try counters(at: expected, in: reader) == 3, "\(name): reads its generation")
                try bumpAll(writer)
                #expect(try counters(at: expected, in: reader) == 3, "\(name): still pinned after a commit")
                // A fault loaded now reads the pinned generation as well.
                let faultValue = reader.performAndWait { reader.object(with: ids[0])["count"] }
                #expect(faultValue == .int(expected), "\(name): a fault reads the pinned generation")
                reader.performAndWait { reader.reset() }   // drop the fault (this advances too; re-pin below)
                try reader.performAndWait { try reader.setQueryGenerationFrom(before) }
                try advance()
                expected += 1
                #expect(try counters(at: expected, in: reader) == 3, "\(name) advances the generation")
                let after = reader.performAndWait { reader.queryGenerationToken }
                #expect(after != nil && after != before, "\(name): a new pinned generation")
                let beforeVersion = try #require(before?.version)
                let afterVersion = try #require(after?.version)
                #expect(afterVersion > beforeVersion, "\(name)")
            }
        }
    }

    @Test("aligned contexts share one generation; a child cannot be pinned; a token of another store is refused")
    func alignmentAndErrors() throws {
        try withTestStore { store in
            _ = try seedCounters(store, count: 2)
            let first = store.context("first")
            let second = store.context("second")
            let token = try first.performAndWait { () throws -> QueryGenerationToken? in
                try first.setQueryGenerationFrom(.current)
                return first.queryGenerationToken        // pins now
            }
            let pinned = try #require(token)
            #expect(!pinned.isCurrent)
            try bumpAll(store.context("writer"))
            try second.performAndWait { try second.setQueryGenerationFrom(pinned) }
            #expect(second.performAndWait { second.queryGenerationToken } == pinned)
            #expect(try counters(at: 0, in: second) == 2)   // the aligned generation, not the latest
            #expect(store.objects.queryGenerationStats.count == 1)

            let child = first.newChildContext(name: "kid")
            let error = child.performAndWait { () -> QueryGenerationError? in
                do {
                    try child.setQueryGenerationFrom(.current)
                    return nil
                } catch let error as QueryGenerationError {
                    return error
                } catch {
                    return nil
                }
            }
            #expect(error == .childContext("kid"))
            #expect(error?.description.contains("pin its root context instead") == true)
            // The child reads through its pinned parent.
            #expect(try counters(at: 0, in: child) == 2)

            let elsewhere = try TestStore()
            defer { elsewhere.close() }
            let foreign = try elsewhere.objects.currentQueryGenerationToken()
            #expect(throws: QueryGenerationError.self) { try first.performAndWait { try first.setQueryGenerationFrom(foreign) } }
        }
    }

    @Test("under concurrent writes, the applier and checkpoints, a pinned context reads the same values for every fetch; the store reports the pinned version and its age", .timeLimit(.minutes(5)))
    func pinnedUnderConcurrentWrites() async throws {
        let store = try TestStore { options in
            // Apply and checkpoint all the time, so the pinned snapshot outlives many of each.
            options.storeOptions.applyThreshold = 4096
            options.storeOptions.applyInterval = 0.001
            options.storeOptions.segmentSize = 64 << 10
        }
        defer { store.close() }
        let ids = try seedCounters(store, count: 40)
        let reader = store.context("reader")
        let pinnedVersion = try reader.performAndWait { () throws -> UInt64 in
            try reader.setQueryGenerationFrom(.current)
            return try #require(reader.queryGenerationToken?.version)
        }
        let stop = ConditionLock<Bool>(false)
        let writes = ConditionLock<Int>(0)
        let checkpoints = ConditionLock<Int>(0)
        let failures = ConditionLock<[String]>([])
        // The writers block their threads (performAndWait), so they get threads of their own:
        // neither the cooperative pool's nor the global queue's (on Linux both share libdispatch's
        // few root-queue threads, and busy loops there would starve this task's sleeps).
        let background = DispatchGroup()
        let loops: [@Sendable () throws -> Void] = [
            {
                // Bounded, like the inserts below: every commit applied while the context is
                // pinned grows LMDB's file (its pages cannot be reused), and a slow reader (under
                // ThreadSanitizer, the 40 reads take minutes) would otherwise let the writers
                // fill the map, which cannot grow while the snapshot is open (a documented
                // `mapFull`, not what this test is about).
                let writer = store.context("counter-writer")
                while !stop.value && writes.value < 500 {
                    try bumpAll(writer)
                    writes.withLock { $0 += 1 }
                }
            },
            {
                // Inserts from a second writer: more commits for the applier, no conflicts.
                let inserter = store.context("inserter")
                var number: Int64 = 0
                while !stop.value && number < 1_500 {
                    number += 1
                    try inserter.performAndWait {
                        let person = inserter.insert(entity: "Person")
                        person["name"] = .string("p\(number)")
                        person["age"] = .int(number)
                        try inserter.save()
                        inserter.reset()
                    }
                }
            },
            {
                while !stop.value {
                    try store.objects.store.checkpoint()
                    checkpoints.withLock { $0 += 1 }
                    Thread.sleep(forTimeInterval: 0.002)
                }
            },
        ]
        for loop in loops {
            background.enter()
            Thread {
                defer { background.leave() }
                do {
                    try loop()
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    stop.withLock { $0 = true }
                }
            }.start()
        }
        // Every read of the pinned context sees all 40 counters at 0: through count, through
        // loading unregistered objects, and through faults.
        var readerError: (any Error)?
        do {
            for round in 0..<40 where !stop.value {
                #expect(try counters(at: 0, in: reader) == 40, "round \(round)")
                let values = try reader.performAndWait { () throws -> [AttributeValue] in
                    let fresh = try reader.existingObject(with: ids[round])
                    let fault = reader.object(with: ids[(round + 20) % 40])
                    return [fresh["count"], fault["count"]]
                }
                #expect(values == [.int(0), .int(0)], "round \(round)")
                if round % 10 == 9 {
                    let stats = try store.objects.store.stats()
                    #expect(stats.oldestSnapshotVersion == pinnedVersion)
                    let pinned = store.objects.queryGenerationStats
                    #expect(pinned.count == 1 && pinned.oldestVersion == pinnedVersion)
                    #expect((pinned.oldestAge ?? 0) > 0)
                }
                // Let the writers, the applier and checkpoints move on between reads.
                while writes.value < round + 1 && !stop.value { try await Task.sleep(for: .milliseconds(1)) }
            }
        } catch {
            readerError = error
        }
        stop.withLock { $0 = true }
        await withCheckedContinuation { continuation in background.notify(queue: .global()) { continuation.resume() } }
        if let readerError { throw readerError }
        #expect(failures.value.isEmpty)
        print("pinnedUnderConcurrentWrites: \(writes.value) saves, \(checkpoints.value) checkpoints")
        #expect(writes.value >= 40)
        #expect(checkpoints.value > 0)
        // The latest state is consistent too: every counter moved together.
        let check = store.context("check")
        let latest = try check.performAndWait {
            Set(try check.fetch(FetchRequest(entityName: "Counter")).map { $0["count"] })
        }
        #expect(latest.count == 1)
        // Unpinned and released, the generation is gone from the store's report.
        try reader.performAndWait {
            try reader.setQueryGenerationFrom(nil)
            reader.reset()
        }
        #expect(store.objects.queryGenerationStats.count == 0)
        #expect(store.objects.queryGenerationStats.oldestVersion == nil)
    }

    @Test("under maxSnapshotLag a forgotten pinned generation expires: a typed error, and pinning again goes on")
    func aPinnedGenerationPastTheLagExpires() throws {
        try withTestStore(configure: { options in
            options.storeOptions.maxSnapshotLag = 2
            options.storeOptions.applyInterval = 0.002
        }) { store in
            _ = try seedCounters(store, count: 3)
            let writer = store.context("writer")
            let reader = store.context("reader")
            try reader.performAndWait { try reader.setQueryGenerationFrom(.current) }
            #expect(try counters(at: 0, in: reader) == 3)    // pins here
            for _ in 0..<5 { try bumpAll(writer) }
            try store.objects.store.flush()
            var expired = false
            do {
                _ = try counters(at: 0, in: reader)
            } catch let error as ContextError {
                if case .storage(let storage) = error, case .readViewExpired = storage.code { expired = true }
            }
            #expect(expired)
            try reader.performAndWait { try reader.setQueryGenerationFrom(.current) }
            #expect(try counters(at: 5, in: reader) == 3)
        }
    }
}

/// The contract's sharper rule: a pinned context reads its generation for every read,
/// refresh included (Core Data: "whenever you read from a context, you see the same
/// generation").
@Suite("Query generations: every read")
struct PinnedReadTests {
    @Test("fetch, count, faulting, existingObject and both refresh modes of a pinned context read its generation")
    func everyReadOfAPinnedContextReadsItsGeneration() throws {
        try withTestStore { store in
            let seeder = store.context("seed")
            let ids = try seeder.performAndWait { () throws -> [ObjectID] in
                let counters = (0..<4).map { index -> StoredObject in
                    let counter = seeder.insert(entity: "Counter")
                    counter["label"] = .string("c\(index)")
                    return counter
                }
                try seeder.save()
                return counters.map(\.objectID)
            }
            let reader = store.context("reader")
            // Pinned, and registered: objects 0 and 1 loaded, 2 and 3 left as faults or unread.
            let loaded = try reader.performAndWait { () throws -> [StoredObject] in
                try reader.setQueryGenerationFrom(.current)
                return try ids[0...1].map { try reader.existingObject(with: $0) }
            }
            // Another context commits a new value for every counter.
            let writer = store.context("writer")
            try writer.performAndWait {
                for counter in try writer.fetch(FetchRequest(entityName: "Counter")) { counter["count"] = .int(7) }
                try writer.save()
            }
            try reader.performAndWait {
                let atZero = FetchRequest(entityName: "Counter", predicate: .compare("count", .equal, .int(0)))
                #expect(try reader.fetch(atZero).count == 4, "fetch")
                #expect(try reader.count(for: atZero) == 4, "count")
                #expect(reader.object(with: ids[2])["count"] == .int(0), "faulting")
                #expect(try reader.existingObject(with: ids[3])["count"] == .int(0), "existingObject")

                loaded[0]["label"] = .string("mine")
                try reader.refresh(loaded[0], mergeChanges: true)
                #expect(loaded[0]["count"] == .int(0), "refresh with merge reads the pinned generation")
                #expect(loaded[0]["label"] == .string("mine"), "and keeps the local change")
                try reader.refresh(loaded[1], mergeChanges: false)
                #expect(loaded[1]["count"] == .int(0), "refresh without merge reads the pinned generation")
                try reader.refreshAllObjects()
                #expect(loaded.allSatisfy { $0["count"] == .int(0) }, "refreshAllObjects reads the pinned generation")

                // Unpinned, the same refresh reads the latest commit: the test can tell them apart.
                try reader.setQueryGenerationFrom(nil)
                try reader.refresh(loaded[1], mergeChanges: false)
                #expect(loaded[1]["count"] == .int(7), "unpinned, refresh reads the latest commit")
            }
        }
    }
}
