import Contexts
import Policies
import Testing

/// The spec's delete rules, applied at `delete(_:)` (so `deletedObjects` shows a cascade before
/// the save) and saved with a consistent graph.
@Suite("Relationships: delete rules")
struct DeleteRuleTests {
    @Test("nullify: deleting a department empties its members' to-one at once; the save leaves no reference to it")
    func nullify() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let eng = try context.existingObject(with: org.eng)
                context.delete(eng)
                let ann = try context.existingObject(with: org.ann), bob = try context.existingObject(with: org.bob)
                #expect(ann.destination(of: "department") == nil && bob.destination(of: "department") == nil)
                #expect(context.updatedObjects == [ann, bob])
                try context.save()
            }
            #expect(try store.committed(org.eng) == nil)
            #expect(try store.committed(org.ann)?.values.value(of: "department") == .null)
            #expect(try store.problems() == [])
        }
    }

    @Test("cascade: deleting a department deletes its people and, through them, their projects")
    func cascadeRecursively() throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade)) { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            let project = try context.performAndWait {
                let project = insert("Project", ["title": "Compiler"], in: context)
                project.setDestination(try context.existingObject(with: org.ann), of: "lead")
                try context.save()
                context.delete(try context.existingObject(with: org.eng))
                #expect(Set(context.deletedObjects.map(\.objectID)) == [org.eng, org.ann, org.bob, project.objectID])
                let id = project.objectID
                try context.save()
                return id
            }
            for id in [org.eng, org.ann, org.bob, project] { #expect(try store.committed(id) == nil) }
            #expect(try store.committed(org.ops) != nil)
            #expect(try store.problems() == [])
        }
    }

    @Test("a cascade read whole at the delete: its save deletes every member, one whose delete was undone since included",
          arguments: [0, 5])  // people of Ops: none (Eng's are most people: a scan), or most (a walk of Eng's entries)
    func cascadeRereadsAMemberWhoseDeleteWasUndone(opsPeople: Int) throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade)) { store in
            let org = try store.seedOrg()
            let seeder = store.context("seeder")
            try seeder.performAndWait {
                let ops = try seeder.existingObject(with: org.ops)
                for number in 0..<opsPeople { insert("Person", ["name": "Ops \(number)"], in: seeder).setDestination(ops, of: "department") }
                try seeder.save()
            }
            let context = store.context("A")
            try context.performAndWait {
                // No person in the context: the cascade reads the members whole from the store.
                context.delete(try context.existingObject(with: org.eng))
                #expect(Set(context.deletedObjects.map(\.objectID)) == [org.eng, org.ann, org.bob])
                let bob = try context.existingObject(with: org.bob)
                try context.refresh(bob, mergeChanges: false)
                #expect(!bob.isDeleted)
                try context.save()
                #expect(Set(context.lastDidSaveNotification!.deletedObjectIDs) == [org.eng, org.ann, org.bob])
            }
            for id in [org.eng, org.ann, org.bob] { #expect(try store.committed(id) == nil) }
            #expect(try store.committed(org.ops) != nil)
            #expect(try store.problems() == [])
        }
    }

    @Test("cascade in a cycle ends: a person cascading to her department that cascades back")
    func cascadeCycleEnds() throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade, departmentRule: .cascade)) { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                context.delete(try context.existingObject(with: org.ann))
                #expect(Set(context.deletedObjects.map(\.objectID)) == [org.eng, org.ann, org.bob])
                try context.save()
            }
            #expect(try store.committed(org.ops) != nil)
            #expect(try store.problems() == [])
        }
    }

    @Test("a cascade's members leave their deleted owner as a nullify of their to-one does: changed, unless their rule cascades back")
    func cascadeMarksTheOwnerAsItsMembersRulesDo() throws {
        // The members' to-one back to the owner is applied by a shortcut (`CascadeOwner`): it must
        // leave the owner's membership flag as the general path does, which a child pushes.
        for (departmentRule, marked) in [(RelationshipDescription.DeleteRule.nullify, true), (.cascade, false), (.noAction, false)] {
            try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade, departmentRule: departmentRule)) { store in
                let org = try store.seedOrg()
                let context = store.context("A")
                try context.performAndWait {
                    let eng = try context.existingObject(with: org.eng)
                    context.delete(eng)
                    #expect(eng.isUpdated == marked)
                    #expect(Set(context.deletedObjects.map(\.objectID)) == [org.eng, org.ann, org.bob])
                    try context.save()
                    #expect(Set(context.lastSaveReport?.deletedObjectIDs ?? []) == [org.eng, org.ann, org.bob])
                }
                for id in [org.eng, org.ann, org.bob] { #expect(try store.committed(id) == nil) }
                #expect(try store.problems() == [])
            }
        }
    }

    @Test("a cascade in a child context reaches the parent whole, and its save deletes every member")
    func cascadeInAChild() throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .cascade)) { store in
            let org = try store.seedOrg()
            let root = store.context("root")
            let child = root.newChildContext()
            try child.performAndWait {
                child.delete(try child.existingObject(with: org.eng))
                try child.save()
                #expect(Set(child.lastSaveReport?.deletedObjectIDs ?? []) == [org.eng, org.ann, org.bob])
            }
            try root.performAndWait {
                #expect(Set(root.deletedObjects.map(\.objectID)) == [org.eng, org.ann, org.bob])
                try root.save()
            }
            for id in [org.eng, org.ann, org.bob] { #expect(try store.committed(id) == nil) }
            #expect(try store.committed(org.ops) != nil)
            #expect(try store.problems() == [])
        }
    }

    @Test("deny: a department with employees cannot be deleted; the save fails naming it and writes nothing")
    func deny() throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .deny)) { store in
            let org = try store.seedOrg()
            let before = try store.committed(org.eng)?.version
            let context = store.context("A")
            try context.performAndWait {
                let eng = try context.existingObject(with: org.eng)
                context.delete(eng)
                context.delete(try context.existingObject(with: org.ops))
                #expect {
                    try context.save()
                } throws: { error in
                    guard let error = error as? ValidationError else { return false }
                    return error.objectID == org.eng && error.attributeName == "employees"
                        && error.problem == .deleteDenied(destinations: 2)
                }
                #expect(eng.isDeleted)  // the context keeps its changes
                // Emptied first, the delete goes through.
                for member in try eng.members(of: "employees") { context.delete(member) }
                try context.save()
            }
            #expect(before != nil)
            #expect(try store.committed(org.eng) == nil)
            #expect(try store.problems() == [])
        }
    }

    @Test("deny counts the store's members the save leaves in place: none when one is deleted and the other moved in the same save")
    func denyPassesWhenTheSaveEmptiesTheRelationship() throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .deny)) { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                let ops = try context.existingObject(with: org.ops)
                context.delete(try context.existingObject(with: org.ann))
                try context.existingObject(with: org.bob).setDestination(ops, of: "department")
                context.delete(try context.existingObject(with: org.eng))
                try context.save()
            }
            #expect(try store.committed(org.eng) == nil && store.committed(org.ann) == nil)
            #expect(try store.committed(org.bob)?.values.value(of: "department") == .string(org.ops.uriString))
            #expect(try store.problems() == [])
        }
    }

    @Test("noAction: the members keep the deleted department's ID (the caller's job)")
    func noAction() throws {
        try withOrgStore(schema: OrgModel.schema(employeesRule: .noAction)) { store in
            let org = try store.seedOrg()
            let context = store.context("A")
            try context.performAndWait {
                context.delete(try context.existingObject(with: org.eng))
                try context.save()
            }
            #expect(try store.committed(org.ann)?.values.value(of: "department") == .string(org.eng.uriString))
            #expect(try store.objects.relationshipProblems().count == 2)
        }
    }

    @Test("deleting an inserted object applies its rules too: its new members lose the reference")
    func insertedOwner() throws {
        try withOrgStore { store in
            let context = store.context("A")
            try context.performAndWait {
                let lab = insert("Department", ["name": "Lab"], in: context)
                let cy = insert("Person", ["name": "Cy"], in: context)
                lab.addMember(cy, to: "employees")
                context.delete(lab)
                #expect(cy.destination(of: "department") == nil)
                try context.save()
            }
            #expect(try store.problems() == [])
        }
    }
}
