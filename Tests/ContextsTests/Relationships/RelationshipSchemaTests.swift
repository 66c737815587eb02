import Contexts
import Policies
import Testing

/// The schema checks every relationship's destination and inverse, with a typed error naming it.
@Suite("Relationships: schema")
struct RelationshipSchemaTests {
    static let department = EntityDescription("Department", attributes: [AttributeDescription("name", .string)], relationships: [
        RelationshipDescription("employees", destination: "Person", inverse: "department", isToMany: true),
    ])

    static func person(_ relationship: RelationshipDescription, attributes: [AttributeDescription] = []) -> EntityDescription {
        EntityDescription("Person", attributes: attributes, relationships: [relationship])
    }

    @Test("a one-to-many pair with inverses that point back is accepted, the to-one stored beside the attributes")
    func validPair() throws {
        let schema = try Schema([Self.department, Self.person(RelationshipDescription("department", destination: "Department", inverse: "employees"))])
        let person = try #require(schema.entity(named: "Person"))
        #expect(person.attributes.isEmpty)
        #expect(person.relationship(named: "department")?.isToMany == false)
        #expect(schema.entity(named: "Department")?.relationships.map(\.name) == ["employees"])
    }

    // Entities are checked in order: the broken one comes first, so its error is the one thrown.
    @Test("an unknown destination is unknownDestination")
    func unknownDestination() {
        #expect(throws: SchemaError.unknownDestination(entity: "Person", relationship: "department", destination: "Dept")) {
            try Schema([Self.person(RelationshipDescription("department", destination: "Dept", inverse: "employees")), Self.department])
        }
    }

    @Test("a missing inverse, or one that points elsewhere, is invalidInverse")
    func invalidInverse() {
        #expect(throws: SchemaError.invalidInverse(entity: "Person", relationship: "department", inverse: "staff")) {
            try Schema([Self.person(RelationshipDescription("department", destination: "Department", inverse: "staff")), Self.department])
        }
        // Department.employees names "department" as its inverse, but Person's relationship is "dept".
        #expect(throws: SchemaError.invalidInverse(entity: "Department", relationship: "employees", inverse: "department")) {
            try Schema([Self.department, Self.person(RelationshipDescription("dept", destination: "Department", inverse: "employees"))])
        }
    }

    @Test("a relationship named like an attribute, or not an identifier, is invalidRelationshipName")
    func nameTaken() {
        #expect(throws: SchemaError.invalidRelationshipName(entity: "Person", relationship: "department")) {
            try Schema([Self.department, Self.person(RelationshipDescription("department", destination: "Department", inverse: "employees"),
                                                     attributes: [AttributeDescription("department", .string)])])
        }
        #expect(throws: SchemaError.invalidRelationshipName(entity: "Person", relationship: "my-dept")) {
            try Schema([Self.department, Self.person(RelationshipDescription("my-dept", destination: "Department", inverse: "employees"))])
        }
    }

    @Test("an ordered to-one is refused with unsupportedRelationship, naming the end to declare; an ordered one-to-many is recorded and reopened")
    func orderedKinds() throws {
        let people = EntityDescription("Person", attributes: [], relationships: [
            RelationshipDescription("department", destination: "Department", inverse: "employees", isOrdered: true),
        ])
        let departments = EntityDescription("Department", attributes: [], relationships: [
            RelationshipDescription("employees", destination: "Person", inverse: "department", isToMany: true),
        ])
        #expect(throws: SchemaError.unsupportedRelationship(
            entity: "Person", relationship: "department",
            reason: "an ordered to-one (only a to-many keeps an order: declare isOrdered on the to-many end)")) {
            try Schema([people, departments])
        }
        try withOrgStore(schema: OrderedToManyTests.schema()) { store in
            let seed = try OrderedToManyTests.seed(store)
            store.objects.close()
            let reopened = try ObjectStore(directory: store.directory.path, schema: OrderedToManyTests.schema())
            defer { reopened.close() }
            let context = reopened.newBackgroundContext()
            #expect(try context.performAndWait { try context.existingObject(with: seed.list).members(of: "songs").map(\.name) }
                == ["s1", "s2", "s3", "s4"])
            #expect(try reopened.indexProblems() == [])
        }
    }

    @Test("a store records its relationships and reopens with the same schema, without a migration")
    func recordedAndReopened() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            store.objects.close()
            let reopened = try ObjectStore(directory: store.directory.path, schema: OrgModel.schema())
            defer { reopened.close() }
            let context = reopened.newBackgroundContext(name: "again")
            try context.performAndWait {
                let ann = try context.existingObject(with: org.ann)
                #expect(ann.destination(of: "department")?.objectID == org.eng)
            }
        }
    }
}
