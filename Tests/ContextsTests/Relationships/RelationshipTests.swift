import Contexts
import Policies
import Testing

/// Reading and writing relationships in one context: inverses follow at once, both ends change,
/// destinations are faults, and a save writes the fact once (on the to-one side).
@Suite("Relationships: reading and writing")
struct RelationshipTests {
    @Test("setting a to-one moves the object between to-manys at once, and both ends become updated")
    func inversesFollow() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let ann = try context.existingObject(with: org.ann)
                let eng = try context.existingObject(with: org.eng), ops = try context.existingObject(with: org.ops)
                ann.setDestination(ops, of: "department")
                #expect(try eng.members(of: "employees").map(\.name) == ["Bob"])
                #expect(try ops.members(of: "employees") == [ann])
                #expect(try eng.memberCount(of: "employees") == 1)
                #expect(context.updatedObjects == [ann, eng, ops])
                ops.removeMember(ann, from: "employees")
                #expect(ann.destination(of: "department") == nil)
                eng.addMember(ann, to: "employees")
                #expect(ann.destination(of: "department") === eng)
                let bob = try context.existingObject(with: org.bob)
                try ops.replaceMembers(of: "employees", with: [bob])
                #expect(try eng.members(of: "employees") == [ann])
                #expect(bob.destination(of: "department") === ops)
            }
        }
    }

    @Test("a to-one's destination is a fault until touched, and a to-many's members are read only when asked")
    func faulting() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let ann = try context.existingObject(with: org.ann)
                let eng = try #require(ann.destination(of: "department"))
                #expect(eng.isFault)
                #expect(eng["name"] == .string("Eng"))
                #expect(!eng.isFault)
                #expect(context.registeredObjects.count == 2)  // Bob not read yet
                #expect(try eng.members(of: "employees").count == 2)
                #expect(context.registeredObjects.count == 3)
            }
        }
    }

    @Test("a save of a move raises the version of both departments and of the person, and of nobody else")
    func bothEndsVersioned() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let before = try [org.eng, org.ops, org.ann, org.bob].map { try #require(try store.committed($0)).version }
            let context = store.context("A")
            try context.performAndWait {
                try context.existingObject(with: org.ann).setDestination(try context.existingObject(with: org.ops), of: "department")
                try context.save()
                #expect(Set(context.lastDidSaveNotification?.updatedObjectIDs ?? []) == [org.eng, org.ops, org.ann])
            }
            let after = try [org.eng, org.ops, org.ann, org.bob].map { try #require(try store.committed($0)).version }
            #expect(after == [before[0] + 1, before[1] + 1, before[2] + 1, before[3]])
            #expect(try store.storedMembers(of: org.eng) == ["Bob"])
            #expect(try store.storedMembers(of: org.ops) == ["Ann"])
            #expect(try store.problems() == [])
        }
    }

    @Test("objects inserted together reference each other by permanent IDs once saved")
    func temporaryIDsResolved() throws {
        try withOrgStore { store in
            let context = store.context("A")
            let (department, person) = try context.performAndWait {
                let lab = insert("Department", ["name": "Lab"], in: context)
                let cy = insert("Person", ["name": "Cy"], in: context)
                lab.addMember(cy, to: "employees")
                #expect(try lab.members(of: "employees") == [cy])
                try context.save()
                #expect(cy.destination(of: "department") === lab)
                return (lab.objectID, cy.objectID)
            }
            #expect(!department.isTemporaryID)
            #expect(try store.committed(person)?.values.value(of: "department") == .string(department.uriString))
            #expect(try store.storedMembers(of: department) == ["Cy"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a reference set to an object of the wrong entity, through the subscript, stops the process")
    func wrongEntityStops() async {
        await #expect(processExitsWith: .failure) {
            try withOrgStore { store in
                let context = store.context("A")
                context.performAndWait {
                    let cy = insert("Person", ["name": "Cy"], in: context)
                    cy["department"] = .string(ObjectID(entityName: "Project", primaryKey: 1).uriString)
                }
            }
        }
    }
}

/// What a save refuses about relationships, with a typed error and nothing written.
@Suite("Relationships: refused saves")
struct RelationshipValidationTests {
    @Test("a required to-one left empty fails the save with missingValue naming it")
    func requiredToOne() throws {
        let schema = try Schema([
            EntityDescription("Department", attributes: [AttributeDescription("name", .string)], relationships: [
                RelationshipDescription("employees", destination: "Person", inverse: "department", isToMany: true),
            ]),
            EntityDescription("Person", attributes: [AttributeDescription("name", .string)], relationships: [
                RelationshipDescription("department", destination: "Department", inverse: "employees", isOptional: false),
            ]),
        ])
        try withOrgStore(schema: schema) { store throws in
            let context = store.context("A")
            context.performAndWait {
                insert("Person", ["name": "Cy"], in: context)
                #expect {
                    try context.save()
                } throws: { error in
                    (error as? ValidationError)?.attributeName == "department" && (error as? ValidationError)?.problem == .missingValue
                }
            }
            #expect(try store.committed(ObjectID(entityName: "Person", primaryKey: 1)) == nil)
        }
    }

    @Test("a reference to an object the store deleted and the context no longer holds fails the save with objectNotFound")
    func referenceToForgottenObject() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let b = store.context("B")
            try b.performAndWait {
                for member in try b.existingObject(with: org.ops).members(of: "employees") { member.setDestination(nil, of: "department") }
                b.delete(try b.existingObject(with: org.ops))
                try b.save()
            }
            let a = store.context("A")
            let before = try store.committed(org.ann)?.version
            try a.performAndWait {
                let ops = a.object(with: org.ops)  // a fault: loading it finds it gone, and forgets it
                try a.existingObject(with: org.ann).setDestination(ops, of: "department")
                #expect {
                    try a.save()
                } throws: { error in
                    guard case ContextError.objectNotFound(let id) = error else { return false }
                    return id == org.ops
                }
            }
            #expect(try store.committed(org.ann)?.version == before)
            #expect(try store.problems() == [])
        }
    }
}
