import CairnTestSupport
import Contexts
import Foundation
import Locking
import Testing

/// The ID sets of a did-save, which a large save hashes on another thread while it goes on
/// (`IDSetBuild`), and the will-save, which carries its typed value only (Core Data's
/// will-save has no `userInfo`).
@Suite struct SaveNotificationSetTests {

    /// The did-save's and will-save's `userInfo`, as Foundation delivered them.
    private func observe(_ context: ObjectContext, during body: () throws -> Void) rethrows
        -> (will: [AnyHashable: Any], did: [AnyHashable: Any])
    {
        let will = ConditionLock<[AnyHashable: Any]?>(nil), did = ConditionLock<[AnyHashable: Any]?>(nil)
        let observers = [
            NotificationCenter.default.addObserver(forName: .cairnObjectContextWillSave, object: context, queue: nil) { note in
                will.withLock { $0 = note.userInfo ?? [:] }
            },
            NotificationCenter.default.addObserver(forName: .cairnObjectContextDidSave, object: context, queue: nil) { note in
                did.withLock { $0 = note.userInfo ?? [:] }
            },
        ]
        defer { observers.forEach(NotificationCenter.default.removeObserver) }
        try body()
        return (will.withLock { $0 } ?? [:], did.withLock { $0 } ?? [:])
    }

    @Test(arguments: [3, IDSetBuild.backgroundThreshold, 2_000])
    func theDidSaveHoldsTheSavedIDsAndTheWillSaveItsTypedValueOnly(count: Int) throws {
        try withTestStore { store in
            let ids = try seedPeople(store, count)
            let context = store.context("editor")
            let (will, did) = try observe(context) {
                try context.performAndWait {
                    for person in try context.fetch(FetchRequest(entityName: "Person")) {
                        person["age"] = .int(-1)
                    }
                    try context.save()
                }
            }
            #expect(Set(will.keys.compactMap { $0 as? String }) == [ContextNotificationKey.payload])
            let willNote = try #require(will[ContextNotificationKey.payload] as? ContextWillSaveNotification)
            #expect(willNote.updatedObjectIDs == ids)
            #expect(did[ContextNotificationKey.updatedObjectIDs] as? Set<ObjectID> == Set(ids))
            #expect(did[ContextNotificationKey.insertedObjectIDs] as? Set<ObjectID> == [])
            #expect(did[ContextNotificationKey.deletedObjectIDs] as? Set<ObjectID> == [])
        }
    }

    /// A will-save observer that changes one more object changes the did-save's list: its set
    /// is the saved objects', not the one begun for the will-save's list.
    @Test func anObserverWhoseChangesAlterTheSaveGetsTheDidSavesOwnSets() throws {
        try withTestStore { store in
            let count = IDSetBuild.backgroundThreshold + 10
            let ids = try seedPeople(store, count)
            let context = store.context("editor")
            let extra = ids[count - 1]
            // Runs synchronously on the context's queue, inside save().
            let change = NotificationCenter.default.addObserver(
                forName: .cairnObjectContextWillSave, object: context, queue: nil
            ) { _ in
                try? context.existingObject(with: extra)["age"] = .int(-2)
            }
            defer { NotificationCenter.default.removeObserver(change) }
            let (will, did) = try observe(context) {
                try context.performAndWait {
                    for id in ids.dropLast() { try context.existingObject(with: id)["age"] = .int(-1) }
                    try context.save()
                }
            }
            let willNote = try #require(will[ContextNotificationKey.payload] as? ContextWillSaveNotification)
            #expect(willNote.updatedObjectIDs == Array(ids.dropLast()))
            #expect(did[ContextNotificationKey.updatedObjectIDs] as? Set<ObjectID> == Set(ids))
            #expect(try store.committed(extra)?.values["age"] == .int(-2))
        }
    }

    /// The report's updated list is the will-save's own while they agree; an observer that
    /// swaps one updated object for another in the middle gets the saved objects, in order.
    @Test func theUpdatedListFollowsWhatTheSaveWroteInOrder() throws {
        try withTestStore { store in
            let ids = try seedPeople(store, 5)  // registered as a, b, x, c, d by the fetch below
            let (a, b, x, c, d) = (ids[0], ids[1], ids[2], ids[3], ids[4])
            let context = store.context("editor")
            let swap = NotificationCenter.default.addObserver(
                forName: .cairnObjectContextWillSave, object: context, queue: nil
            ) { _ in
                try? context.existingObject(with: b)["age"] = .int(1)  // back to its saved value
                try? context.existingObject(with: x)["age"] = .int(-2)
            }
            defer { NotificationCenter.default.removeObserver(swap) }
            let (will, saved) = try context.performAndWait { () throws -> ([ObjectID], ContextDidSaveNotification?) in
                let people = try context.fetch(FetchRequest(entityName: "Person"))
                #expect(people.map(\.objectID) == ids)
                for id in [a, b, c, d] { try context.existingObject(with: id)["age"] = .int(-1) }
                let will = ConditionLock<[ObjectID]>([])
                let observer = NotificationCenter.default.addObserver(
                    forName: .cairnObjectContextWillSave, object: context, queue: nil
                ) { note in will.withLock { $0 = ContextWillSaveNotification(note)?.updatedObjectIDs ?? [] } }
                defer { NotificationCenter.default.removeObserver(observer) }
                try context.save()
                return (will.withLock { $0 }, context.lastDidSaveNotification)
            }
            #expect(will == [a, b, c, d])
            #expect(saved?.updatedObjectIDs == [a, x, c, d])
            #expect(try store.committed(b)?.version == 1)
            #expect(try store.committed(x)?.values["age"] == .int(-2))
        }
    }

    /// The report's updated and deleted lists are the will-save's own arrays when the save wrote
    /// what the will-save listed, and the saved objects in order when an observer changed that:
    /// one deleted object undeleted and another deleted, the same count, in the middle.
    @Test func reportListsMatchTheWillSaveOrTheirEntries() throws {
        try withTestStore { store in
            let ids = try seedPeople(store, 4)  // registered as a, b, x, c by the fetch below
            let (a, b, x, c) = (ids[0], ids[1], ids[2], ids[3])
            let context = store.context("editor")
            let will = ConditionLock<ContextWillSaveNotification?>(nil)
            let observer = NotificationCenter.default.addObserver(
                forName: .cairnObjectContextWillSave, object: context, queue: nil
            ) { note in will.withLock { $0 = ContextWillSaveNotification(note) } }
            defer { NotificationCenter.default.removeObserver(observer) }
            // A save of the will-save's deletes and updates: the report holds the same arrays.
            let first = try context.performAndWait { () throws -> ContextDidSaveNotification? in
                let people = try context.fetch(FetchRequest(entityName: "Person"))
                #expect(people.map(\.objectID) == ids)
                for id in [a, b] { context.delete(try context.existingObject(with: id)) }
                for id in [x, c] { try context.existingObject(with: id)["age"] = .int(-1) }
                try context.save()
                return context.lastDidSaveNotification
            }
            let firstWill = try #require(will.withLock { $0 })
            #expect(firstWill.deletedObjectIDs == [a, b])
            #expect(firstWill.updatedObjectIDs == [x, c])
            #expect(first?.deletedObjectIDs == [a, b])
            #expect(first?.updatedObjectIDs == [x, c])
            #expect(try store.committed(a) == nil)
            #expect(try store.committed(b) == nil)
        }
        try withTestStore { store in
            let ids = try seedPeople(store, 5)
            let (a, b, x, c, d) = (ids[0], ids[1], ids[2], ids[3], ids[4])
            let context = store.context("editor")
            let swap = NotificationCenter.default.addObserver(
                forName: .cairnObjectContextWillSave, object: context, queue: nil
            ) { _ in
                guard let undone = try? context.existingObject(with: b), let added = try? context.existingObject(with: x) else { return }
                try? context.refresh(undone, mergeChanges: false)  // its delete undone
                context.delete(added)
            }
            defer { NotificationCenter.default.removeObserver(swap) }
            let (will, saved) = try context.performAndWait { () throws -> ([ObjectID], ContextDidSaveNotification?) in
                _ = try context.fetch(FetchRequest(entityName: "Person"))
                for id in [a, b, c, d] { context.delete(try context.existingObject(with: id)) }
                let will = ConditionLock<[ObjectID]>([])
                let observer = NotificationCenter.default.addObserver(
                    forName: .cairnObjectContextWillSave, object: context, queue: nil
                ) { note in will.withLock { $0 = ContextWillSaveNotification(note)?.deletedObjectIDs ?? [] } }
                defer { NotificationCenter.default.removeObserver(observer) }
                try context.save()
                return (will.withLock { $0 }, context.lastDidSaveNotification)
            }
            #expect(will == [a, b, c, d])
            #expect(saved?.deletedObjectIDs == [a, x, c, d])
            #expect(try store.committed(b) != nil)
            #expect(try store.committed(x) == nil)
        }
    }

    /// Whoever comes first builds the set: read at once (usually before the queue's task
    /// starts), after a pause (after it finished), and from many builds at once.
    @Test func aSetBuildGivesTheSameSetWhoeverBuildsIt() async {
        let ids = (0..<3_000).map { ObjectID(entityName: "Person", primaryKey: UInt64($0 * 7 + 1)) }
        let expected = Set(ids)
        #expect(IDSetBuild(ids).set == expected)
        let later = IDSetBuild(ids)
        try? await Task.sleep(for: .milliseconds(50))
        #expect(later.set == expected)
        #expect(later.set == expected)  // read twice
        let builds = (0..<64).map { _ in IDSetBuild(ids) }
        let sizes = await withTaskGroup(of: Int.self) { group in
            for build in builds { group.addTask { build.set.count } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(sizes == Array(repeating: expected.count, count: 64))
        #expect(builds.allSatisfy { $0.set == expected })
    }
}
