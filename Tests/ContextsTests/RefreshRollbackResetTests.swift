import Contexts
import Foundation
import Policies
import Testing

@Suite("Refresh, rollback and reset")
struct RefreshRollbackResetTests {
    /// The store holds Ann (30, Oslo) v1; A reads her; B changes age to 31 (v2); A changes city.
    static func scenario(_ body: (TestStore, ObjectContext, StoredObject, ObjectID) throws -> Void) throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30, "Oslo"))
            let a = store.context("A")
            let b = store.context("B")
            try a.performAndWait { _ = try a.existingObject(with: id) }
            try b.performAndWait {
                try b.existingObject(with: id)["age"] = .int(31)
                try b.save()
            }
            try a.performAndWait {
                let object = try a.existingObject(with: id)
                object["city"] = .string("Rome")
                try body(store, a, object, id)
            }
        }
    }

    @Test("refresh(mergeChanges: false) drops local changes and reloads the store's state")
    func refreshWithoutMerge() throws {
        try Self.scenario { _, context, object, _ in
            try context.refresh(object, mergeChanges: false)
            #expect(object.values == person("Ann", 31, "Oslo"))
            #expect(object.committedVersion == 2)
            #expect(!object.hasChanges)
        }
    }

    @Test("refresh(mergeChanges: true) lays local changes over the store's state; the next save does not conflict")
    func refreshWithMerge() throws {
        try Self.scenario { store, context, object, id in
            try context.refresh(object, mergeChanges: true)
            #expect(object.values == person("Ann", 31, "Rome"))
            #expect(object.committedValues == person("Ann", 31, "Oslo"))
            #expect(object.committedVersion == 2)
            #expect(object.changedValues() == ["city": .string("Rome")])
            try context.save()
            #expect(context.lastSaveConflicts.isEmpty)
            #expect(try store.committed(id)?.values == person("Ann", 31, "Rome"))
        }
    }

    @Test("refresh keeps a pending delete with mergeChanges, cancels it without")
    func refreshAndDelete() throws {
        try Self.scenario { store, context, object, id in
            context.delete(object)
            try context.refresh(object, mergeChanges: true)
            #expect(object.isDeleted)
            try context.refresh(object, mergeChanges: false)
            #expect(!object.isDeleted)
            context.delete(object)
            try context.refresh(object, mergeChanges: true)
            try context.save()
            #expect(try store.committed(id) == nil)
        }
    }

    @Test("refreshing an object deleted in the store forgets it")
    func refreshDeletedInStore() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let a = store.context("A")
            let b = store.context("B")
            try a.performAndWait { _ = try a.existingObject(with: id) }
            try b.performAndWait {
                b.delete(try b.existingObject(with: id))
                try b.save()
            }
            try a.performAndWait {
                let object = try a.existingObject(with: id)
                try a.refresh(object, mergeChanges: true)
                #expect(a.registeredObjects.isEmpty)
                #expect(object.context == nil)
            }
        }
    }

    @Test("refreshAllObjects merges every registered object")
    func refreshAll() throws {
        try Self.scenario { _, context, object, _ in
            let inserted = context.insert(entity: "Counter")
            try context.refreshAllObjects()
            #expect(object.values == person("Ann", 31, "Rome"))
            #expect(inserted.isInserted)
        }
    }

    @Test("rollback discards inserts, deletes and updates without reading the store")
    func rollback() throws {
        try withTestStore { store in
            let kept = try store.seed("Person", person("Ann", 30))
            let removed = try store.seed("Person", person("Bob", 25))
            let a = store.context("A")
            let b = store.context("B")
            try a.performAndWait {
                let ann = try a.existingObject(with: kept)
                let bob = try a.existingObject(with: removed)
                try b.performAndWait {
                    try b.existingObject(with: kept)["age"] = .int(99)
                    try b.save()
                }
                ann["age"] = .int(31)
                a.delete(bob)
                let inserted = a.insert(entity: "Person")
                #expect(a.hasChanges)
                a.rollback()
                #expect(!a.hasChanges)
                #expect(ann["age"] == .int(30), "rollback returns to the last read, not to the store's newer state")
                #expect(!bob.isDeleted)
                #expect(inserted.context == nil)
                #expect(a.registeredObjects == [ann, bob])
                #expect(a.insertedObjects.isEmpty && a.deletedObjects.isEmpty && a.updatedObjects.isEmpty)
            }
        }
    }

    @Test("reset forgets every object; IDs still load afresh; a deleted ID then throws")
    func reset() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let a = store.context("A")
            try a.performAndWait { () throws -> Void in
                let before = try a.existingObject(with: id)
                before["age"] = .int(77)
                a.reset()
                #expect(a.registeredObjects.isEmpty)
                #expect(!a.hasChanges)
                #expect(before.context == nil)
                #expect(a.lastSaveReport == nil)
                let after = try a.existingObject(with: id)
                #expect(after !== before)
                #expect(after["age"] == .int(30))
                a.delete(after)
                try a.save()
                a.reset()
                #expect(throws: ContextError.self) { _ = try a.existingObject(with: id) }
            }
        }
    }

    @Test("objects track their state: inserted, updated, deleted, faults")
    func objectState() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let context = store.context("A")
            try context.performAndWait {
                let fault = context.object(with: id)
                #expect(fault.isFault && !fault.hasChanges)
                #expect(context.registeredObjects == [fault])
                #expect(fault["name"] == .string("Ann"))
                #expect(!fault.isFault)
                fault["age"] = .int(31)
                #expect(fault.isUpdated && fault.hasChanges && !fault.isInserted && !fault.isDeleted)
                #expect(context.updatedObjects == [fault])
                context.delete(fault)
                #expect(fault.isDeleted && context.deletedObjects == [fault] && context.updatedObjects.isEmpty)
                try context.save()
                #expect(!fault.isDeleted && fault.context == nil)
                #expect(context.lastSaveReport?.deletedObjectIDs == [id])
                let inserted = context.insert(entity: "Person")
                context.delete(inserted)
                #expect(inserted.context == nil, "deleting an unsaved insert just drops it")
                #expect(!context.hasChanges)
            }
        }
    }
}
