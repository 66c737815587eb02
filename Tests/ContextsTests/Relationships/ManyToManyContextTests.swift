import Contexts
import Foundation
import Policies
import Testing

/// Many-to-many between contexts and through the rest of a context's API: child saves push
/// links, did-saves and merges carry both ends, a pinned generation sees one graph, refresh and
/// rollback let go of link changes, fetch predicates and prefetching read links, Codable maps a
/// set as a list of IDs.
@Suite("Relationships: many-to-many across contexts and fetches")
struct ManyToManyContextTests {
    @Test("a child's link changes reach the parent with both ends updated; the root's save writes them")
    func childPushesLinks() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let parent = store.context("parent")
            let child = parent.newChildContext(name: "child")
            try child.performAndWait {
                let p2 = try child.existingObject(with: seed.p2)
                p2.addMember(try child.existingObject(with: seed.go), to: "tags")
                p2.removeMember(try child.existingObject(with: seed.rust), from: "tags")
                let zig = insert("Tag", ["name": "zig"], in: child)
                zig.addMember(p2, to: "posts")
                #expect(p2.memberNames("tags") == ["go", "zig"])
                try child.save()
                #expect(!p2.hasChanges)
            }
            try parent.performAndWait { () throws in
                #expect(Set(parent.updatedObjects.map(\.name)) == ["P2", "go", "rust"])
                #expect(try parent.existingObject(with: seed.p2).memberNames("tags") == ["go", "zig"])
                #expect(try parent.existingObject(with: seed.rust).memberNames("posts") == ["P1"])
            }
            // A grandchild reads through both.
            let grandchild = child.newChildContext(name: "grandchild")
            try grandchild.performAndWait { () throws in
                #expect(try grandchild.existingObject(with: seed.p2).memberNames("tags") == ["go", "zig"])
                #expect(try grandchild.existingObject(with: seed.p2).memberCount(of: "tags") == 2)
            }
            try parent.performAndWait { try parent.save() }
            #expect(try store.linked(seed.p2, "tags") == ["go", "zig"])
            #expect(try store.problems() == [])
        }
    }

    @Test("the did-save lists both ends of each link, and merging it shows the links, keeping the receiver's own link changes")
    func mergeCarriesLinks() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let viewer = store.context("viewer", policy: .error), editor = store.context("editor")
            try viewer.performAndWait {
                let p1 = try viewer.existingObject(with: seed.p1)
                #expect(p1.memberNames("tags") == ["rust", "swift"])
                p1.addMember(try viewer.existingObject(with: seed.go), to: "tags")  // a local change the merge keeps
            }
            let note = try editor.performAndWait {
                try editor.existingObject(with: seed.p1).removeMember(try editor.existingObject(with: seed.swift), from: "tags")
                try editor.save()
                return try #require(editor.lastDidSaveNotification)
            }
            #expect(Set(note.updatedObjectIDs) == [seed.p1, seed.swift])
            try viewer.performAndWait {
                try viewer.mergeChanges(fromContextDidSave: note)
                let p1 = try viewer.existingObject(with: seed.p1)
                #expect(p1.memberNames("tags") == ["go", "rust"])
                try viewer.save()  // no conflict: the merge moved both ancestors
            }
            #expect(try store.linked(seed.p1, "tags") == ["go", "rust"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a pinned context sees the links of its generation from both ends, until it moves on")
    func pinnedGeneration() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let pinned = store.context("pinned"), editor = store.context("editor")
            try pinned.performAndWait { () throws in
                try pinned.setQueryGenerationFrom(.current)
                #expect(try pinned.existingObject(with: seed.p1).memberNames("tags") == ["rust", "swift"])
            }
            try editor.performAndWait {
                let p1 = try editor.existingObject(with: seed.p1)
                p1.removeMember(try editor.existingObject(with: seed.rust), from: "tags")
                p1.addMember(try editor.existingObject(with: seed.go), to: "tags")
                try editor.save()
            }
            try pinned.performAndWait { () throws in
                #expect(try pinned.existingObject(with: seed.p1).memberNames("tags") == ["rust", "swift"])
                #expect(try pinned.existingObject(with: seed.go).memberNames("posts") == [])
                #expect(try pinned.existingObject(with: seed.rust).memberNames("posts") == ["P1", "P2"])
                #expect(try pinned.count(for: FetchRequest(entityName: "Post", predicate: .hasMember("tags", seed.rust))) == 2)
                try pinned.setQueryGenerationFrom(.current)
                #expect(try pinned.existingObject(with: seed.p1).memberNames("tags") == ["go", "swift"])
                #expect(try pinned.existingObject(with: seed.rust).memberNames("posts") == ["P2"])
            }
        }
    }

    @Test("refresh without merging drops the object's link changes at both ends; rollback drops them all; reset forgets them")
    func refreshAndRollback() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                let p2 = try context.existingObject(with: seed.p2), go = try context.existingObject(with: seed.go)
                p2.addMember(go, to: "tags")
                try context.refresh(go, mergeChanges: true)
                #expect(p2.memberNames("tags") == ["go", "rust"])
                try context.refresh(go, mergeChanges: false)
                #expect(p2.memberNames("tags") == ["rust"])
                p2.addMember(go, to: "tags")
                context.rollback()
                #expect(p2.memberNames("tags") == ["rust"] && go.memberNames("posts") == [])
                p2.addMember(go, to: "tags")
                context.reset()
                try context.save()
            }
            #expect(try store.linked(seed.p2, "tags") == ["rust"])
        }
    }

    @Test("has-member, member-count and membership predicates see stored links and pending changes alike")
    func predicates() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                func names(_ predicate: FetchPredicate, _ entity: String = "Post") throws -> [String] {
                    try context.fetch(FetchRequest(entityName: entity, predicate: predicate)).map(\.name).sorted()
                }
                #expect(try names(.hasMembers("tags")) == ["P1", "P2"])
                #expect(try names(.memberCount("posts", .equal, 0), "Tag") == ["go"])
                #expect(try names(.memberCount("tags", .greaterThanOrEqual, 2)) == ["P1"])
                #expect(try names(.hasMember("tags", seed.rust)) == ["P1", "P2"])
                #expect(try names(.isIn("tags", [.string(seed.swift.uriString), .string(seed.go.uriString)])) == ["P1"])
                #expect(try names(.not(.hasMember("tags", seed.swift))) == ["P2"])
                let p2 = try context.existingObject(with: seed.p2)
                p2.addMember(try context.existingObject(with: seed.go), to: "tags")
                p2.addMember(try context.existingObject(with: seed.swift), to: "tags")
                let p3 = insert("Post", ["name": "P3"], in: context)
                p3.addMember(try context.existingObject(with: seed.go), to: "tags")
                context.delete(try context.existingObject(with: seed.rust))
                #expect(try names(.memberCount("tags", .equal, 2)) == ["P2"])
                #expect(try names(.memberCount("tags", .equal, 1)) == ["P1", "P3"])
                #expect(try names(.hasMember("tags", seed.go)) == ["P2", "P3"])
                #expect(try names(.memberCount("posts", .greaterThan, 1), "Tag") == ["go", "swift"])
                #expect(try context.count(for: FetchRequest(entityName: "Tag", predicate: .hasMembers("posts"))) == 2)
                #expect(throws: ContextError.self) { try names(.memberCount("name", .equal, 1)) }
                #expect(throws: ContextError.self) { try names(.compare("tags", .greaterThan, .string(seed.go.uriString))) }
                #expect(throws: ContextError.self) { try names(.hasMember("tags", seed.p1)) }
            }
        }
    }

    @Test("prefetching a to-many reads every owner's links in one pass and keeps each list; Codable sets a list of IDs")
    func prefetchAndCodable() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                var request = FetchRequest(entityName: "Post", sortDescriptors: [.ascending("name")])
                request.relationshipKeyPathsForPrefetching = ["tags"]
                let posts = try context.fetch(request)
                // Kept while no commit moves the store's version (on a shared etcd cluster others' commits do).
                if TestBackend.current == .engine {
                    #expect(posts.map { context.keptMembers(of: $0, "tags")?.map(\.name).sorted() } == [["rust", "swift"], ["rust"]])
                }
                #expect(posts.map { $0.memberNames("tags") } == [["rust", "swift"], ["rust"]])
                #expect(context.registeredObjects.count == 4)  // the linked tags came with them, loaded
                #expect(context.registeredObjects.allSatisfy { !$0.isFault })

                struct Post: Codable { var name: String; var tags: [ObjectID] }
                try posts[1].setValues(from: Post(name: "P2", tags: [seed.go, seed.swift]))
                #expect(posts[1].memberNames("tags") == ["go", "swift"])
                try context.save()
            }
            #expect(try store.linked(seed.p2, "tags") == ["go", "swift"])
            #expect(try store.linked(seed.rust, "posts") == ["P1"])
        }
    }
}
