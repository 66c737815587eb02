import Contexts
import Foundation
import Policies
import Testing

/// Set on the main queue by a test, to tell that code runs there.
let mainQueueMarker = DispatchSpecificKey<Bool>()

@Suite("Object IDs")
struct ObjectIDTests {
    @Test("temporary until saved, then permanent; the temporary ID still finds the object in its context")
    func temporaryToPermanent() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait {
                let object = context.insert(entity: "Person")
                object["name"] = .string("Ann")
                object["age"] = .int(30)
                let temporary = object.objectID
                #expect(temporary.isTemporaryID)
                #expect(temporary.primaryKey == nil)
                #expect(temporary.uriString.hasPrefix("cairn://Person/t"))
                try context.save()
                let permanent = object.objectID
                #expect(!permanent.isTemporaryID)
                #expect(permanent.uriString == "cairn://Person/p\(permanent.primaryKey!)")
                #expect(context.object(with: temporary) === object)
                #expect(try context.existingObject(with: temporary) === object)
                #expect(context.lastSaveReport?.insertedObjectIDs == [permanent])
            }
        }
    }

    @Test("URI round trip", arguments: [
        ObjectID(entityName: "Person", primaryKey: 1),
        ObjectID(entityName: "Account", primaryKey: UInt64.max),
        ObjectID(entityName: "_x9", primaryKey: 0),
    ])
    func uriRoundTrip(id: ObjectID) {
        #expect(ObjectID(uriRepresentation: id.uriRepresentation) == id)
        #expect(ObjectID(uriString: id.uriString) == id)
        #expect(id.description == id.uriString)
    }

    @Test("IDs as Set members and Dictionary keys: equal IDs meet, different entities or keys stay apart")
    func idsAsHashedKeys() throws {
        var ids: [ObjectID] = []
        for key in UInt64(0)..<2_000 {
            ids.append(ObjectID(entityName: "Person", primaryKey: key))
            ids.append(ObjectID(entityName: "Account", primaryKey: key))  // same key, other entity
        }
        try withTestStore { store in
            let context = store.context("A")
            context.performAndWait {
                for _ in 0..<500 { ids.append(context.insert(entity: "Person").objectID) }
            }
        }
        var byID: [ObjectID: Int] = [:]
        for (index, id) in ids.enumerated() { byID[id] = index }
        #expect(byID.count == ids.count)
        #expect(Set(ids).count == ids.count)
        for (index, id) in ids.enumerated() {
            // A copy rebuilt from its URI is a different value that must find the same slot.
            let rebuilt = ObjectID(uriString: id.uriString)!
            #expect(byID[rebuilt] == index)
        }
        #expect(byID[ObjectID(entityName: "Tag", primaryKey: 1)] == nil)
        #expect(Set(ids).contains(ObjectID(entityName: "Account", primaryKey: 1_999)))
        #expect(!Set(ids).contains(ObjectID(entityName: "Account", primaryKey: 2_000)))
    }

    @Test("temporary URI round trip")
    func temporaryURI() throws {
        try withTestStore { store in
            let context = store.context("A")
            let id = context.performAndWait { context.insert(entity: "Person").objectID }
            #expect(ObjectID(uriRepresentation: id.uriRepresentation) == id)
            // The identity keeps a UUID's 16 bytes: a given UUID's text comes back exactly,
            // and the ID read from it equals, hashes and prints as the original.
            let uuid = UUID()
            let text = "cairn://Person/t\(uuid.uuidString)"
            let parsed = try #require(ObjectID(uriString: text))
            #expect(parsed.uriString == text)
            #expect(parsed.isTemporaryID)
            let again = try #require(ObjectID(uriString: text))
            #expect(parsed == again && parsed.hashValue == again.hashValue)
            #expect(Set([parsed, again, id]).count == 2)
            let other = try #require(ObjectID(uriString: "cairn://Person/t\(UUID().uuidString)"))
            #expect(other != parsed)
        }
    }

    @Test("malformed URIs are rejected", arguments: [
        "cairn://Person/p01", "cairn://Person/p", "cairn://Person/x1", "cairn://Per son/p1", "http://Person/p1",
        "cairn://Person/p-1", "cairn://Person/p18446744073709551616", "cairn://Person", "cairn://9P/p1",
        "cairn://Person/tnot-a-uuid", "cairn://Person/t6f1c8a4e-0000-4000-8000-000000000000",
    ])
    func malformed(uri: String) {
        #expect(ObjectID(uriString: uri) == nil)
    }

    @Test("existingObject(with:) throws typed errors")
    func existingObjectErrors() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let context = store.context("A")
            try context.performAndWait { () throws -> Void in
                #expect(try context.existingObject(with: id)["name"] == .string("Ann"))
                let missing = ObjectID(entityName: "Person", primaryKey: 999)
                do { _ = try context.existingObject(with: missing); Issue.record("expected objectNotFound") }
                catch ContextError.objectNotFound(let reported) { #expect(reported == missing) }
                let foreignTemporary = store.context("B").performAndWait { ObjectID(uriString: "cairn://Person/t\(UUID().uuidString)")! }
                do { _ = try context.existingObject(with: foreignTemporary); Issue.record("expected unknownTemporaryID") }
                catch ContextError.unknownTemporaryID(let reported) { #expect(reported == foreignTemporary) }
                do { _ = try context.existingObject(with: ObjectID(entityName: "Nobody", primaryKey: 1)); Issue.record("expected unknownEntity") }
                catch ContextError.unknownEntity(let name) { #expect(name == "Nobody") }
            }
        }
    }

    @Test("existingObject(with:) on an ID deleted in the store throws, also for a fault registered earlier")
    func deletedInStore() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let a = store.context("A")
            let fault = a.performAndWait { a.object(with: id).isFault }
            #expect(fault)
            let b = store.context("B")
            try b.performAndWait {
                b.delete(try b.existingObject(with: id))
                try b.save()
            }
            try a.performAndWait { () throws -> Void in
                #expect(throws: ContextError.self) { _ = try a.existingObject(with: id) }
                #expect(a.registeredObjects.isEmpty)
            }
        }
    }

    @Test("an object ID moves from a background context to the main-queue view context")
    func acrossContexts() async throws {
        try await withTestStore { store in
            let background = store.objects.newBackgroundContext(name: "importer")
            let id = try await background.perform {
                let object = background.insert(entity: "Person")
                object["name"] = .string("Ann")
                object["age"] = .int(30)
                try background.save()
                return object.objectID
            }
            let view = await store.objects.viewContext
            DispatchQueue.main.setSpecific(key: mainQueueMarker, value: true)
            let (name, onMain) = try await view.perform {
                // On Linux the main queue may be drained by a worker thread (dispatch_main), so
                // ask the queue, not Thread.isMainThread.
                (try view.existingObject(with: id)["name"], DispatchQueue.getSpecific(key: mainQueueMarker) == true)
            }
            #expect(name == .string("Ann"))
            #expect(onMain, "the view context runs on the main queue")
            // And to another private queue, lazily, as a fault.
            let other = store.context("other")
            let age = try await other.perform { other.object(with: id)["age", as: Int.self] }
            #expect(age == 30)
        }
    }

    @Test("obtainPermanentIDs gives permanent IDs before saving")
    func obtainPermanentIDs() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait {
                let first = context.insert(entity: "Person")
                let second = context.insert(entity: "Person")
                let temporary = first.objectID
                try context.obtainPermanentIDs(for: [first, second])
                #expect(!first.objectID.isTemporaryID && !second.objectID.isTemporaryID)
                #expect(first.objectID != second.objectID)
                #expect(context.object(with: temporary) === first)
                #expect(first.isInserted)
                for (object, name) in [(first, "Ann"), (second, "Bob")] {
                    object["name"] = .string(name)
                    object["age"] = .int(1)
                }
                let permanent = first.objectID
                try context.save()
                #expect(first.objectID == permanent)
                #expect(try store.committed(permanent)?.values.value(of: "name") == .string("Ann"))
            }
        }
    }

    @Test("the key allocator hands out increasing keys and skips keys chosen by callers")
    func allocatorSkipsChosenKeys() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait {
                for key: UInt64 in [1, 2, 3] {
                    let object = context.insert(entity: "Counter", primaryKey: key)
                    object["count"] = .int(Int64(key))
                }
                try context.save()
                let fresh = context.insert(entity: "Counter")
                try context.save()
                #expect(fresh.objectID.primaryKey == 4)
                let next = context.insert(entity: "Counter")
                try context.save()
                #expect(next.objectID.primaryKey == 5)
            }
        }
    }

    @Test("a permanent ID's URI is written as its interpolation reads, for keys of every length")
    func permanentURIBytes() {
        var keys: [UInt64] = [0, 1, 9, 10, 99, 100, 12_345, UInt64.max, UInt64.max - 1]
        var power: UInt64 = 1
        while power <= UInt64.max / 10 {
            power *= 10
            keys += [power - 1, power, power + 1]
        }
        for entity in ["Person", "P", "Department_2"] {
            for key in keys {
                let id = ObjectID(entityName: entity, primaryKey: key)
                #expect(id.uriString == "cairn://" + entity + "/p" + String(key))
                #expect(ObjectID(uriString: id.uriString) == id)
            }
        }
    }
}
