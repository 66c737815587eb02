import Contexts
import Foundation
import Policies
import Testing

@Suite("Fetch")
struct FetchTests {
    /// Six people, committed in this order (so primary keys 1…6).
    static let people: [PropertyValues] = [
        person("Ann", 30, "Oslo"),
        person("Bob", 25, "Rome"),
        person("Cid", 35),
        person("Dee", 30, "Bergen"),
        person("Eve", 41, "Oslo"),
        person("Fay", 19, "Rome"),
    ]

    static func seeded(_ body: (TestStore, ObjectContext) throws -> Void) throws {
        try withTestStore { store in
            for values in people { try store.seed("Person", values) }
            let context = store.context("fetcher")
            try context.performAndWait { try body(store, context) }
        }
    }

    static func names(_ objects: [StoredObject]) -> [String] {
        objects.map { $0["name", as: String.self] ?? "?" }
    }

    /// Each predicate and the names it must match (in primary-key order), worked out by hand.
    static let predicateTable: [(String, FetchPredicate, [String])] = [
        ("==", .compare("age", .equal, .int(30)), ["Ann", "Dee"]),
        ("!=", .compare("age", .notEqual, .int(30)), ["Bob", "Cid", "Eve", "Fay"]),
        ("<", .compare("age", .lessThan, .int(30)), ["Bob", "Fay"]),
        ("<=", .compare("age", .lessThanOrEqual, .int(30)), ["Ann", "Bob", "Dee", "Fay"]),
        (">", .compare("age", .greaterThan, .int(30)), ["Cid", "Eve"]),
        (">=", .compare("age", .greaterThanOrEqual, .int(30)), ["Ann", "Cid", "Dee", "Eve"]),
        ("string <", .compare("name", .lessThan, .string("Cid")), ["Ann", "Bob"]),
        ("== null", .compare("city", .equal, .null), ["Cid"]),
        ("!= null", .compare("city", .notEqual, .null), ["Ann", "Bob", "Dee", "Eve", "Fay"]),
        ("< with null is false", .compare("city", .lessThan, .string("Z")), ["Ann", "Bob", "Dee", "Eve", "Fay"]),
        ("int == double", .compare("age", .equal, .double(30.0)), ["Ann", "Dee"]),
        ("int < double", .compare("age", .lessThan, .double(25.5)), ["Bob", "Fay"]),
        ("in", .isIn("city", [.string("Oslo"), .string("Bergen")]), ["Ann", "Dee", "Eve"]),
        ("in with null", .isIn("city", [.null, .string("Rome")]), ["Bob", "Cid", "Fay"]),
        ("and", .and([.compare("age", .greaterThanOrEqual, .int(30)), .compare("city", .equal, .string("Oslo"))]), ["Ann", "Eve"]),
        ("or", .or([.compare("age", .lessThan, .int(20)), .compare("city", .equal, .string("Bergen"))]), ["Dee", "Fay"]),
        ("not", .not(.isIn("city", [.string("Rome")])), ["Ann", "Cid", "Dee", "Eve"]),
        ("empty and", .and([]), ["Ann", "Bob", "Cid", "Dee", "Eve", "Fay"]),
        ("empty or", .or([]), []),
        ("closure", .matching { values in
            if case .string(let name) = values.value(of: "name") { return name.hasSuffix("e") }
            return false
        }, ["Dee", "Eve"]),
    ]

    @Test("predicates", arguments: predicateTable)
    func predicate(label: String, predicate: FetchPredicate, expected: [String]) throws {
        try Self.seeded { (_, context) throws in
            let request = FetchRequest(entityName: "Person", predicate: predicate)
            #expect(try Self.names(context.fetch(request)) == expected, "\(label)")
            #expect(try context.count(for: request) == expected.count, "\(label)")
        }
    }

    @Test("sorting by several attributes, ascending and descending")
    func sorting() throws {
        try Self.seeded { (_, context) throws in
            let byAgeThenNameDescending = FetchRequest(entityName: "Person", sortDescriptors: [.ascending("age"), .descending("name")])
            #expect(try Self.names(context.fetch(byAgeThenNameDescending)) == ["Fay", "Bob", "Dee", "Ann", "Cid", "Eve"])
            let byCity = FetchRequest(entityName: "Person", sortDescriptors: [.ascending("city")])
            // Null first; ties keep primary-key order.
            #expect(try Self.names(context.fetch(byCity)) == ["Cid", "Dee", "Ann", "Eve", "Bob", "Fay"])
            let byCityDescending = FetchRequest(entityName: "Person", sortDescriptors: [.descending("city"), .ascending("name")])
            #expect(try Self.names(context.fetch(byCityDescending)) == ["Bob", "Fay", "Ann", "Eve", "Dee", "Cid"])
        }
    }

    @Test("limit and offset", arguments: [
        (0, Optional(2), ["Fay", "Bob"]),
        (2, Optional(2), ["Ann", "Dee"]),
        (5, Optional(10), ["Eve"]),
        (6, Optional(1), []),
        (4, nil, ["Cid", "Eve"]),
        (0, Optional(0), []),
    ])
    func limitAndOffset(offset: Int, limit: Int?, expected: [String]) throws {
        try Self.seeded { (_, context) throws in
            let request = FetchRequest(
                entityName: "Person", sortDescriptors: [.ascending("age"), .ascending("name")],
                fetchLimit: limit, fetchOffset: offset)
            #expect(try Self.names(context.fetch(request)) == expected)
            #expect(try context.count(for: request) == expected.count)
        }
    }

    @Test("no duplicates: a fetch returns the object the context already holds")
    func noDuplicates() throws {
        try Self.seeded { (_, context) throws in
            let request = FetchRequest(entityName: "Person")
            let first = try context.fetch(request)
            let second = try context.fetch(request)
            #expect(first.count == 6)
            #expect(zip(first, second).allSatisfy { $0 === $1 })
            #expect(context.registeredObjects.count == 6)
            let ann = context.object(with: first[0].objectID)
            #expect(ann === first[0])
        }
    }

    /// A fetch into an empty context registers its objects without indexing them by ID until
    /// something needs the index; every way in by ID must still find those very objects.
    @Test("objects of a first fetch are found by ID every way, before and after a save")
    func firstFetchFoundByID() throws {
        try Self.seeded { (store, context) throws in
            let people = try context.fetch(FetchRequest(entityName: "Person"))
            #expect(people.count == 6)
            // A change and a save that look nothing up by ID.
            people[1]["age"] = .int(77)
            try context.save()
            #expect(context.object(with: people[1].objectID) === people[1])
            #expect(try context.existingObject(with: people[2].objectID) === people[2])
            #expect(context.registeredObjects == Set(people))
            #expect(try context.fetch(FetchRequest(entityName: "Person")).elementsEqual(people, by: ===))

            // Another context's save, merged here, refreshes the very object fetched.
            let other = store.context("other")
            let id = people[3].objectID
            let note = try other.performAndWait { () throws -> ContextDidSaveNotification in
                try other.existingObject(with: id)["age"] = .int(5)
                try other.save()
                return try #require(other.lastDidSaveNotification)
            }
            try context.mergeChanges(fromContextDidSave: note)
            #expect(people[3]["age"] == .int(5))

            // Deleting one forgets exactly that one.
            context.delete(people[0])
            try context.save()
            #expect(context.registeredObjects == Set(people.dropFirst()))
        }
    }

    @Test("count registers nothing")
    func countRegistersNothing() throws {
        try Self.seeded { (_, context) throws in
            #expect(try context.count(for: FetchRequest(entityName: "Person")) == 6)
            #expect(context.registeredObjects.isEmpty)
        }
    }

    @Test("a registered object keeps its unsaved changes across fetches, and predicates see them")
    func unsavedChangesKept() throws {
        try Self.seeded { (store, context) throws in
            let ann = try #require(try context.fetch(FetchRequest(entityName: "Person", predicate: .compare("name", .equal, .string("Ann")))).first)
            ann["age"] = .int(99)
            // Another context changes Ann's city in the store.
            let other = store.context("other")
            let annID = ann.objectID
            try other.performAndWait {
                try other.existingObject(with: annID)["city"] = .string("Paris")
                try other.save()
            }
            let again = try context.fetch(FetchRequest(entityName: "Person", predicate: .compare("age", .equal, .int(99))))
            #expect(again.count == 1)
            #expect(again.first === ann)
            #expect(ann["age"] == .int(99))
            #expect(ann["city"] == .string("Oslo"), "a fetch does not refresh registered objects")
            #expect(try context.count(for: FetchRequest(entityName: "Person", predicate: .compare("age", .equal, .int(30)))) == 1)
        }
    }

    @Test("pending inserts are included and pending deletes excluded")
    func pendingChanges() throws {
        try Self.seeded { (_, context) throws in
            let newcomer = context.insert(entity: "Person")
            newcomer["name"] = .string("Gus")
            newcomer["age"] = .int(30)
            let bob = try #require(try context.fetch(FetchRequest(entityName: "Person", predicate: .compare("name", .equal, .string("Bob")))).first)
            context.delete(bob)
            let everyone = try context.fetch(FetchRequest(entityName: "Person"))
            #expect(Self.names(everyone) == ["Ann", "Cid", "Dee", "Eve", "Fay", "Gus"])
            #expect(everyone.last === newcomer)
            let thirty = FetchRequest(entityName: "Person", predicate: .compare("age", .equal, .int(30)), sortDescriptors: [.descending("name")])
            #expect(try Self.names(context.fetch(thirty)) == ["Gus", "Dee", "Ann"])
            #expect(try context.count(for: FetchRequest(entityName: "Person")) == 6)
            #expect(try context.count(for: FetchRequest(entityName: "Person", predicate: .compare("name", .equal, .string("Bob")))) == 0)
        }
    }

    @Test("every attribute type compares and sorts")
    func attributeTypes() throws {
        try withTestStore { store in
            let early = Date(timeIntervalSince1970: 100)
            let late = Date(timeIntervalSince1970: 200)
            try store.seed("Sample", ["label": .string("a"), "ratio": .double(0.5), "flag": .bool(true), "blob": .bytes([1, 2]), "when": .date(late), "number": .int(Int64.max)])
            try store.seed("Sample", ["label": .string("b"), "ratio": .double(-1), "flag": .bool(false), "blob": .bytes([1]), "when": .date(early), "number": .int(-5)])
            try store.seed("Sample", ["label": .string("c"), "ratio": .double(.nan)])
            let context = store.context("types")
            try context.performAndWait { () throws -> Void in
                func labels(_ predicate: FetchPredicate?, _ sort: [FetchRequest.SortDescriptor] = []) throws -> [String] {
                    try context.fetch(FetchRequest(entityName: "Sample", predicate: predicate, sortDescriptors: sort))
                        .map { $0["label", as: String.self] ?? "?" }
                }
                #expect(try labels(.compare("ratio", .greaterThan, .double(0))) == ["a"])
                #expect(try labels(.compare("ratio", .equal, .double(.nan))) == ["c"])
                #expect(try labels(.compare("flag", .equal, .bool(false))) == ["b"])
                #expect(try labels(.compare("flag", .greaterThan, .bool(false))) == ["a"])
                #expect(try labels(.compare("blob", .greaterThan, .bytes([1]))) == ["a"])
                #expect(try labels(.compare("when", .lessThan, .date(late))) == ["b"])
                #expect(try labels(.compare("number", .greaterThan, .double(9.2e18))) == ["a"])
                #expect(try labels(.compare("number", .lessThan, .double(9.3e18))) == ["a", "b"])
                #expect(try labels(nil, [.ascending("ratio")]) == ["b", "a", "c"])
                #expect(try labels(nil, [.descending("when")]) == ["a", "b", "c"])
                #expect(try labels(nil, [.ascending("blob")]) == ["c", "b", "a"])
            }
        }
    }

    @Test("an unknown entity is a typed error")
    func unknownEntity() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait { () throws -> Void in
                do {
                    _ = try context.fetch(FetchRequest(entityName: "Nobody"))
                    Issue.record("expected unknownEntity")
                } catch ContextError.unknownEntity(let name) {
                    #expect(name == "Nobody")
                }
            }
        }
    }
}
