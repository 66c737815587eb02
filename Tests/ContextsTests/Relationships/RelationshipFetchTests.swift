import Contexts
import Policies
import Testing

/// Fetch predicates on relationships (served by the to-one's index) and prefetching.
@Suite("Relationships: fetching")
struct RelationshipFetchTests {
    @Test("department == object finds its members through the to-one's index, pending changes included")
    func toOnePredicate() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let request = FetchRequest(entityName: "Person", predicate: .references("department", org.eng))
                #expect(try context.explain(request).access == .index(attributes: ["department"]))
                #expect(try context.fetch(request).map(\.name).sorted() == ["Ann", "Bob"])
                try context.existingObject(with: org.bob).setDestination(try context.existingObject(with: org.ops), of: "department")
                #expect(try context.fetch(request).map(\.name) == ["Ann"])
                #expect(try context.count(for: FetchRequest(entityName: "Person", predicate: .references("department", nil))) == 0)
            }
        }
    }

    @Test("department.name == \"Eng\" matches through the destination, also for a rename not saved yet")
    func destinationAttributePredicate() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let request = FetchRequest(entityName: "Person", predicate: .compare("department.name", .equal, .string("Eng")))
                #expect(try context.explain(request).access == .index(attributes: ["department"]))
                #expect(try context.fetch(request).map(\.name).sorted() == ["Ann", "Bob"])
                try context.existingObject(with: org.ops)["name"] = .string("Eng")
                try context.existingObject(with: org.eng)["name"] = .string("R&D")
                try context.existingObject(with: org.ann).setDestination(try context.existingObject(with: org.ops), of: "department")
                #expect(try context.fetch(request).map(\.name) == ["Ann"])
                #expect(try context.count(for: FetchRequest(entityName: "Person", predicate: .not(.compare("department.name", .equal, .string("Eng"))))) == 1)
                #expect {
                    try context.fetch(FetchRequest(entityName: "Person", predicate: .compare("department.nmae", .equal, .string("Eng"))))
                } throws: { error in
                    guard case ContextError.unknownAttribute(entity: "Department", attribute: "nmae") = error else { return false }
                    return true
                }
            }
        }
    }

    @Test("prefetching loads every department's employees, and every person's department, in one pass each")
    func prefetching() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                var request = FetchRequest(entityName: "Department")
                request.relationshipKeyPathsForPrefetching = ["employees"]
                let departments = try context.fetch(request)
                #expect(departments.count == 2)
                let people = context.registeredObjects.filter { $0.entity.name == "Person" }
                #expect(people.count == 2 && people.allSatisfy { !$0.isFault })
                context.reset()
                var byPerson = FetchRequest(entityName: "Person")
                byPerson.relationshipKeyPathsForPrefetching = ["department"]
                let fetched = try context.fetch(byPerson)
                let eng = try #require(fetched.first?.destination(of: "department"))
                #expect(!eng.isFault)
                #expect(eng.objectID == org.eng)
            }
        }
    }
}

/// Codable structs map a to-one as the destination's `ObjectID` and a to-many as a list of them.
@Suite("Relationships: Codable")
struct RelationshipCodableTests {
    struct PersonRecord: Codable, Equatable {
        var name: String
        var department: ObjectID?
    }

    struct DepartmentRecord: Codable {
        var name: String
        var employees: [ObjectID]
    }

    struct NameOnly: Codable {
        var name: String
    }

    @Test("a to-one decodes and encodes as an ObjectID; a to-many list replaces the members; a missing one keeps them")
    func codable() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let ann = try context.existingObject(with: org.ann)
                #expect(try ann.decode(PersonRecord.self) == PersonRecord(name: "Ann", department: org.eng))
                try ann.setValues(from: PersonRecord(name: "Ann", department: org.ops))
                #expect(try context.existingObject(with: org.ops).members(of: "employees").map(\.name) == ["Ann"])
                #expect(context.updatedObjects.count == 3)  // Ann and both departments
                let eng = try context.existingObject(with: org.eng)
                try eng.setValues(from: DepartmentRecord(name: "Eng", employees: [org.ann, org.bob]))
                #expect(try eng.members(of: "employees").map(\.name).sorted() == ["Ann", "Bob"])
                try ann.setValues(from: NameOnly(name: "Anne"))
                #expect(ann.destination(of: "department") === eng)
                let missing = ObjectID(entityName: "Person", primaryKey: 999)
                #expect(throws: (any Error).self) { try eng.setValues(from: DepartmentRecord(name: "X", employees: [missing])) }
                #expect(eng["name"] == .string("Eng"))
                try context.save()
            }
            #expect(try store.storedMembers(of: org.eng) == ["Anne", "Bob"])
            #expect(try store.problems() == [])
        }
    }
}
