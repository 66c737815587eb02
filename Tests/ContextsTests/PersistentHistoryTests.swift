import CairnTestSupport
import Contexts
import Dispatch
import Foundation
import KVEngine
import Locking
import Policies
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Persistent history: every tracked save leaves one transaction in its own commit, with what
/// it wrote; tokens, range reads and deletes; merging a transaction like a did-save.
@Suite struct PersistentHistoryTests {
    static func tracked(_ options: inout ObjectStore.Options) { options.tracksHistory = true }

    @Test func aTrackedSaveRecordsWhatItWroteUnderItsCommitVersion() throws {
        try withTestStore(configure: Self.tracked) { store in
            let context = store.context("import")
            context.transactionAuthor = "sync"
            let (annID, bobID, first) = try context.performAndWait {
                let ann = context.insert(entity: "Person")
                ann["name"] = .string("Ann"); ann["age"] = .int(30)
                let bob = context.insert(entity: "Person")
                bob["name"] = .string("Bob"); bob["age"] = .int(40)
                try context.save()
                return (ann.objectID, bob.objectID, context.lastDidSaveNotification!.commitVersion!)
            }
            let second = try context.performAndWait {
                let ann = try context.existingObject(with: annID)
                ann["age"] = .int(31)
                ann["city"] = .string("Oslo")
                context.delete(try context.existingObject(with: bobID))
                try context.save()
                return context.lastDidSaveNotification!.commitVersion!
            }
            let history = try store.objects.fetchHistory()
            #expect(history.map(\.commitVersion) == [first, second])
            #expect(history[0].changes == [HistoryChange(objectID: annID, kind: .insert), HistoryChange(objectID: bobID, kind: .insert)])
            #expect(history[1].changes == [HistoryChange(objectID: annID, kind: .update, updatedProperties: ["age", "city"]),
                                           HistoryChange(objectID: bobID, kind: .delete)])
            #expect(history.allSatisfy { $0.contextName == "import" && $0.author == "sync" && $0.processID == getpid() })
            #expect(abs(history[1].timestamp.timeIntervalSinceNow) < 60)
            #expect(try store.objects.fetchHistory(after: history[0].token) == [history[1]])
            #expect(try store.objects.fetchHistory(after: .start, limit: 1) == [history[0]])
            #expect(try store.objects.fetchHistory(after: store.objects.currentHistoryToken()).isEmpty)
            let merged = history[1].objectIDNotification()
            #expect(merged.updatedObjectIDs == [annID] && merged.deletedObjectIDs == [bobID] && merged.commitVersion == second)
        }
    }

    @Test func anUntrackedStoreRecordsNoHistory() throws {
        try withTestStore { store in
            try store.seed("Person", person("Ann", 30))
            #expect(try store.objects.fetchHistory().isEmpty)
        }
    }

    @Test func aFailedSaveRecordsNothingAndAResolvedSaveRecordsWhatThePolicyWrote() throws {
        try withTestStore(configure: Self.tracked) { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let first = store.context("first"), second = store.context("second")
            try second.performAndWait { _ = try second.existingObject(with: annID) }
            try first.performAndWait {
                try first.existingObject(with: annID)["age"] = .int(31)
                try first.save()
            }
            let failure: (any Error)? = second.performAndWait {
                do {
                    try second.existingObject(with: annID)["city"] = .string("Rome")
                    try second.save()
                    return nil
                } catch {
                    return error
                }
            }
            #expect(failure is MergeError)
            #expect(try store.objects.fetchHistory().count == 2)
            try second.performAndWait {
                second.mergePolicy = .objectTrump
                try second.save()
            }
            let last = try #require(try store.objects.fetchHistory().last)
            // Against the store's state (first's save), only the city changed.
            #expect(last.contextName == "second")
            #expect(last.changes == [HistoryChange(objectID: annID, kind: .update, updatedProperties: ["city"])])
            #expect(try store.committed(annID)?.values["age"] == .int(31))
        }
    }

    @Test func historySurvivesCheckpointsAndReopensAndDeleteHistoryBoundsIt() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-history")
        defer { directory.remove() }
        var options = ObjectStore.Options()
        options.tracksHistory = true
        options.saveDurability = .normal
        var objects = try ObjectStore(directory: directory.path, schema: testSchema, options: options)
        let context = objects.newBackgroundContext(name: "writer")
        for age in 1...5 {
            try context.performAndWait {
                let object = context.insert(entity: "Person")
                object["name"] = .string("P\(age)"); object["age"] = .int(Int64(age))
                try context.save()
            }
        }
        let before = try objects.fetchHistory()
        #expect(before.count == 5)
        _ = try objects.store.checkpoint()
        objects.close()
        objects = try ObjectStore(directory: directory.path, schema: testSchema, options: options)
        #expect(try objects.fetchHistory() == before)
        #expect(try objects.deleteHistory(before: before[3].token) == 3)
        #expect(try objects.fetchHistory() == Array(before[3...]))
        #expect(try objects.deleteHistory(before: before[3].token) == 0)
        objects.close()
        objects = try ObjectStore(directory: directory.path, schema: testSchema, options: options)
        defer { objects.close() }
        #expect(try objects.fetchHistory() == Array(before[3...]))
    }

    @Test(.timeLimit(.minutes(2)))
    func concurrentSavesEachRecordTheirOwnCommitVersion() throws {
        try withTestStore(configure: Self.tracked) { store in
            let saved = ConditionLock<[UInt64: ObjectID]>([:])
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                let context = store.context("saver\(thread)")
                for round in 0..<25 {
                    do {
                        let (version, id) = try context.performAndWait {
                            let object = context.insert(entity: "Person")
                            object["name"] = .string("T\(thread)-\(round)"); object["age"] = .int(Int64(round))
                            try context.save()
                            return (context.lastDidSaveNotification!.commitVersion!, object.objectID)
                        }
                        saved.withLock { $0[version] = id }
                    } catch {
                        Issue.record("save failed: \(error)")
                    }
                }
            }
            let history = try store.objects.fetchHistory()
            let byVersion = saved.value
            #expect(history.count == 100 && byVersion.count == 100)
            #expect(zip(history, history.dropFirst()).allSatisfy { $0.token < $1.token })
            for transaction in history {
                #expect(transaction.insertedObjectIDs == [byVersion[transaction.commitVersion]].compactMap { $0 })
            }
        }
    }

    @Test func deleteHistoryRemovesMoreThanOneCommitsWorth() throws {
        try withTestStore(configure: Self.tracked) { store in
            // 2,500 records written straight into the table: deletes run 1,000 to a commit.
            var batch = WriteBatch()
            for version in 1...2_500 {
                let record = HistoryRecord.encode(time: Date(), contextName: "bulk", author: nil, processID: 1, origin: "O",
                                                  changes: [HistoryChange(objectID: ObjectID(entityName: "Person", primaryKey: UInt64(version)), kind: .insert)])
                batch.put(record, forKey: HistoryRecord.key(for: UInt64(version)), in: HistoryRecord.table)
            }
            try store.objects.store.commit(batch)
            #expect(try store.objects.fetchHistory().count == 2_500)
            #expect(try store.objects.deleteHistory(before: HistoryToken(version: 2_401)) == 2_400)
            #expect(try store.objects.fetchHistory().map(\.commitVersion) == Array(2_401...2_500))
        }
    }

    /// An ObjectStore without history on the same engine store commits between and during a
    /// tracked store's saves: every transaction is keyed by its save's commit version exactly,
    /// and a reader that keeps its last token misses nothing.
    @Test(.timeLimit(.minutes(2)))
    func untrackedCommitsBetweenTrackedSavesLeaveEveryTransactionAtItsCommitVersion() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-history-bypass")
        defer { directory.remove() }
        var engine = Store.Options()
        engine.durability = .normal
        let store = try Store(directory: directory.path, options: engine)
        var options = ObjectStore.Options()
        options.saveDurability = .normal
        options.tracksHistory = true
        let tracked = try ObjectStore(store: store, schema: testSchema, options: options)
        options.tracksHistory = false
        let untracked = try ObjectStore(store: store, schema: testSchema, options: options)
        defer { tracked.close(); untracked.close() }
        let saved = ConditionLock<[(version: UInt64, id: ObjectID)]>([])
        let seen = ConditionLock<[HistoryTransaction]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { role in
            do {
                switch role {
                case 0, 1:
                    let context = (role == 0 ? tracked : untracked).newBackgroundContext(name: "saver\(role)")
                    for round in 0..<40 {
                        let (version, id) = try context.performAndWait {
                            let object = context.insert(entity: "Person")
                            object["name"] = .string("R\(role)-\(round)"); object["age"] = .int(Int64(round))
                            try context.save()
                            return (context.lastDidSaveNotification!.commitVersion!, object.objectID)
                        }
                        if role == 0 {
                            saved.withLock { $0.append((version, id)) }
                            // And a raw commit after each: surely one untracked commit between two saves.
                            var batch = WriteBatch()
                            batch.put("r\(round)", forKey: "raw")
                            try store.commit(batch)
                        }
                    }
                default:
                    // A reader that keeps the last token it saw, as an application would.
                    var token = HistoryToken.start
                    while seen.value.count < 40 {
                        let next = try tracked.fetchHistory(after: token)
                        seen.withLock { $0 += next }
                        token = next.last?.token ?? token
                    }
                }
            } catch {
                Issue.record("role \(role): \(error)")
            }
        }
        let history = try tracked.fetchHistory()
        let saves = saved.value
        #expect(history.count == 40 && seen.value == history)
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.token < $1.token })
        for (transaction, save) in zip(history, saves) {
            #expect(transaction.insertedObjectIDs == [save.id] && transaction.commitVersion == save.version)
        }
        #expect(zip(saves, saves.dropFirst()).allSatisfy { $0.version + 1 < $1.version })
    }

    /// Tracked saves from concurrent contexts share fdatasyncs: nothing serialises them.
    /// (Updates, so that no save allocates keys: allocation is serialised on its own.)
    @Test(.timeLimit(.minutes(2)))
    func concurrentTrackedSavesShareGroupCommits() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-history-group")
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        var options = ObjectStore.Options()
        options.tracksHistory = true
        let objects = try ObjectStore(store: store, schema: testSchema, options: options)
        defer { objects.close() }
        let seeding = objects.newBackgroundContext(name: "seed")
        let ids = try seeding.performAndWait {
            let people = (0..<8).map { thread in
                let person = seeding.insert(entity: "Person")
                person["name"] = .string("T\(thread)"); person["age"] = .int(0)
                return person
            }
            try seeding.save()
            return people.map(\.objectID)
        }
        let before = try store.stats().logSyncs
        let saved = ConditionLock<[UInt64]>([])
        let finished = DispatchGroup()
        // Threads of their own: concurrentPerform runs only as many at once as there are cores.
        for (thread, id) in ids.enumerated() {
            finished.enter()
            let context = objects.newBackgroundContext(name: "saver\(thread)")
            Thread {
                defer { finished.leave() }
                for round in 1...20 {
                    do {
                        let version = try context.performAndWait {
                            try context.existingObject(with: id)["age"] = .int(Int64(round))
                            try context.save()
                            return context.lastDidSaveNotification!.commitVersion!
                        }
                        saved.withLock { $0.append(version) }
                    } catch {
                        Issue.record("thread \(thread): \(error)")
                        return
                    }
                }
            }.start()
        }
        finished.wait()
        let syncs = try store.stats().logSyncs - before
        let history = try objects.fetchHistory()
        #expect(saved.value.count == 160 && Set(history.map(\.commitVersion)).isSuperset(of: saved.value))
        // One fdatasync per save would be 160.
        #expect(syncs < 160, "\(syncs) fdatasyncs for 160 saves")
        print("concurrentTrackedSavesShareGroupCommits: \(syncs) log fdatasyncs for 160 saves")
    }

    @Test func aTransactionMergesLikeTheDidSaveItRecords() throws {
        try withTestStore(configure: Self.tracked) { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let reader = store.context("reader"), writer = store.context("writer")
            try reader.performAndWait { try reader.existingObject(with: annID)["note"] = .string("mine") }
            try writer.performAndWait {
                try writer.existingObject(with: annID)["age"] = .int(44)
                try writer.save()
            }
            let transaction = try #require(try store.objects.fetchHistory().last)
            try reader.performAndWait {
                try reader.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
                let ann = try reader.existingObject(with: annID)
                #expect(ann["age"] == .int(44) && ann["note"] == .string("mine"))
                try reader.save()  // the ancestor moved: no conflict
            }
            #expect(try store.committed(annID)?.values["note"] == .string("mine"))
        }
    }

    @Test func tokensPrintAndReadBack() throws {
        let token = HistoryToken(version: 17)
        #expect(token.description == "17" && HistoryToken("17") == token)
        for bad in ["", "-1", "+3", " 17", "0x11", "18446744073709551616"] { #expect(HistoryToken(bad) == nil) }
        let json = try JSONEncoder().encode(token)
        #expect(try JSONDecoder().decode(HistoryToken.self, from: json) == token)
        #expect(HistoryToken.start < token)
    }

    @Test func theRecordFormatIsPinned() throws {
        let bytes = HistoryRecord.encode(
            time: Date(timeIntervalSinceReferenceDate: 786245551.25), contextName: "import", author: "sync", processID: 4242,
            origin: "O", changes: [
                HistoryChange(objectID: ObjectID(entityName: "Person", primaryKey: 7), kind: .insert),
                HistoryChange(objectID: ObjectID(entityName: "Person", primaryKey: 1), kind: .update, updatedProperties: ["age", "name"]),
                HistoryChange(objectID: ObjectID(entityName: "Person", primaryKey: 3), kind: .delete),
            ])
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"author":"sync","context":"import","deleted":["cairn://Person/p3"],"format":1,"#
            + #""inserted":["cairn://Person/p7"],"origin":"O","pid":4242,"time":786245551.25,"#
            + #""updated":[{"id":"cairn://Person/p1","properties":["age","name"]}]}"#)
        let key = HistoryRecord.key(for: 9)
        #expect(key == [0, 0, 0, 0, 0, 0, 0, 9])  // the key is the commit version, 8 bytes big-endian
        let transaction = try key.withUnsafeBytes { key in try bytes.withUnsafeBytes { try HistoryRecord.decode(key: key, bytes: $0) } }
        #expect(transaction.commitVersion == 9 && transaction.author == "sync" && transaction.processID == 4242)
        #expect(transaction.changes.map(\.kind) == [.insert, .update, .delete])
    }

    @Test func aRecordThatDoesNotDecodeIsATypedErrorAndNothingIsSkipped() throws {
        try withTestStore(configure: Self.tracked) { store in
            try store.seed("Person", person("Ann", 30))
            var batch = WriteBatch()
            batch.put(Array("{not json".utf8), forKey: HistoryRecord.key(for: 255), in: HistoryRecord.table)
            try store.objects.store.commit(batch)
            do {
                _ = try store.objects.fetchHistory()
                Issue.record("a corrupt history record was read")
            } catch ContextError.storage(let error) {
                #expect(error.code == .corrupt && error.message.contains("history record 255"))
            }
        }
    }
}
