import Contexts
import Foundation
import Policies
import Testing

@Suite("Typed models")
struct TypedModelTests {
    @Test("the schema comes from the model's declaration: names, types, optionality, defaults, indexes, constraints")
    func schemaFromDeclaration() throws {
        let person = try #require(typedSchema.entity(named: "Person"))
        #expect(person == Person.entity.description)
        #expect(person.attributes.map(\.name) == ["name", "age", "city", "score", "active", "born", "kind"])
        #expect(person.attributes.map(\.type) == [.string, .int, .string, .double, .bool, .date, .string])
        #expect(person.attributes.map(\.isOptional) == [false, false, true, false, false, true, false])
        #expect(person.attribute(named: "active")?.defaultValue == .bool(true))
        #expect(person.indexes == [["age"], ["city", "age"], ["name"]])
        #expect(typedSchema.entity(named: "Item")?.uniquenessConstraints == [["title"]])
        #expect(Person.entity.attribute(for: \.city)?.name == "city")
        #expect(Person.entity.attribute(for: \.name.count) == nil)
    }

    @Test("insert, fetch, update and delete a struct, with no attribute-value wrappers")
    func roundTrip() throws {
        try withTypedStore { store in
            let context = store.objects.newBackgroundContext(name: "typed")
            let born = Date(timeIntervalSinceReferenceDate: 12_345.5)
            let ann = Person(name: "Ann", age: 30, city: "Oslo", score: 0.5, active: true, born: born, kind: .company)
            let id = try context.performAndWait { () throws -> ObjectID in
                let object = try context.insert(ann)
                #expect(object.isInserted)
                #expect(try object.value == ann)
                try context.save()
                #expect(!object.objectID.isTemporaryID)
                return object.objectID
            }
            let reader = store.objects.newBackgroundContext(name: "reader")
            try reader.performAndWait {
                let found = try reader.fetch(FetchDescriptor<Person>())
                #expect(found.count == 1)
                #expect(found.first?.objectID == id)
                #expect(try found.first?.value == ann)
                #expect(try reader.fetchValues(FetchDescriptor<Person>()) == [ann])
                let object = try reader.existingObject(Person.self, with: id)
                #expect(try object.age == 30)
                #expect(try object.city == "Oslo")
                #expect(try object.kind == .company)
                try object.update { $0.age += 1; $0.city = nil }
                #expect(object.isUpdated)
                #expect(Set(object.object.changedValues().keys) == ["age", "city"])
                try object.set(\.score, to: 2.5)
                try reader.save()
            }
            try context.performAndWait {
                let object = try context.existingObject(Person.self, with: id)
                try context.refresh(object.object, mergeChanges: false)
                #expect(try object.value == Person(name: "Ann", age: 31, city: nil, score: 2.5, active: true, born: born, kind: .company))
                context.delete(object)
                #expect(object.isDeleted)
                try context.save()
                #expect(try context.fetchCount(FetchDescriptor<Person>()) == 0)
            }
        }
    }

    @Test("a declaration that maps a key path to another property's name, or misses a property, fails the write with a typed error")
    func mappingIsChecked() throws {
        try withTypedStore { store in
            let context = store.objects.newBackgroundContext(name: "mapping")
            try context.performAndWait {
                #expect(throws: TypedModelError.mappingMismatch(model: "Swapped", attribute: "second")) {
                    try context.insert(Swapped(first: "a", second: "b"))
                }
                // Equal values cannot tell the names apart, and do no harm.
                try context.insert(Swapped(first: "same", second: "same"))
                #expect(throws: TypedModelError.undeclaredProperty(model: "Undeclared", property: "extra")) {
                    try context.insert(Undeclared(declared: 1, extra: 2))
                }
                #expect(context.insertedObjects.count == 1)
                let person = try context.insert(Person(name: "Ann", age: 3, city: nil))
                #expect(throws: TypedModelError.wrongEntity(model: "Item", entity: "Person")) {
                    _ = try ModelObject<Item>(person.object)
                }
                do {
                    try person.set(\.name.count, to: 3)
                    Issue.record("a key path that is not an attribute was set")
                } catch TypedModelError.unmappedKeyPath(model: let model, keyPath: _) {
                    #expect(model == "Person")
                }
            }
        }
    }

    @Test("fetch by Swift type, with a predicate and sort, includes pending changes")
    func fetchByType() throws {
        try withTypedStore { store in
            let context = store.objects.newBackgroundContext(name: "by-type")
            try context.performAndWait {
                for (name, age) in [("Ann", 30), ("Bob", 17), ("Cid", 45)] { try context.insert(Person(name: name, age: age, city: nil)) }
                try context.save()
                try context.insert(Person(name: "Dee", age: 50, city: "Rome"))   // pending
                let adults = try context.fetch(Person.self, where: #Predicate { $0.age >= 18 }, sortBy: [SortDescriptor(\.age, order: .reverse)])
                #expect(try adults.map { try $0.name } == ["Dee", "Cid", "Ann"])
                #expect(try context.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.age < 18 })) == 1)
            }
        }
    }
}

@Suite("Objects whose record was deleted")
struct DeletedObjectTests {
    @Test("after a merge deletes an object: isDeleted, isFault, objectID and context answer; reads throw objectNotFound")
    func mergedDeletion() throws {
        try withTypedStore { store in
            let holder = store.objects.newBackgroundContext(name: "holder")
            let deleter = store.objects.newBackgroundContext(name: "deleter")
            let id = try holder.performAndWait { () throws -> ObjectID in
                let ann = try holder.insert(Person(name: "Ann", age: 30, city: nil))
                try holder.save()
                return ann.objectID
            }
            let saved = try deleter.performAndWait { () throws -> ContextDidSaveNotification? in
                deleter.delete(try deleter.existingObject(with: id))
                try deleter.save()
                return deleter.lastDidSaveNotification
            }
            let didSave = try #require(saved)
            try holder.performAndWait {
                let ann = try holder.existingObject(Person.self, with: id)
                try holder.mergeChanges(fromContextDidSave: didSave)
                #expect(!ann.isDeleted)
                #expect(!ann.isFault)
                #expect(!ann.hasChanges)
                #expect(ann.objectID == id)
                #expect(ann.context == nil)
                #expect(ann.object.context == nil)
                #expect(throwsNotFound(id) { _ = try ann.value })
                #expect(throwsNotFound(id) { _ = try ann.age })
                #expect(throwsNotFound(id) { try ann.set(\.age, to: 31) })
                #expect(throwsNotFound(id) { try ann.update { $0.age = 31 } })
                #expect(throwsNotFound(id) { _ = try ann.object.existingValues() })
            }
        }
    }

    @Test("a fault whose record another context deleted: isFault answers, the first read throws objectNotFound and forgets it")
    func faultOfDeletedRecord() throws {
        try withTypedStore { store in
            let holder = store.objects.newBackgroundContext(name: "holder")
            let deleter = store.objects.newBackgroundContext(name: "deleter")
            let id = try deleter.performAndWait { () throws -> ObjectID in
                let ann = try deleter.insert(Person(name: "Ann", age: 30, city: nil))
                try deleter.save()
                return ann.objectID
            }
            let fault = try holder.performAndWait { try holder.object(Person.self, with: id) }
            try deleter.performAndWait {
                deleter.delete(try deleter.existingObject(with: id))
                try deleter.save()
            }
            holder.performAndWait {
                #expect(fault.isFault)
                #expect(!fault.isDeleted)
                #expect(fault.objectID == id)
                #expect(fault.context === holder)
                #expect(throwsNotFound(id) { _ = try fault.value })
                #expect(fault.context == nil)
                #expect(!fault.isFault)
                #expect(throwsNotFound(id) { _ = try fault.object.existingValues() })
            }
        }
    }
}

@Suite("The main-queue context")
struct ViewContextTests {
    // A hang guard: under `make tsan` beside other work it waited minutes for the main actor.
    @Test("viewContext is reached on the main actor, and perform works from any isolation", .timeLimit(.minutes(10)))
    func fromAnyIsolation() async throws {
        try await withTypedStore { store in
            let objects = store.objects
            // On the main actor: used directly.
            let inserted = try await MainActor.run { () throws -> ObjectID in
                let view = objects.viewContext
                let ann = try view.insert(Person(name: "Ann", age: 30, city: nil))
                try view.save()
                return ann.objectID
            }
            // Off the main actor: taken with await, then perform from a task, a detached task and an actor.
            let view = await objects.viewContext
            let fromTask = try await view.perform { try view.existingObject(Person.self, with: inserted).name }
            let fromDetached = try await Task.detached { try await view.perform { try view.fetchCount(FetchDescriptor<Person>()) } }.value
            let fromActor = try await Reader().count(view)
            #expect(fromTask == "Ann")
            #expect(fromDetached == 1)
            #expect(fromActor == 1)
        }
    }
}

/// An actor of its own, to call perform from another isolation.
actor Reader {
    func count(_ context: ObjectContext) async throws -> Int {
        try await context.perform { try context.fetchCount(FetchDescriptor<Person>()) }
    }
}
