import Contexts
import Policies
import Testing

/// Relationships between contexts: child saves push both ends, did-save notifications and
/// `mergeChanges(fromContextDidSave:)` carry them, a pinned query generation sees one graph.
@Suite("Relationships: between contexts")
struct RelationshipContextTests {
    @Test("a child's move reaches the parent with both departments updated; the parent's save raises all three versions")
    func childPushesBothEnds() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let parent = store.context("parent")
            let child = parent.newChildContext(name: "child")
            try child.performAndWait {
                try child.existingObject(with: org.ann).setDestination(try child.existingObject(with: org.ops), of: "department")
                try child.save()
            }
            let versions = try [org.eng, org.ops, org.ann].map { try #require(try store.committed($0)).version }
            try parent.performAndWait {
                #expect(Set(parent.updatedObjects.map(\.objectID)) == [org.eng, org.ops, org.ann])
                #expect(try parent.existingObject(with: org.ops).members(of: "employees").map(\.name) == ["Ann"])
                try parent.save()
            }
            #expect(try [org.eng, org.ops, org.ann].map { try #require(try store.committed($0)).version } == versions.map { $0 + 1 })
            #expect(try store.storedMembers(of: org.ops) == ["Ann"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a child inserting a person into a department it read from the parent: the root saves one consistent graph")
    func childInsert() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let parent = store.context("parent")
            let child = parent.newChildContext(name: "child")
            try child.performAndWait {
                let cy = insert("Person", ["name": "Cy"], in: child)
                try child.existingObject(with: org.ops).addMember(cy, to: "employees")
                try child.save()
            }
            try parent.performAndWait { try parent.save() }
            #expect(try store.storedMembers(of: org.ops) == ["Cy"])
            #expect(try store.problems() == [])
        }
    }

    @Test("the did-save lists both ends, and merging it moves another context's graph, keeping its local changes")
    func mergeChanges() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let viewer = store.context("viewer"), editor = store.context("editor")
            try viewer.performAndWait {
                let eng = try viewer.existingObject(with: org.eng)
                #expect(try eng.members(of: "employees").count == 2)
                eng["name"] = .string("R&D")  // a local change that the merge keeps
                _ = try viewer.existingObject(with: org.ops)
            }
            let note = try editor.performAndWait {
                try editor.existingObject(with: org.ann).setDestination(try editor.existingObject(with: org.ops), of: "department")
                try editor.save()
                return try #require(editor.lastDidSaveNotification)
            }
            #expect(Set(note.updatedObjectIDs) == [org.eng, org.ops, org.ann])
            try viewer.performAndWait {
                try viewer.mergeChanges(fromContextDidSave: note)
                let eng = try viewer.existingObject(with: org.eng)
                #expect(try eng.members(of: "employees").map(\.name) == ["Bob"])
                #expect(try viewer.existingObject(with: org.ops).members(of: "employees").map(\.name) == ["Ann"])
                #expect(eng["name"] == .string("R&D"))
                try viewer.save()  // the merge moved its ancestor: no conflict
            }
            #expect(try store.problems() == [])
        }
    }

    @Test("a context pinned to a query generation reads the graph of that generation: to-ones and to-manys alike")
    func pinnedGeneration() throws {
        try withOrgStore { store in
            let org = try store.seedOrg()
            let reader = store.context("reader"), editor = store.context("editor")
            try reader.performAndWait {
                try reader.setQueryGenerationFrom(.current)
                _ = try reader.existingObject(with: org.bob)  // pins at this read
            }
            try editor.performAndWait {
                try editor.existingObject(with: org.ann).setDestination(try editor.existingObject(with: org.ops), of: "department")
                try editor.save()
            }
            try reader.performAndWait {
                let eng = try reader.existingObject(with: org.eng)
                #expect(try eng.members(of: "employees").map(\.name).sorted() == ["Ann", "Bob"])
                #expect(try reader.existingObject(with: org.ops).memberCount(of: "employees") == 0)
                #expect(try reader.existingObject(with: org.ann).destination(of: "department") === eng)
            }
        }
    }
}
