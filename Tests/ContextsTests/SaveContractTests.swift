import Contexts
import Foundation
import KVEngine
import Policies
import Testing

/// The rest of the contract: atomicity, the error policy's error, ancestors after saves,
/// re-insertion, bounded retries and custom policies.
@Suite("Contract: saves")
struct SaveContractTests {
    @Test("rollback: the other, non-conflicting objects of the same save are saved")
    func rollbackSavesTheOthers() throws {
        try withTestStore { store in
            let conflicting = try store.seed("Person", person("Ann", 30, "Oslo"))
            let clean = try store.seed("Person", person("Bob", 25, "Rome"))
            let a = store.context("A", policy: .rollback)
            let b = store.context("B")
            try a.performAndWait { _ = try a.existingObject(with: conflicting); _ = try a.existingObject(with: clean) }
            try b.performAndWait {
                try b.existingObject(with: conflicting)["age"] = .int(31)
                try b.save()
            }
            try a.performAndWait {
                try a.existingObject(with: conflicting)["city"] = .string("Bergen")
                try a.existingObject(with: clean)["city"] = .string("Paris")
                let inserted = a.insert(entity: "Person")
                inserted["name"] = .string("Cid")
                inserted["age"] = .int(50)
                try a.save()
                #expect(try store.committed(conflicting)?.values == person("Ann", 31, "Oslo"))
                #expect(try store.committed(conflicting)?.version == 2)
                #expect(try store.committed(clean)?.values == person("Bob", 25, "Paris"))
                #expect(try store.committed(clean)?.version == 2)
                #expect(try store.committed(inserted.objectID)?.values == person("Cid", 50))
                #expect(try a.existingObject(with: conflicting).values == person("Ann", 31, "Oslo"))
                #expect(!a.hasChanges)
            }
        }
    }

    @Test("after every successful save the ancestor is what was saved, with the new version")
    func ancestorAfterSave() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait {
                let object = context.insert(entity: "Person")
                object["name"] = .string("Ann")
                object["age"] = .int(30)
                #expect(object.committedVersion == 0)
                #expect(object.committedValues.isEmpty)
                try context.save()
                #expect(object.committedVersion == 1)
                #expect(object.committedValues == person("Ann", 30))
                object["age"] = .int(31)
                #expect(object.committedValues == person("Ann", 30))
                try context.save()
                #expect(object.committedVersion == 2)
                #expect(object.committedValues == person("Ann", 31))
                #expect(try store.committed(object.objectID)?.version == 2)
                object["city"] = .string("Oslo")
                object["city"] = .null
                #expect(!object.hasChanges, "setting a property back to its saved value leaves the object clean")
            }
        }
    }

    @Test("the error policy's error lists every conflict; nothing is written; the context keeps its changes; refresh(mergeChanges: true) then save succeeds")
    func errorPolicyError() throws {
        try withTestStore { store in
            let updated = try store.seed("Person", person("Ann", 30, "Oslo"))
            let goneInStore = try store.seed("Person", person("Bob", 25, "Rome"))
            let deletedHere = try store.seed("Person", person("Cid", 35, "Bergen"))
            let clean = try store.seed("Person", person("Dee", 40))
            let a = store.context("A")
            let b = store.context("B")
            try a.performAndWait {
                for id in [updated, goneInStore, deletedHere, clean] { _ = try a.existingObject(with: id) }
            }
            try b.performAndWait {
                try b.existingObject(with: updated)["age"] = .int(31)
                b.delete(try b.existingObject(with: goneInStore))
                try b.existingObject(with: deletedHere)["city"] = .string("Paris")
                try b.save()
            }
            let before = try [updated, goneInStore, deletedHere, clean].map { try store.committed($0)?.version }
            try a.performAndWait {
                try a.existingObject(with: updated)["city"] = .string("Rome")
                try a.existingObject(with: goneInStore)["age"] = .int(26)
                a.delete(try a.existingObject(with: deletedHere))
                try a.existingObject(with: clean)["note"] = .string("clean change")
                let inserted = a.insert(entity: "Person")
                inserted["name"] = .string("Eve")
                inserted["age"] = .int(20)

                let error = try #require(throws: MergeError.self) { try a.save() }
                #expect(error.conflicts == [
                    MergeConflict(
                        objectID: updated.uriString, kind: .updateUpdate,
                        ancestorValues: person("Ann", 30, "Oslo"), ancestorVersion: 1,
                        ourValues: person("Ann", 30, "Rome"),
                        storeValues: person("Ann", 31, "Oslo"), storeVersion: 2),
                    MergeConflict(
                        objectID: goneInStore.uriString, kind: .updateDelete,
                        ancestorValues: person("Bob", 25, "Rome"), ancestorVersion: 1,
                        ourValues: person("Bob", 26, "Rome"),
                        storeValues: nil, storeVersion: 0),
                    MergeConflict(
                        objectID: deletedHere.uriString, kind: .deleteUpdate,
                        ancestorValues: person("Cid", 35, "Bergen"), ancestorVersion: 1,
                        ourValues: nil,
                        storeValues: person("Cid", 35, "Paris"), storeVersion: 2),
                ])
                #expect("\(error)".contains("deleted (version 0)"))
                // Nothing written: versions as before, the insert absent.
                #expect(try [updated, goneInStore, deletedHere, clean].map { try store.committed($0)?.version } == before)
                #expect(try store.storedCount("Person") == 3)
                // The context keeps all of its pending changes.
                #expect(a.insertedObjects == [inserted])
                #expect(inserted.objectID.isTemporaryID)
                let updatedIDs: Set<ObjectID> = Set(a.updatedObjects.map(\.objectID))
                #expect(updatedIDs == [updated, goneInStore, clean])
                #expect(a.deletedObjects.map(\.objectID) == [deletedHere])
                #expect(try a.existingObject(with: updated)["city"] == .string("Rome"))
                #expect(a.lastSaveReport?.succeeded == false)

                // Recover: refresh the conflicting objects with their changes on top, save again.
                for id in [updated, goneInStore, deletedHere] {
                    try a.refresh(a.object(with: id), mergeChanges: true)
                }
                try a.save()
                #expect(try store.committed(updated)?.values == person("Ann", 31, "Rome"))
                #expect(try store.committed(updated)?.version == 3)
                #expect(try store.committed(goneInStore) == nil)
                #expect(try store.committed(deletedHere) == nil)
                #expect(try store.committed(clean)?.values == person("Dee", 40, note: "clean change"))
                #expect(try store.committed(inserted.objectID)?.values == person("Eve", 20))
                #expect(!a.hasChanges)
            }
        }
    }

    @Test("atomicity: one conflict among several clean objects writes nothing under the error policy")
    func atomicity() throws {
        try withTestStore { store in
            let ids = try (0..<5).map { try store.seed("Account", ["owner": .string("o\($0)"), "balance": .int(100)]) }
            let a = store.context("A")
            let b = store.context("B")
            try a.performAndWait { for id in ids { _ = try a.existingObject(with: id) } }
            try b.performAndWait {
                try b.existingObject(with: ids[2])["balance"] = .int(150)
                try b.save()
            }
            try a.performAndWait {
                for id in ids { try a.existingObject(with: id)["balance"] = .int(0) }
                for index in 0..<3 {
                    let account = a.insert(entity: "Account")
                    account["owner"] = .string("new\(index)")
                    account["balance"] = .int(1)
                }
                a.delete(try a.existingObject(with: ids[4]))
                #expect(throws: MergeError.self) { try a.save() }
            }
            for (index, id) in ids.enumerated() {
                let record = try #require(try store.committed(id))
                #expect(record.values.value(of: "balance") == .int(index == 2 ? 150 : 100))
                #expect(record.version == (index == 2 ? 2 : 1))
            }
            #expect(try store.storedCount("Account") == 5)
        }
    }

    @Test("a re-inserted object keeps its object ID and the context can keep using it")
    func reinsertKeepsID() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let a = store.context("A", policy: .overwrite)
            let b = store.context("B")
            try a.performAndWait { _ = try a.existingObject(with: id) }
            try b.performAndWait {
                b.delete(try b.existingObject(with: id))
                try b.save()
            }
            try a.performAndWait {
                let object = try a.existingObject(with: id)
                object["age"] = .int(40)
                try a.save()
                #expect(object.objectID == id)
                #expect(a.object(with: id) === object)
                #expect(a.lastSaveReport?.insertedObjectIDs == [id])
                object["age"] = .int(41)
                try a.save()
                #expect(try store.committed(id)?.values == person("Ann", 41))
                // Deleted at 1, re-inserted at 2 (continuing from the tombstone), updated to 3.
                #expect(try store.committed(id)?.version == TestBackend.current.reinsertedVersion(deletedAt: 1) + 1)
            }
        }
    }

    /// A policy that changes the store every time it is asked: the save can never catch up.
    struct MovingTargetPolicy: MergePolicy {
        let store: Store
        let key: [UInt8]
        var name: String { "movingTarget" }
        func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution] {
            var batch = WriteBatch()
            batch.put(ValueCodec.encode(person("Zed", Int64.random(in: 0..<1000))), forKey: key, in: "entity:Person")
            try store.commit(batch)
            return conflicts.map { .write($0.ourValues ?? [:]) }
        }
    }

    @Test("the store moving under every retry: the save gives up after maxSaveAttempts with a clear error, writing nothing")
    func boundedRetries() throws {
        try withTestStore(configure: { $0.maxSaveAttempts = 5 }) { store in
            let id = try store.seed("Person", person("Ann", 30))
            let a = store.context("A")
            let b = store.context("B")
            a.mergePolicy = MovingTargetPolicy(store: store.objects.store, key: [0, 0, 0, 0, 0, 0, 0, UInt8(id.primaryKey!)])
            try a.performAndWait { _ = try a.existingObject(with: id) }
            try b.performAndWait {
                try b.existingObject(with: id)["age"] = .int(31)
                try b.save()
            }
            try a.performAndWait {
                let object = try a.existingObject(with: id)
                object["city"] = .string("Rome")
                do {
                    try a.save()
                    Issue.record("the save should have given up")
                } catch ContextError.tooManyConflictRetries(let attempts, let conflicts) {
                    #expect(attempts == 5)
                    #expect(conflicts.count == 1)
                    #expect("\(ContextError.tooManyConflictRetries(attempts: attempts, conflicts: conflicts))".contains("gave up after 5"))
                }
                #expect(a.lastSaveReport?.attempts == 5)
                #expect(a.lastSaveReport?.conflicts.count == 4)
                #expect(try store.committed(id)?.values.value(of: "name") == .string("Zed"))
                #expect(try store.committed(id)?.values.value(of: "city") == .null, "A's change never reached the store")
                #expect(object["city"] == .string("Rome"))
                #expect(object.committedVersion == 1, "the context keeps its original ancestor")
            }
        }
    }

    struct Refusal: Error, Equatable {}

    struct RefusingPolicy: MergePolicy {
        var name: String { "refusing" }
        func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution] { throw Refusal() }
    }

    struct MiscountingPolicy: MergePolicy {
        var name: String { "miscounting" }
        func resolve(_ conflicts: [MergeConflict]) -> [Resolution] { [] }
    }

    struct InvalidWritePolicy: MergePolicy {
        var name: String { "invalidWrite" }
        func resolve(_ conflicts: [MergeConflict]) -> [Resolution] { conflicts.map { _ in .write(["name": .int(7), "age": .int(1)]) } }
    }

    /// Makes the store change age to 31 under A, then has A change city and save with `policy`.
    func conflictingSave(_ store: TestStore, policy: any MergePolicy) throws -> (ObjectID, ObjectContext) {
        let id = try store.seed("Person", person("Ann", 30))
        let a = store.context("A", policy: policy)
        let b = store.context("B")
        try a.performAndWait { _ = try a.existingObject(with: id) }
        try b.performAndWait {
            try b.existingObject(with: id)["age"] = .int(31)
            try b.save()
        }
        try a.performAndWait { try a.existingObject(with: id)["city"] = .string("Rome") }
        return (id, a)
    }

    @Test("a policy that throws fails the save with its error; nothing written; changes kept")
    func throwingPolicy() throws {
        try withTestStore { store in
            let (id, a) = try conflictingSave(store, policy: RefusingPolicy())
            try a.performAndWait { () throws -> Void in
                #expect(throws: Refusal()) { try a.save() }
                #expect(try store.committed(id)?.values == person("Ann", 31))
                #expect(try a.existingObject(with: id)["city"] == .string("Rome"))
                #expect(a.lastSaveConflicts.count == 1)
            }
        }
    }

    @Test("a policy returning the wrong number of resolutions fails the save")
    func miscountingPolicy() throws {
        try withTestStore { store in
            let (id, a) = try conflictingSave(store, policy: MiscountingPolicy())
            try a.performAndWait {
                let error = try #require(throws: ResolutionCountMismatch.self) { try a.save() }
                #expect(error.conflictCount == 1 && error.resolutionCount == 0)
                #expect(try store.committed(id)?.version == 2)
            }
        }
    }

    @Test("values written by a policy are validated too")
    func policyWritesAreValidated() throws {
        try withTestStore { store in
            let (id, a) = try conflictingSave(store, policy: InvalidWritePolicy())
            try a.performAndWait {
                let error = try #require(throws: ValidationError.self) { try a.save() }
                #expect(error.attributeName == "name")
                #expect(error.problem == .wrongType(expected: .string, found: .int(7)))
                #expect(try store.committed(id)?.values == person("Ann", 31))
            }
        }
    }

    @Test("the merge policy can be changed between saves, from any thread")
    func policyChangesBetweenSaves() throws {
        try withTestStore { store in
            let (id, a) = try conflictingSave(store, policy: .error)
            a.performAndWait { () -> Void in #expect(throws: MergeError.self) { try a.save() } }
            a.mergePolicy = .storeTrump   // from the test's thread
            #expect(a.mergePolicy.name == "storeTrump")
            try a.performAndWait { try a.save() }
            #expect(try store.committed(id)?.values == person("Ann", 31, "Rome"))
        }
    }

    @Test("custom policies: addingDeltas keeps both increments; lastWriterWins picks the newer side")
    func customPolicies() throws {
        try withTestStore { store in
            let counter = try store.seed("Counter", ["count": .int(10)])
            let a = store.context("A", policy: .addingDeltas(for: ["count"], otherwise: .error))
            let b = store.context("B")
            try a.performAndWait { _ = try a.existingObject(with: counter) }
            try b.performAndWait {
                try b.existingObject(with: counter)["count"] = .int(15)
                try b.save()
            }
            try a.performAndWait {
                let object = try a.existingObject(with: counter)
                object["count"] = .int(13)
                try a.save()
                #expect(object["count"] == .int(18))
            }
            #expect(try store.committed(counter)?.values["count"] == .int(18))

            let old = Date(timeIntervalSince1970: 1_000)
            let new = Date(timeIntervalSince1970: 2_000)
            let id = try store.seed("Person", person("Ann", 30).merging(["modifiedAt": .date(old)]) { $1 })
            let c = store.context("C", policy: LastWriterWinsPolicy(timestampProperty: "modifiedAt"))
            let d = store.context("D")
            try c.performAndWait { _ = try c.existingObject(with: id) }
            try d.performAndWait {
                let object = try d.existingObject(with: id)
                object["age"] = .int(31)
                object["modifiedAt"] = .date(old.addingTimeInterval(1))
                try d.save()
            }
            try c.performAndWait {
                let object = try c.existingObject(with: id)
                object["age"] = .int(40)
                object["modifiedAt"] = .date(new)
                try c.save()
            }
            #expect(try store.committed(id)?.values["age"] == .int(40))
        }
    }

    @Test("an insert with a chosen primary key that is taken fails the save, writing nothing")
    func chosenKeyInUse() throws {
        try withTestStore { store in
            let a = store.context("A")
            try a.performAndWait {
                let first = a.insert(entity: "Person", primaryKey: 7)
                first["name"] = .string("Ann")
                first["age"] = .int(30)
                try a.save()
            }
            let b = store.context("B")
            try b.performAndWait {
                let clash = b.insert(entity: "Person", primaryKey: 7)
                clash["name"] = .string("Bob")
                clash["age"] = .int(1)
                let other = b.insert(entity: "Person")
                other["name"] = .string("Cid")
                other["age"] = .int(2)
                do {
                    try b.save()
                    Issue.record("expected primaryKeyInUse")
                } catch ContextError.primaryKeyInUse(let id) {
                    #expect(id == ObjectID(entityName: "Person", primaryKey: 7))
                }
                #expect(b.insertedObjects.count == 2)
            }
            #expect(try store.committed(ObjectID(entityName: "Person", primaryKey: 7))?.values == person("Ann", 30))
            #expect(try store.storedCount("Person") == 1)
        }
    }

    /// A save encodes each record in the pass that collects the objects and, while no object
    /// is new, builds its batch there too; from the first new object on, the keys wait for
    /// allocation and the batch is built afterwards from the kept records. Both orders of
    /// changed and new objects, and a merge policy's values on retry, must write what each
    /// object holds.
    @Test("changed and new objects in either order, and a policy's values, are each written as held")
    func mixedSavesWriteWhatEachObjectHolds() throws {
        try withTestStore { store in
            let ids = try (0..<4).map { try store.seed("Person", ["name": .string("p\($0)"), "age": .int(Int64($0))]) }
            let context = store.context("A", policy: .objectTrump)
            let (newFirst, newLast) = try context.performAndWait {
                // A new object registered before the fetched ones, and one after them.
                let first = context.insert(entity: "Person")
                first["name"] = .string("new first")
                first["age"] = .int(100)
                let people = try ids.map { try context.existingObject(with: $0) }
                for (index, person) in people.enumerated() { person["age"] = .int(Int64(10 + index)) }
                let last = context.insert(entity: "Person")
                last["name"] = .string("new last")
                last["age"] = .int(101)
                try context.save()
                return (first.objectID, last.objectID)
            }
            for (index, id) in ids.enumerated() {
                #expect(try store.committed(id)?.values["age"] == .int(Int64(10 + index)))
            }
            #expect(try store.committed(newFirst)?.values["name"] == .string("new first"))
            #expect(try store.committed(newLast)?.values["age"] == .int(101))

            // Changes only (the batch built in the collecting pass), one of them conflicting:
            // the retry writes the policy's merge, not the record encoded for the first try.
            let other = store.context("B")
            try other.performAndWait {
                try other.existingObject(with: ids[0])["name"] = .string("changed elsewhere")
                try other.save()
            }
            try context.performAndWait {
                for (index, id) in ids.enumerated() { try context.existingObject(with: id)["age"] = .int(Int64(20 + index)) }
                try context.save()
                #expect(context.lastSaveReport?.attempts == 2)
            }
            #expect(try store.committed(ids[0])?.values == ["name": .string("changed elsewhere"), "age": .int(20)])
            for (index, id) in ids.enumerated().dropFirst() {
                #expect(try store.committed(id)?.values == ["name": .string("p\(index)"), "age": .int(Int64(20 + index))])
            }
        }
    }

    @Test("a save with nothing to do succeeds without a commit")
    func emptySave() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait {
                try context.save()
                #expect(context.lastSaveReport?.attempts == 0)
                #expect(context.lastSaveReport?.succeeded == true)
            }
        }
    }
}
