import CairnTestSupport
import Contexts
import Dispatch
import Foundation
import KVEngine
import Locking
import Policies
import Testing

/// Did-save notifications and merging them: the contract's "mergeChanges(fromContextDidSave:)"
/// (local changes stay on top; ancestors move, so no conflict afterwards).
@Suite("Notifications and merging")
struct MergeNotificationTests {
    @Test("a background context saves; the main context merges its did-save (from NotificationCenter): new values shown, its own unsaved edits survive, no conflict afterwards", .timeLimit(.minutes(5)))
    func backgroundSaveMergedIntoMain() async throws {
        try await withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let bobID = try store.seed("Person", person("Bob", 40))
            let view = await store.objects.viewContext
            let background = store.context("background")

            // The main context reads both and edits Ann's city without saving.
            try await view.perform {
                try view.existingObject(with: annID)["city"] = .string("Rome")
                _ = try view.existingObject(with: bobID)
            }

            // Observe background's did-save the Core Data way: hand the Sendable value to the main queue.
            let merged = ConditionLock<Int>(0)
            let observer = NotificationCenter.default.addObserver(
                forName: .cairnObjectContextDidSave, object: background, queue: nil
            ) { note in
                guard let saved = ContextDidSaveNotification(note) else { return }
                view.perform {
                    do {
                        try view.mergeChanges(fromContextDidSave: saved)
                        merged.withLock { $0 += 1 }
                    } catch {
                        Issue.record("merge failed: \(error)")
                    }
                }
            }
            defer { NotificationCenter.default.removeObserver(observer) }

            let saved = try await background.perform { () throws -> ContextDidSaveNotification? in
                try background.existingObject(with: annID)["age"] = .int(31)
                background.delete(try background.existingObject(with: bobID))
                let carl = background.insert(entity: "Person")
                carl["name"] = .string("Carl")
                carl["age"] = .int(5)
                try background.save()
                return background.lastDidSaveNotification
            }
            let note = try #require(saved)
            #expect(note.updatedObjectIDs == [annID])
            #expect(note.deletedObjectIDs == [bobID])
            #expect(note.insertedObjectIDs.count == 1 && !note.insertedObjectIDs[0].isTemporaryID)
            #expect(note.commitVersion != nil)
            #expect(note.isSaveToParent == false)

            // The merge was queued on the main queue before this block.
            let state = try await view.perform { () throws -> (PropertyValues, UInt64, Bool, Int) in
                let ann = try view.existingObject(with: annID)
                let registered = view.registeredObjects.count
                return (ann.values, ann.committedVersion, ann.isUpdated, registered)
            }
            #expect(merged.value == 1)
            #expect(state.0 == person("Ann", 31, "Rome"))   // their age, our city on top
            #expect(state.1 == 2)                            // ancestor moved to the saved version
            #expect(state.2)                                 // our city is still an unsaved change
            #expect(state.3 == 1)                            // Bob forgotten; Carl not registered until fetched

            // The main context's next save does not conflict (error policy).
            try await view.perform {
                try view.save()
                #expect(view.lastSaveConflicts.isEmpty)
            }
            #expect(try store.committed(annID)?.values == person("Ann", 31, "Rome"))
            #expect(try store.committed(annID)?.version == 3)
        }
    }

    @Test("will-save, did-save and objects-did-change are posted through NotificationCenter with Core Data's keys")
    func foundationNotifications() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let root = store.context("root")
            let child = root.newChildContext(name: "child")
            let names = ConditionLock<[String]>([])
            let payloads = ConditionLock<[String: [String: Set<ObjectID>]]>([:])
            let versions = ConditionLock<[UInt64]>([])
            var observers: [any NSObjectProtocol] = []
            for name in [Notification.Name.cairnObjectContextWillSave, .cairnObjectContextDidSave, .cairnObjectContextObjectsDidChange] {
                observers.append(NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { note in
                    guard let context = note.object as? ObjectContext, context === root || context === child else { return }
                    // Posted on the context's own queue.
                    #expect(context.isOnQueue)
                    let label = "\(context.name):\(note.name.rawValue)"
                    names.withLock { $0.append(label) }
                    var sets: [String: Set<ObjectID>] = [:]
                    for key in [ContextNotificationKey.insertedObjectIDs, ContextNotificationKey.updatedObjectIDs,
                                ContextNotificationKey.deletedObjectIDs] {
                        sets[key] = note.userInfo?[key] as? Set<ObjectID>
                    }
                    payloads.withLock { $0[label] = sets }
                    if let version = note.userInfo?[ContextNotificationKey.commitVersion] as? UInt64 {
                        versions.withLock { $0.append(version) }
                    }
                })
            }
            defer {
                for observer in observers { NotificationCenter.default.removeObserver(observer) }
            }

            try child.performAndWait {
                try child.existingObject(with: annID)["age"] = .int(31)
                try child.save()
            }
            let commit = try root.performAndWait { () throws -> UInt64? in
                try root.save()
                return root.lastSaveReport?.commitVersion
            }
            #expect(names.value == [
                "child:CairnObjectContextWillSave",
                "root:CairnObjectContextObjectsDidChange",
                "child:CairnObjectContextDidSave",
                "root:CairnObjectContextWillSave",
                "root:CairnObjectContextDidSave",
            ])
            #expect(payloads.value["child:CairnObjectContextDidSave"]?["updated_objectIDs"] == [annID])
            #expect(payloads.value["root:CairnObjectContextObjectsDidChange"]?["updated_objectIDs"] == [annID])
            #expect(payloads.value["root:CairnObjectContextDidSave"]?["updated_objectIDs"] == [annID])
            #expect(payloads.value["root:CairnObjectContextDidSave"]?["deleted_objectIDs"] == [])
            #expect(versions.value == [try #require(commit)])   // the child's save has no commit version

            // A save with nothing to do posts nothing.
            names.withLock { $0.removeAll() }
            try root.performAndWait { try root.save() }
            #expect(names.value.isEmpty)
        }
    }

    @Test("the notifications as AsyncSequences: did-save, will-save and objects-did-change", .timeLimit(.minutes(5)))
    func asyncSequences() async throws {
        try await withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let background = store.context("background")
            let reader = store.context("reader")
            try await reader.perform { _ = try reader.existingObject(with: annID) }
            let saves = background.didSaveNotifications
            let willSaves = background.willSaveNotifications
            let changes = reader.objectsDidChangeNotifications

            // Two saves in a row; the stream delivers both, in order.
            for age in [31, 32] as [Int64] {
                try await background.perform {
                    try background.existingObject(with: annID)["age"] = .int(age)
                    try background.save()
                }
            }
            var iterator = saves.makeAsyncIterator()
            let first = try #require(await iterator.next())
            let second = try #require(await iterator.next())
            #expect(first.updatedObjectIDs == [annID] && second.updatedObjectIDs == [annID])
            let firstVersion = try #require(first.commitVersion)
            let secondVersion = try #require(second.commitVersion)
            #expect(firstVersion < secondVersion)
            var willIterator = willSaves.makeAsyncIterator()
            #expect(await willIterator.next()?.updatedObjectIDs == [annID])

            // A merge in another context shows up on its objects-did-change stream.
            try await reader.perform { try reader.mergeChanges(fromContextDidSave: second) }
            var changeIterator = changes.makeAsyncIterator()
            let change = try #require(await changeIterator.next())
            #expect(change.cause == .merge("background"))
            #expect(change.refreshedObjectIDs == [annID])
            let age = try await reader.perform { try reader.existingObject(with: annID)["age"] }
            #expect(age == .int(32))
        }
    }

    @Test("merging: deleted objects are forgotten, inserted ones wait for a fetch, a pending local delete stays and then succeeds")
    func mergeDeletesAndInserts() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let bobID = try store.seed("Person", person("Bob", 40))
            let writer = store.context("writer")
            let reader = store.context("reader")
            try reader.performAndWait {
                reader.delete(try reader.existingObject(with: annID))   // pending local delete
                _ = try reader.existingObject(with: bobID)
            }
            let saved = try writer.performAndWait { () throws -> ContextDidSaveNotification in
                try writer.existingObject(with: annID)["age"] = .int(31)
                writer.delete(try writer.existingObject(with: bobID))
                writer.insert(entity: "Person", primaryKey: 50).setValue(.string("Eve"), forKey: "name")
                try writer.existingObject(with: ObjectID(entityName: "Person", primaryKey: 50))["age"] = .int(1)
                try writer.save()
                return try #require(writer.lastDidSaveNotification)
            }
            try reader.performAndWait {
                try reader.mergeChanges(fromContextDidSave: saved)
                let ids = Set(reader.registeredObjects.map(\.objectID))
                #expect(ids == [annID])   // Bob forgotten, Eve not registered
                let ann = try reader.existingObject(with: annID)
                #expect(ann.isDeleted)
                #expect(ann.committedVersion == 2)
                try reader.save()         // delete at the merged version: no conflict
                #expect(reader.lastSaveConflicts.isEmpty)
                #expect(try reader.count(for: FetchRequest(entityName: "Person")) == 1)
            }
            #expect(try store.committed(annID) == nil)
        }
    }

    @Test("without a merge the same save conflicts: the merge is what moves the ancestor")
    func withoutMergeItConflicts() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let writer = store.context("writer")
            let reader = store.context("reader")
            try reader.performAndWait { try reader.existingObject(with: annID)["city"] = .string("Rome") }
            try writer.performAndWait {
                try writer.existingObject(with: annID)["age"] = .int(31)
                try writer.save()
            }
            let conflicted = reader.performAndWait { () -> Bool in
                do {
                    try reader.save()
                    return false
                } catch {
                    return error is MergeError
                }
            }
            #expect(conflicted)
        }
    }

    @Test("mergeChanges takes the Foundation notification too")
    func mergeFoundationNotification() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let writer = store.context("writer")
            let reader = store.context("reader")
            try reader.performAndWait { _ = try reader.existingObject(with: annID) }
            let captured = ConditionLock<ContextDidSaveNotification?>(nil)
            let observer = NotificationCenter.default.addObserver(forName: .cairnObjectContextDidSave, object: writer, queue: nil) { note in
                // The Foundation notification is merged on the posting queue here, into a context
                // whose queue we borrow with performAndWait.
                reader.performAndWait {
                    do {
                        try reader.mergeChanges(fromContextDidSave: note)
                    } catch {
                        Issue.record("\(error)")
                    }
                }
                captured.withLock { $0 = ContextDidSaveNotification(note) }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            try writer.performAndWait {
                try writer.existingObject(with: annID)["age"] = .int(44)
                try writer.save()
            }
            #expect(captured.value?.updatedObjectIDs == [annID])
            #expect(try reader.performAndWait { try reader.existingObject(with: annID)["age"] } == .int(44))
        }
    }

    @Test("automaticallyMergesChangesFromParent: a root merges the other roots' saves, a child its parent's saves")
    func automaticMerges() async throws {
        try await withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let view = await store.objects.viewContext
            let background = store.context("background")
            let editor = view.newChildContext(name: "editor")
            let bystander = store.context("bystander")   // does not ask: keeps its stale values
            view.automaticallyMergesChangesFromParent = true
            editor.automaticallyMergesChangesFromParent = true
            #expect(view.automaticallyMergesChangesFromParent)
            try await view.perform { try view.existingObject(with: annID)["note"] = .string("view's") }
            try await editor.perform { try editor.existingObject(with: annID)["city"] = .string("Bergen") }
            try await bystander.perform { _ = try bystander.existingObject(with: annID) }

            try await background.perform {
                try background.existingObject(with: annID)["age"] = .int(31)
                try background.save()
            }
            let inView = try await view.perform { () throws -> (PropertyValues, UInt64) in
                let ann = try view.existingObject(with: annID)
                return (ann.values, ann.committedVersion)
            }
            #expect(inView.0 == person("Ann", 31, "Oslo", note: "view's"))
            #expect(inView.1 == 2)
            #expect(try await bystander.perform { try bystander.existingObject(with: annID)["age"] } == .int(30))

            // The editor (child) merges when its parent saves, reading the parent's state.
            try await view.perform { try view.save() }
            let inEditor = try await editor.perform { try editor.existingObject(with: annID).values }
            #expect(inEditor == person("Ann", 31, "Bergen", note: "view's"))
            let mergeError = try await editor.perform { editor.lastAutomaticMergeError }
            #expect(mergeError == nil)

            // Switched off, nothing arrives.
            view.automaticallyMergesChangesFromParent = false
            try await background.perform {
                background.reset()   // its Ann is at the version it saved; the view has saved since
                try background.existingObject(with: annID)["age"] = .int(32)
                try background.save()
            }
            #expect(try await view.perform { try view.existingObject(with: annID)["age"] } == .int(31))
        }
    }
}
