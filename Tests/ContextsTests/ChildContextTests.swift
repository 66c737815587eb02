import CairnTestSupport
import Contexts
import Dispatch
import Foundation
import KVEngine
import Policies
import Testing

/// Parent/child contexts: the contract's "child → parent save" (no version check, no policy,
/// nothing reaches the store until the root saves, temporary IDs stay temporary).
@Suite("Child contexts")
struct ChildContextTests {
    @Test("a child sees its parent's unsaved updates, inserts and deletes")
    func childSeesParentState() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let bobID = try store.seed("Person", person("Bob", 40))
            let root = store.context("root")
            let (carlID, _) = try root.performAndWait { () throws -> (ObjectID, Void) in
                try root.existingObject(with: annID)["age"] = .int(31)
                root.delete(try root.existingObject(with: bobID))
                let carl = root.insert(entity: "Person")
                carl["name"] = .string("Carl")
                carl["age"] = .int(5)
                return (carl.objectID, ())
            }
            let child = root.newChildContext(name: "child")
            #expect(child.parent === root)
            let seen = try child.performAndWait { () throws -> [String: AttributeValue] in
                let people = try child.fetch(FetchRequest(entityName: "Person", sortDescriptors: [.ascending("name")]))
                var ages: [String: AttributeValue] = [:]
                for person in people { ages[person["name", as: String.self]!] = person["age"] }
                return ages
            }
            #expect(seen == ["Ann": .int(31), "Carl": .int(5)])
            // The parent's pending insert is found in the child by its temporary ID, not as an insert.
            let carlInChild = try child.performAndWait { () throws -> (Bool, Bool, AttributeValue) in
                let carl = try child.existingObject(with: carlID)
                return (carl.objectID.isTemporaryID, carl.isInserted, carl["name"])
            }
            #expect(carlInChild == (true, false, .string("Carl")))
            // A predicate in the child sees the parent's values.
            let adults = try child.performAndWait {
                try child.count(for: FetchRequest(entityName: "Person", predicate: .compare("age", .greaterThan, .int(30))))
            }
            #expect(adults == 1)
        }
    }

    @Test("saves through three levels: each save only reaches the parent, the root's reaches the store; temporary IDs stay temporary until then")
    func nestedSaves() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let root = store.context("root")
            let middle = root.newChildContext(name: "middle")
            let leaf = middle.newChildContext(name: "leaf")

            let insertedID = try leaf.performAndWait { () throws -> ObjectID in
                try leaf.existingObject(with: annID)["age"] = .int(31)
                let dan = leaf.insert(entity: "Person")
                dan["name"] = .string("Dan")
                dan["age"] = .int(20)
                try leaf.save()
                #expect(leaf.lastSaveReport?.savedToParent == true)
                #expect(leaf.lastSaveReport?.commitVersion == nil)
                #expect(!leaf.hasChanges)
                return dan.objectID
            }
            #expect(insertedID.isTemporaryID)
            // Nothing in the store yet.
            #expect(try store.committed(annID)?.values["age"] == .int(30))
            #expect(try store.storedCount("Person") == 1)

            // The middle holds the changes as its own, dirty, under the same temporary ID.
            let middleState = try middle.performAndWait { () throws -> (Bool, AttributeValue, Bool) in
                let dan = try middle.existingObject(with: insertedID)
                return (middle.hasChanges, try middle.existingObject(with: annID)["age"], dan.isInserted)
            }
            #expect(middleState == (true, .int(31), true))
            try middle.performAndWait { try middle.save() }
            #expect(try store.committed(annID)?.version == 1)
            let rootDirty = try root.performAndWait { () throws -> Bool in
                #expect(try root.existingObject(with: insertedID).objectID.isTemporaryID)
                return root.hasChanges
            }
            #expect(rootDirty)

            // Only the root's save reaches the store and makes the ID permanent.
            let permanent = try root.performAndWait { () throws -> ObjectID in
                try root.save()
                return try root.existingObject(with: insertedID).objectID
            }
            #expect(!permanent.isTemporaryID)
            #expect(try store.committed(annID)?.values["age"] == .int(31))
            #expect(try store.committed(annID)?.version == 2)
            #expect(try store.committed(permanent)?.values["name"] == .string("Dan"))

            // The leaf still knows Dan by the temporary ID; a fetch follows it to the permanent one.
            let leafView = try leaf.performAndWait { () throws -> (ObjectID, Int, Bool) in
                let before = try leaf.existingObject(with: insertedID)
                let fetched = try leaf.fetch(FetchRequest(entityName: "Person", predicate: .compare("name", .equal, .string("Dan"))))
                return (before.objectID, fetched.count, fetched.first === before)
            }
            #expect(leafView == (permanent, 1, true))
        }
    }

    @Test("a child's save pushes only its changed properties: the parent's other unsaved changes survive")
    func changedPropertiesOnly() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let root = store.context("root")
            try root.performAndWait { try root.existingObject(with: annID)["city"] = .string("Rome") }
            let child = root.newChildContext()
            try child.performAndWait {
                let ann = try child.existingObject(with: annID)
                #expect(ann["city"] == .string("Rome"))
                ann["age"] = .int(31)
                ann["note"] = .string("child")
                try child.save()
            }
            // The root changes city again after the child read it; the child's push must not undo that.
            let values = try root.performAndWait { () throws -> PropertyValues in
                let ann = try root.existingObject(with: annID)
                #expect(ann.isUpdated)
                return ann.values
            }
            #expect(values == person("Ann", 31, "Rome", note: "child"))
            try root.performAndWait { try root.save() }
            #expect(try store.committed(annID)?.values == person("Ann", 31, "Rome", note: "child"))
        }
    }

    @Test("a child's deletes reach the parent: a parent's pending insert is dropped, a stored object becomes a pending delete")
    func childDeletes() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let root = store.context("root")
            let carlID = root.performAndWait { () -> ObjectID in
                let carl = root.insert(entity: "Person")
                carl["name"] = .string("Carl")
                carl["age"] = .int(5)
                return carl.objectID
            }
            let child = root.newChildContext()
            try child.performAndWait {
                child.delete(try child.existingObject(with: annID))
                child.delete(try child.existingObject(with: carlID))
                try child.save()
                #expect(child.lastSaveReport?.deletedObjectIDs.count == 2)
            }
            let state = root.performAndWait { () -> (Int, Int) in (root.insertedObjects.count, root.deletedObjects.count) }
            #expect(state == (0, 1))
            #expect(try store.committed(annID) != nil)
            try root.performAndWait { try root.save() }
            #expect(try store.committed(annID) == nil)
        }
    }

    @Test("discarding a child: unsaved child work never reaches the parent; a parent's rollback discards what a child pushed")
    func discardChild() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let root = store.context("root")
            do {
                let scratch = root.newChildContext(name: "scratch")
                try scratch.performAndWait {
                    try scratch.existingObject(with: annID)["age"] = .int(99)
                    scratch.insert(entity: "Person")["name"] = .string("Ghost")
                }
                // `scratch` goes away without saving.
            }
            let untouched = try root.performAndWait { () throws -> (Bool, AttributeValue, Int) in
                let count = try root.count(for: FetchRequest(entityName: "Person"))
                return (root.hasChanges, try root.existingObject(with: annID)["age"], count)
            }
            #expect(untouched == (false, .int(30), 1))

            // A rolled-back child discards too.
            let editor = root.newChildContext(name: "editor")
            try editor.performAndWait {
                try editor.existingObject(with: annID)["age"] = .int(50)
                editor.rollback()
                try editor.save()
                #expect(editor.lastSaveReport?.savedToParent == false)   // nothing to push
            }
            #expect(try root.performAndWait { try root.existingObject(with: annID)["age"] } == .int(30))

            // Pushed, then the parent rolls back: gone, never written.
            try editor.performAndWait {
                try editor.existingObject(with: annID)["age"] = .int(51)
                try editor.save()
            }
            try root.performAndWait {
                #expect(try root.existingObject(with: annID)["age"] == .int(51))
                root.rollback()
                try root.save()
            }
            #expect(try store.committed(annID)?.values["age"] == .int(30))
            #expect(try store.committed(annID)?.version == 1)
        }
    }

    @Test("conflicts happen only at the root: siblings and a child save without a version check, the root's save meets the store")
    func conflictsOnlyAtRoot() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let root = store.context("root")
            let first = root.newChildContext(name: "first", mergePolicy: .storeTrump)
            let second = root.newChildContext(name: "second", mergePolicy: .storeTrump)
            try first.performAndWait { _ = try first.existingObject(with: annID) }
            try second.performAndWait { _ = try second.existingObject(with: annID) }
            // Another writer moves the record in the store meanwhile.
            let other = store.context("other")
            try other.performAndWait {
                try other.existingObject(with: annID)["city"] = .string("Paris")
                try other.save()
            }
            // Both siblings changed the same property from the same ancestor: no conflict, last push wins.
            try first.performAndWait {
                try first.existingObject(with: annID)["age"] = .int(31)
                try first.save()
                #expect(first.lastSaveConflicts.isEmpty)
            }
            try second.performAndWait {
                try second.existingObject(with: annID)["age"] = .int(32)
                try second.save()
                #expect(second.lastSaveConflicts.isEmpty)
            }
            // The root (error policy) read version 1; the store is at 2: its save is the one that conflicts.
            let error = root.performAndWait { () -> MergeError? in
                do {
                    try root.save()
                    return nil
                } catch let error as MergeError {
                    return error
                } catch {
                    Issue.record("unexpected \(error)")
                    return nil
                }
            }
            let conflict = try #require(error?.conflicts.first)
            #expect(conflict.kind == .updateUpdate)
            #expect(conflict.ancestorVersion == 1 && conflict.storeVersion == 2)
            #expect(conflict.ourValues?["age"] == .int(32))
            #expect(try store.committed(annID)?.values["age"] == .int(30))
            // The root resolves as the contract says (refresh with merge, save again).
            try root.performAndWait {
                try root.refresh(try root.existingObject(with: annID), mergeChanges: true)
                try root.save()
            }
            #expect(try store.committed(annID)?.values == person("Ann", 32, "Paris"))
        }
    }

    @Test("a child's save validates, and a failed one pushes nothing and keeps the child's changes")
    func childValidation() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let root = store.context("root")
            let child = root.newChildContext()
            try child.performAndWait {
                let ann = try child.existingObject(with: annID)
                ann["age"] = .string("thirty")
                #expect(throws: ValidationError.self) { try child.save() }
                #expect(ann.isUpdated)
                #expect(child.lastSaveReport?.succeeded == false)
            }
            #expect(root.performAndWait { root.hasChanges } == false)
        }
    }

    @Test("a child of the main-queue context, on a private queue: reads, saves into it, and works from the main thread with performAndWait", .timeLimit(.minutes(5)))
    func childOfMainQueueContext() async throws {
        try await withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let view = await store.objects.viewContext
            try await view.perform { try view.existingObject(with: annID)["city"] = .string("Oslo") }
            let editor = view.newChildContext(name: "editor")
            #expect(editor.concurrencyType == .privateQueue)

            // From a task: the child's queue asks the main queue.
            let city = try await editor.perform { () throws -> AttributeValue in
                let ann = try editor.existingObject(with: annID)
                ann["age"] = .int(31)
                try editor.save()
                return ann["city"]
            }
            #expect(city == .string("Oslo"))

            // From the main thread: the child's block reads its main-queue parent while the main
            // thread waits for it (this would deadlock without the borrowed-queue rule).
            let fromMain = try await MainActor.run { () throws -> (Int, AttributeValue) in
                try editor.performAndWait { () throws -> (Int, AttributeValue) in
                    let count = try editor.count(for: FetchRequest(entityName: "Person"))
                    let ann = try editor.existingObject(with: annID)
                    ann["note"] = .string("from main")
                    try editor.save()
                    return (count, ann["age"])
                }
            }
            #expect(fromMain == (1, .int(31)))
            try await view.perform {
                let ann = try view.existingObject(with: annID)
                #expect(ann["age"] == .int(31) && ann["note"] == .string("from main"))
                try view.save()
            }
            #expect(try store.committed(annID)?.values == person("Ann", 31, "Oslo", note: "from main"))
        }
    }

    @Test("an automatic merge into a child does not wait for its parent: the main queue saves, then waits for the child at once", .timeLimit(.minutes(5)))
    func automaticMergeNeverWaitsForParent() async throws {
        try await withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let view = await store.objects.viewContext
            let editor = view.newChildContext(name: "editor")
            editor.automaticallyMergesChangesFromParent = true
            try await editor.perform { try editor.existingObject(with: annID)["note"] = .string("draft") }
            let seen = try await MainActor.run { () throws -> PropertyValues in
                // On the main queue: the view context is usable directly.
                try view.existingObject(with: annID)["age"] = .int(77)
                try view.save()                    // queues the merge on the editor's queue
                // The main queue now blocks on the editor, behind that merge; had the merge read
                // the view context synchronously, this would deadlock.
                return try editor.performAndWait { try editor.existingObject(with: annID).values }
            }
            #expect(seen == person("Ann", 77, note: "draft"))
        }
    }

    @Test("a child inside its parent's block: performAndWait from the parent's queue into the child can read the parent", .timeLimit(.minutes(5)))
    func childInsideParentBlock() throws {
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30))
            let root = store.context("root")
            let child = root.newChildContext()
            let age = try root.performAndWait { () throws -> AttributeValue in
                try root.existingObject(with: annID)["age"] = .int(40)
                return try child.performAndWait { () throws -> AttributeValue in
                    let ann = try child.existingObject(with: annID)
                    ann["age"] = .int(41)
                    try child.save()
                    return try root.existingObject(with: annID)["age"]
                }
            }
            #expect(age == .int(41))
        }
    }

    @Test("the queue a block lends is not inherited by a Task made inside it: using the context there stops the process")
    func lentQueueNotInherited() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let root = store.context("Lender")
                let child = root.newChildContext(name: "Borrower")
                let done = DispatchSemaphore(value: 0)
                root.performAndWait { () -> Void in
                    child.performAndWait { () -> Void in
                        // Inside: root is lent to this block. A task made here must not use it.
                        _ = Task {
                            _ = root.insert(entity: "Person")
                            done.signal()
                        }
                    }
                }
                done.wait()
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ObjectContext 'Lender' used off its queue"))
    }

    @Test("a child's inserted object with a chosen key that the parent holds is a primaryKeyInUse error, and nothing is pushed")
    func childChosenKeyCollision() throws {
        try withTestStore { store in
            let root = store.context("root")
            root.performAndWait {
                let ann = root.insert(entity: "Person", primaryKey: 7)
                ann["name"] = .string("Ann")
                ann["age"] = .int(1)
            }
            let child = root.newChildContext()
            let failure = child.performAndWait { () -> ContextError? in
                let other = child.insert(entity: "Person", primaryKey: 7)
                other["name"] = .string("Other")
                other["age"] = .int(2)
                do {
                    try child.save()
                    return nil
                } catch {
                    return error as? ContextError
                }
            }
            guard case .primaryKeyInUse(let id)? = failure else {
                Issue.record("expected primaryKeyInUse, got \(String(describing: failure))")
                return
            }
            #expect(id == ObjectID(entityName: "Person", primaryKey: 7))
            #expect(root.performAndWait { root.insertedObjects.first?["name"] } == .string("Ann"))
        }
    }
}
