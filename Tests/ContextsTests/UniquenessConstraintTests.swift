import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// The "Uniqueness constraints" table of the merge contract, row by row, and the rules around
/// it: duplicates within one save, nulls, the temporary ID after a merge, the schema's checks.
@Suite struct UniquenessConstraintTests {
    static let ann: PropertyValues = ["email": .string("a@x"), "name": .string("Anne"), "city": .string("Oslo"), "age": .int(40)]

    // MARK: - Schema

    @Test func aConstraintOnAnUnknownAttributeIsATypedError() {
        #expect(throws: SchemaError.uniquenessConstraintOnUnknownAttribute(entity: "User", attribute: "emial")) {
            _ = try Schema([EntityDescription("User", attributes: [AttributeDescription("email", .string)],
                                              uniquenessConstraints: [["emial"]])])
        }
        #expect(throws: SchemaError.invalidUniquenessConstraint(entity: "User", attributes: [])) {
            _ = try Schema([EntityDescription("User", attributes: [AttributeDescription("email", .string)],
                                              uniquenessConstraints: [[]])])
        }
        #expect(throws: SchemaError.duplicateUniquenessConstraint(entity: "User", attributes: ["email"])) {
            _ = try Schema([EntityDescription("User", attributes: [AttributeDescription("email", .string)],
                                              uniquenessConstraints: [["email"], ["email"]])])
        }
        let user = EntityDescription("User", attributes: [AttributeDescription("a", .int), AttributeDescription("b", .int)],
                                     uniquenessConstraints: [["a", "b"]])
        #expect(user.uniquenessConstraints == [["a", "b"]])
        #expect(user.indexes == [])
    }

    @Test func aConstraintIsAnIndexThePlannerUses() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        _ = try UniqueModel.seed(Self.ann, in: store.objects)
        let context = store.objects.newBackgroundContext()
        try context.performAndWait {
            let request = FetchRequest(entityName: "User", predicate: .compare("email", .equal, .string("a@x")))
            let plan = try context.explain(request)
            let found = try context.fetch(request)
            #expect(plan.access == .index(attributes: ["email"]))
            #expect(found.count == 1)
        }
        #expect(try store.objects.indexProblems() == [])
    }

    // MARK: - The table

    @Test func errorPolicyFailsNamingObjectsConstraintAndValuesAndWritesNothing() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let storedID = try UniqueModel.seed(Self.ann, in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .error)
        try context.performAndWait {
            let other = UniqueModel.insert(["email": .string("b@x"), "name": .string("Bo")], in: context)
            let user = UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann")], in: context)
            let error = #expect(throws: MergeError.self) { try context.save() }
            let conflict = try #require(error?.conflicts.first)
            #expect(error?.conflicts.count == 1)
            #expect(conflict.kind == .constraint)
            #expect(conflict.objectID == user.objectID.uriString)
            #expect(conflict.storedObjectID == storedID.uriString)
            #expect(conflict.constraint == ["email"])
            #expect(conflict.constraintValues == ["email": .string("a@x")])
            #expect(conflict.storeValues == Self.ann)
            #expect(conflict.storeVersion == 1)
            #expect("\(error!)".contains("constraint [email]") && "\(error!)".contains(storedID.uriString))
            // Nothing written, the context keeps its pending inserts.
            #expect(user.isInserted && other.isInserted)
        }
        #expect(try UniqueModel.storedUsers(in: store.objects) == [Self.ann])
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func objectTrumpUpsertsAnInsertWithAllItsPropertiesAndTheStoredID() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let storedID = try UniqueModel.seed(Self.ann, in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .objectTrump)
        try context.performAndWait {
            let user = UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann"), "age": .int(30)], in: context)
            let temporaryID = user.objectID
            try context.save()
            #expect(context.lastSaveConflicts.map(\.kind) == [.constraint])
            // The context's object is the stored one now; its temporary ID still finds it.
            #expect(user.objectID == storedID)
            #expect(context.object(with: temporaryID) === user)
            #expect(context.object(with: storedID) === user)
            #expect(!user.hasChanges)
        }
        // Ours on every property, the unset optional city as null.
        let expected: PropertyValues = ["email": .string("a@x"), "name": .string("Ann"), "age": .int(30)]
        #expect(try store.objects.committedState(of: storedID)?.values == expected)
        #expect(try store.objects.committedState(of: storedID)?.version == 2)
        #expect(try UniqueModel.storedUsers(in: store.objects).count == 1)
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func objectTrumpMergesAChangeIntoTheStoredObjectWinningOnThePropertiesSet() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let annID = try UniqueModel.seed(Self.ann, in: store.objects)
        let boID = try UniqueModel.seed(["email": .string("b@x"), "name": .string("Bo"), "city": .string("Rome")], in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .objectTrump)
        try context.performAndWait {
            let bo = try context.existingObject(with: boID)
            bo["email"] = .string("a@x")
            bo["name"] = .string("Bob")
            try context.save()
            #expect(bo.objectID == annID)
        }
        // Ours where we set (email, name), the stored object's elsewhere; our old record is gone.
        #expect(try store.objects.committedState(of: annID)?.values
            == ["email": .string("a@x"), "name": .string("Bob"), "city": .string("Oslo"), "age": .int(40)])
        #expect(try store.objects.committedState(of: boID) == nil)
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func storeTrumpKeepsTheStoredValuesAndFillsOnlyItsNulls() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let storedID = try UniqueModel.seed(["email": .string("a@x"), "name": .string("Anne"), "age": .int(40)], in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .storeTrump)
        try context.performAndWait {
            let user = UniqueModel.insert(
                ["email": .string("a@x"), "name": .string("Ann"), "city": .string("Rome"), "age": .int(30)], in: context)
            let temporaryID = user.objectID
            try context.save()
            #expect(user.objectID == storedID)
            #expect(context.object(with: temporaryID) === user)
            #expect(user["name"] == .string("Anne") && user["city"] == .string("Rome"))
        }
        #expect(try store.objects.committedState(of: storedID)?.values
            == ["email": .string("a@x"), "name": .string("Anne"), "city": .string("Rome"), "age": .int(40)])
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func storeTrumpWithNothingToFillWritesNothingAndAdoptsTheStoredObject() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let storedID = try UniqueModel.seed(Self.ann, in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .storeTrump)
        try context.performAndWait {
            let user = UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann")], in: context)
            try context.save()
            #expect(user.objectID == storedID)
            #expect(user.values == Self.ann)
            #expect(!user.hasChanges)
        }
        #expect(try store.objects.committedState(of: storedID)?.version == 1)
        #expect(try UniqueModel.storedUsers(in: store.objects) == [Self.ann])
    }

    @Test func overwriteGivesTheStoredObjectOurWholeStateAndKeepsItsID() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let storedID = try UniqueModel.seed(Self.ann, in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .overwrite)
        try context.performAndWait {
            let user = UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann"), "age": .int(30)], in: context)
            let temporaryID = user.objectID
            try context.save()
            #expect(user.objectID == storedID)
            #expect(context.object(with: temporaryID) === user)
        }
        #expect(try store.objects.committedState(of: storedID)?.values
            == ["email": .string("a@x"), "name": .string("Ann"), "age": .int(30)])
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func rollbackDiscardsOurInsertAndTheSaveGoesOn() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        _ = try UniqueModel.seed(Self.ann, in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .rollback)
        try context.performAndWait {
            let user = UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann")], in: context)
            let temporaryID = user.objectID
            UniqueModel.insert(["email": .string("c@x"), "name": .string("Cy")], in: context)
            try context.save()
            #expect(context.lastSaveConflicts.map(\.kind) == [.constraint])
            #expect {
                try context.existingObject(with: temporaryID)
            } throws: { error in
                guard case ContextError.unknownTemporaryID(let id) = error else { return false }
                return id == temporaryID
            }
        }
        #expect(try UniqueModel.storedUsers(in: store.objects)
            == [Self.ann, ["email": .string("c@x"), "name": .string("Cy")]])
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func rollbackDiscardsAChangeAndTheObjectHoldsItsStoredState() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        _ = try UniqueModel.seed(Self.ann, in: store.objects)
        let bo: PropertyValues = ["email": .string("b@x"), "name": .string("Bo")]
        let boID = try UniqueModel.seed(bo, in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .rollback)
        try context.performAndWait {
            let object = try context.existingObject(with: boID)
            object["email"] = .string("a@x")
            try context.save()
            #expect(object.objectID == boID)
            #expect(object.values == bo)
            #expect(!object.hasChanges)
        }
        #expect(try UniqueModel.storedUsers(in: store.objects) == [Self.ann, bo])
        #expect(try store.objects.indexProblems() == [])
    }

    // MARK: - Around the table

    @Test(arguments: ["error", "storeTrump", "objectTrump", "overwrite", "rollback"])
    func duplicatesInsideOneSaveAreAValidationErrorUnderEveryPolicy(policyName: String) throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let context = store.objects.newBackgroundContext(mergePolicy: try #require(BuiltInPolicies.named(policyName)))
        context.performAndWait {
            let first = UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann")], in: context)
            let second = UniqueModel.insert(["email": .string("a@x"), "name": .string("Anne")], in: context)
            let error = #expect(throws: ValidationError.self) { try context.save() }
            #expect(error?.objectID == second.objectID)
            #expect(error?.problem == .duplicateInSave(constraint: ["email"], otherObjectID: first.objectID))
            #expect(first.isInserted && second.isInserted)
        }
        #expect(try UniqueModel.storedUsers(in: store.objects) == [])
    }

    @Test func nullsAreNotConstrained() throws {
        let store = try IndexedStore(schema: UniqueModel.schema(constraints: [["email"], ["city", "age"]]))
        defer { store.close() }
        _ = try UniqueModel.seed(["name": .string("Stored"), "city": .string("Oslo")], in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .error)
        try context.performAndWait {
            // No email at all, and compound values with a null: none of them constrained.
            UniqueModel.insert(["name": .string("A"), "city": .string("Oslo")], in: context)
            UniqueModel.insert(["name": .string("B"), "city": .string("Oslo")], in: context)
            try context.save()
            #expect(context.lastSaveConflicts.isEmpty)
        }
        #expect(try UniqueModel.storedUsers(in: store.objects).count == 3)
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func theTemporaryIDFindsTheMergedObjectAfterObtainPermanentIDs() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let storedID = try UniqueModel.seed(Self.ann, in: store.objects)
        // The same object already registered in the context (clean) gives way to the merged one.
        let context = store.objects.newBackgroundContext(mergePolicy: .objectTrump)
        try context.performAndWait {
            _ = try context.existingObject(with: storedID)
            let user = UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann")], in: context)
            let temporaryID = user.objectID
            try context.obtainPermanentIDs(for: [user])
            try context.save()
            #expect(user.objectID == storedID)
            #expect(context.object(with: temporaryID) === user)
            #expect(try context.existingObject(with: storedID) === user)
        }
    }

    @Test func aCustomPolicySeesTheConstraintKind() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let storedID = try UniqueModel.seed(Self.ann, in: store.objects)
        let policy = RecordingPolicy(answering: .overwrite)
        let context = store.objects.newBackgroundContext(mergePolicy: policy)
        try context.performAndWait {
            UniqueModel.insert(["email": .string("a@x"), "name": .string("Ann")], in: context)
            try context.save()
        }
        let conflict = try #require(policy.conflicts.first)
        #expect(policy.conflicts.count == 1)
        #expect(conflict.kind == .constraint)
        #expect(conflict.isInsertion)
        #expect(conflict.storedObjectID == storedID.uriString)
        #expect(conflict.ourValues == ["email": .string("a@x"), "name": .string("Ann")])
    }

    @Test func twoObjectsSwappingTheirValuesInOneSaveCommit() throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let annID = try UniqueModel.seed(Self.ann, in: store.objects)
        let boID = try UniqueModel.seed(["email": .string("b@x"), "name": .string("Bo")], in: store.objects)
        let context = store.objects.newBackgroundContext(mergePolicy: .error)
        try context.performAndWait {
            try context.existingObject(with: annID)["email"] = .string("b@x")
            try context.existingObject(with: boID)["email"] = .string("a@x")
            try context.save()
        }
        #expect(try store.objects.committedState(of: annID)?.values.value(of: "email") == .string("b@x"))
        #expect(try store.objects.indexProblems() == [])
    }

    @Test func ordinaryIndexEntriesOfEqualValuesNeverConflict() throws {
        let store = try IndexedStore(schema: UniqueModel.schema(indexes: [["name"]]))
        defer { store.close() }
        let first = store.objects.newBackgroundContext(mergePolicy: .error)
        let second = store.objects.newBackgroundContext(mergePolicy: .error)
        // The same indexed name (distinct emails), from two contexts that never saw each other.
        first.performAndWait { _ = UniqueModel.insert(["email": .string("a@x"), "name": .string("Same")], in: first) }
        second.performAndWait { _ = UniqueModel.insert(["email": .string("b@x"), "name": .string("Same")], in: second) }
        try first.performAndWait { try first.save() }
        try second.performAndWait {
            try second.save()
            #expect(second.lastSaveReport?.attempts == 1)
        }
    }
}
