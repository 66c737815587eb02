import CairnTestSupport
import Contexts
import KVEngine
import Policies
import Testing

@Suite("Persistence")
struct PersistenceTests {
    @Test("with default options, saved objects survive closing and reopening the store")
    func reopen() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-contexts-reopen")
        defer { directory.remove() }
        let id: ObjectID
        do {
            let objects = try ObjectStore(directory: directory.path, schema: testSchema)
            #expect(objects.options.saveDurability == .full)
            let context = objects.newBackgroundContext()
            id = try context.performAndWait {
                let object = context.insert(entity: "Person")
                object["name"] = .string("Ann")
                object["age"] = .int(30)
                try context.save()
                object["age"] = .int(31)
                try context.save()
                return object.objectID
            }
            objects.close()
        }
        let store = try Store(directory: directory.path)
        let reopened = try ObjectStore(store: store, schema: testSchema)
        defer { reopened.close() }
        let context = reopened.newBackgroundContext()
        try context.performAndWait {
            let object = try context.existingObject(with: id)
            #expect(object.values == person("Ann", 31))
            #expect(object.committedVersion == 2)
            // The sequence survived too: the next key is new.
            let next = context.insert(entity: "Person")
            next["name"] = .string("Bob")
            next["age"] = .int(1)
            try context.save()
            #expect(next.objectID.primaryKey! > id.primaryKey!)
        }
    }

    @Test("a closed store makes saves fail with a storage error, keeping the changes")
    func closedStore() throws {
        let store = try TestStore()
        let context = store.context("A")
        store.close()
        try context.performAndWait { () throws -> Void in
            let object = context.insert(entity: "Counter")
            do {
                try context.save()
                Issue.record("expected a storage error")
            } catch ContextError.storage(let error) {
                #expect(error.code == .closed)
            }
            #expect(object.isInserted)
        }
    }
}
