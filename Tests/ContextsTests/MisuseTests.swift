import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// Misuse stops the process with a message that says what to do. Each case runs in a child
/// process (an exit test) whose standard error is checked.
@Suite("Misuse fails loudly")
struct MisuseTests {
    @Test("touching an object off its context's queue")
    func objectOffQueue() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let context = store.context("Owner")
                let object = context.performAndWait { context.insert(entity: "Person") }
                _ = object["name"]   // off the queue
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains(
            "ObjectContext 'Owner' used off its queue: wrap the access in context.perform { } or performAndWait { }"))
    }

    @Test("using a context off its queue")
    func contextOffQueue() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let context = store.context("Loner")
                _ = context.insert(entity: "Person")   // off the queue
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ObjectContext 'Loner' used off its queue"))
    }

    @Test("using a fetched object after reset(): the context freed the objects nothing else held, not this one")
    func fetchedObjectAfterReset() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                _ = try store.seed("Person", ["name": .string("Ann"), "age": .int(30)])
                _ = try store.seed("Person", ["name": .string("Bo"), "age": .int(31)])
                let context = store.context("Resetter")
                try context.performAndWait {
                    // A fetch into an empty context; the second object is dropped by the caller.
                    let kept = try context.fetch(FetchRequest(entityName: "Person", sortDescriptors: [.ascending("name")]))[0]
                    context.reset()
                    kept["name"] = .string("Cy")
                }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("used after its context 'Resetter' was reset()"))
    }

    @Test("using an object after reset()")
    func objectAfterReset() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let context = store.context("Resetter")
                context.performAndWait {
                    let object = context.insert(entity: "Person")
                    context.reset()
                    object["name"] = .string("Ann")
                }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("used after its context 'Resetter' was reset()"))
        #expect(stderr.contains("context.object(with:)"))
    }

    @Test("using an object after its context was deallocated")
    func objectAfterContextDeallocated() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                var context: ObjectContext? = store.context("Gone")
                let object = context!.performAndWait { context!.insert(entity: "Person") }
                weak let watcher = context
                context = nil
                precondition(watcher == nil, "the test needs the context deallocated here")
                object["name"] = .string("Ann")   // its context is gone
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("used after its context 'Gone' was deallocated"))
        #expect(stderr.contains("keep the context alive as long as its objects"))
    }

    @Test("deleting an object of another context")
    func deleteForeignObject() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let first = store.context("First")
                let second = store.context("Second")
                let object = first.performAndWait { first.insert(entity: "Person") }
                second.performAndWait { second.delete(object) }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ObjectContext 'Second': delete(_:) got StoredObject"))
        #expect(stderr.contains("of another context 'First'"))
    }

    @Test("inserting an object of another context")
    func insertForeignObject() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let first = store.context("First")
                let second = store.context("Second")
                let object = first.performAndWait { first.insert(entity: "Person") }
                second.performAndWait { second.insert(object) }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ObjectContext 'Second': insert(_:) got StoredObject"))
    }

    @Test("refreshing (or saving a change to) an object of another context")
    func refreshForeignObject() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let id = try store.seed("Person", person("Ann", 30))
                let first = store.context("First")
                let second = store.context("Second")
                let object = try first.performAndWait { try first.existingObject(with: id) }
                try second.performAndWait { try second.refresh(object, mergeChanges: true) }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("refresh(_:mergeChanges:) got StoredObject cairn://Person/p1 of another context 'First'"))
    }

    @Test("an attribute the entity does not have")
    func unknownAttribute() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let context = store.context("A")
                context.performAndWait { context.insert(entity: "Person")["agee"] = .int(3) }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("entity Person has no attribute \"agee\""))
    }

    @Test("a fault whose record was deleted")
    func deletedFault() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let context = store.context("A")
                context.performAndWait { _ = context.object(with: ObjectID(entityName: "Person", primaryKey: 42))["name"] }
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("cairn://Person/p42 could not be loaded"))
        #expect(stderr.contains("existingObject(with:)"))
    }

    @Test("with checks disabled, off-queue use is not detected (the rule still holds)")
    func checksDisabled() throws {
        try withTestStore(configure: { $0.checksQueueAccess = false }) { store in
            let context = store.context("Unchecked")
            #expect(!context.checksQueueAccess)
            // Single-threaded here, so no race: only the check is absent.
            let object = context.insert(entity: "Person")
            object["name"] = .string("Ann")
            #expect(object["name"] == .string("Ann"))
            #expect(context.insertedObjects.count == 1)
        }
    }
}
