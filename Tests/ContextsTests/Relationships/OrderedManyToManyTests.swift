import Contexts
import Foundation
import Policies
import Testing

/// An ordered many-to-many: `Post.tags` ordered (and, where a test says, `Tag.posts` and
/// `Person.friends` too). Each ordered end keeps its members in the order they were added or
/// placed, as a key per link at that end; a move or an insert writes one link's entries; a
/// reorder changes the ordered end alone.
@Suite("Relationships: ordered many-to-many")
struct OrderedManyToManyTests {
    struct Seed {
        let post, other: ObjectID
        let tags: [ObjectID]
    }

    /// Post "P" tagged t1…t`count` in that order, post "Q" untagged; committed.
    static func seed(_ store: OrgStore, count: Int = 4) throws -> Seed {
        let context = store.context("seed")
        return try context.performAndWait {
            let post = insert("Post", ["name": "P"], in: context), other = insert("Post", ["name": "Q"], in: context)
            let tags = (1...count).map { insert("Tag", ["name": "t\($0)"], in: context) }
            for tag in tags { post.addMember(tag, to: "tags") }
            try context.save()
            return Seed(post: post.objectID, other: other.objectID, tags: tags.map(\.objectID))
        }
    }

    /// The names of the members of `owner`'s `relationship`, in the order a fresh context reads them.
    static func stored(_ store: OrgStore, _ owner: ObjectID, _ relationship: String = "tags") throws -> [String] {
        let context = store.context("reader")
        return try context.performAndWait { try context.existingObject(with: owner).members(named: relationship) }
    }

    @Test("the schema takes an ordered many-to-many end, both ends, and one that is its own inverse; an order table name past the engine's limit is refused")
    func schema() throws {
        let both = BlogModel.schema(tagsOrdered: true, postsOrdered: true, friendsOrdered: true)
        #expect(both.entity(named: "Post")?.relationship(named: "tags")?.isOrdered == true)
        #expect(both.entity(named: "Tag")?.relationship(named: "posts")?.isOrdered == true)
        #expect(both.entity(named: "Person")?.relationship(named: "friends")?.isOrdered == true)
        // No hidden attribute: an end's keys live with its links.
        #expect(both.entity(named: "Tag")?.attributes.map(\.name) == ["name"])
        // "link:P:" + 193 bytes fits the 200-byte limit; "order:P:" + 193 does not.
        let name = "d" + String(repeating: "x", count: 192)
        func selfInverse(ordered: Bool) throws -> Schema {
            try Schema([EntityDescription("P", attributes: [], relationships: [
                RelationshipDescription(name, destination: "P", inverse: name, isToMany: true, isOrdered: ordered)])])
        }
        _ = try selfInverse(ordered: false)
        #expect(throws: SchemaError.unsupportedRelationship(
            entity: "P", relationship: name, reason: "a many-to-many whose order table name (order:P:\(name)) is longer than 200 bytes")) {
            try selfInverse(ordered: true)
        }
    }

    @Test("members keep the order they were added and placed in: append (from either end), insert, move, remove, replace; the unordered end is by primary key")
    func orderFollowsEdits() throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true)) { store in
            let seed = try Self.seed(store)
            #expect(try Self.stored(store, seed.post) == ["t1", "t2", "t3", "t4"])
            let context = store.context("editor")
            let t7 = try context.performAndWait { () throws -> ObjectID in
                let post = try context.existingObject(with: seed.post)
                let tag = { (index: Int) throws -> StoredObject in try context.existingObject(with: seed.tags[index]) }
                try post.insertMember(insert("Tag", ["name": "t5"], in: context), at: 0, into: "tags")
                #expect(post.members(named: "tags") == ["t5", "t1", "t2", "t3", "t4"])
                try post.moveMember(at: 4, to: 1, in: "tags")
                #expect(post.members(named: "tags") == ["t5", "t4", "t1", "t2", "t3"])
                post.removeMember(try tag(0), from: "tags")
                try post.insertMember(try tag(0), at: 4, into: "tags")  // back, last
                post.addMember(try tag(1), to: "tags")  // a member already: stays
                post.addMember(insert("Tag", ["name": "t6"], in: context), to: "tags")
                let t7 = insert("Tag", ["name": "t7"], in: context)
                t7.addMember(post, to: "posts")  // from the other end: last here too
                #expect(post.members(named: "tags") == ["t5", "t4", "t2", "t3", "t1", "t6", "t7"])
                #expect(try tag(0).members(named: "posts") == ["P"])
                try context.save()
                return t7.objectID
            }
            #expect(try Self.stored(store, seed.post) == ["t5", "t4", "t2", "t3", "t1", "t6", "t7"])
            #expect(try Self.stored(store, t7, "posts") == ["P"])
            try context.performAndWait {
                let post = try context.existingObject(with: seed.post)
                let tags = try post.members(of: "tags")
                try post.replaceMembers(of: "tags", with: [tags[5], tags[0], tags[2]])
                let other = try context.existingObject(with: seed.other)
                try other.replaceMembers(of: "tags", with: [tags[3], tags[1]])  // new links, in this order
                try context.save()
            }
            #expect(try Self.stored(store, seed.post) == ["t6", "t5", "t2"])
            #expect(try Self.stored(store, seed.other) == ["t3", "t4"])
            #expect(try store.problems() == [])
        }
    }

    @Test("with both ends ordered each keeps its own order: a reorder at one end leaves the other's, a new link goes last at both")
    func bothEndsKeepTheirOwnOrder() throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true, postsOrdered: true)) { store in
            let seed = try Self.seed(store, count: 2)
            let context = store.context("editor")
            try context.performAndWait {
                let post = try context.existingObject(with: seed.post), other = try context.existingObject(with: seed.other)
                let t1 = try context.existingObject(with: seed.tags[0])
                t1.addMember(other, to: "posts")  // t1: P, Q; Q: t1
                try post.moveMember(at: 0, to: 1, in: "tags")  // P: t2, t1
                try t1.moveMember(at: 1, to: 0, in: "posts")  // t1: Q, P
                let p3 = insert("Post", ["name": "R"], in: context)
                try t1.insertMember(p3, at: 1, into: "posts")  // t1: Q, R, P; R: t1
                #expect(post.members(named: "tags") == ["t2", "t1"])
                #expect(t1.members(named: "posts") == ["Q", "R", "P"])
                try context.save()
            }
            #expect(try Self.stored(store, seed.post) == ["t2", "t1"])
            #expect(try Self.stored(store, seed.tags[0], "posts") == ["Q", "R", "P"])
            #expect(try Self.stored(store, seed.tags[1], "posts") == ["P"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a reorder changes the ordered end alone: the owner is updated and its version rises, the member's does not")
    func reorderChangesTheOrderedEndOnly() throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true)) { store in
            let seed = try Self.seed(store)
            let before = try ([seed.post] + seed.tags).map { try #require(try store.committed($0)).version }
            let context = store.context("editor")
            try context.performAndWait {
                let post = try context.existingObject(with: seed.post)
                try post.moveMember(at: 3, to: 0, in: "tags")
                #expect(context.updatedObjects.map(\.objectID) == [seed.post])
                try context.save()
                #expect(context.lastDidSaveNotification?.updatedObjectIDs == [seed.post])
            }
            let after = try ([seed.post] + seed.tags).map { try #require(try store.committed($0)).version }
            #expect(after == [before[0] + 1] + before.dropFirst())
            #expect(try Self.stored(store, seed.post) == ["t4", "t1", "t2", "t3"])
        }
    }

    @Test("an append, an insert and a move write one link's entries and its ends' records, with ten members or two thousand")
    func constantWrites() throws {
        for size in [10, 2_000] {
            try withOrgStore(schema: BlogModel.schema(tagsOrdered: true)) { store in
                let seed = try Self.seed(store, count: size)
                let written = WrittenKeys()
                store.objects.storage.addCommitObserver { notice in written.note(notice.writtenKeys) }
                let context = store.context("editor")
                func save(_ edit: (StoredObject) throws -> Void) throws -> [String] {
                    try context.performAndWait {
                        try edit(try context.existingObject(with: seed.post))
                        try context.save()
                    }
                    return written.last.map(\.table).sorted()
                }
                let move = try save { try $0.moveMember(at: size - 1, to: size / 2, in: "tags") }
                #expect(move == ["entity:Post", "link:Post:tags", "order:Post:tags", "order:Post:tags"], "\(size) members")
                let append = try save { $0.addMember(insert("Tag", ["name": "new"], in: context), to: "tags") }
                #expect(append == ["entity:Post", "entity:Tag", "link:Post:tags", "link:Tag:posts", "order:Post:tags"], "\(size) members")
                let placed = try save { try $0.insertMember(insert("Tag", ["name": "first"], in: context), at: 0, into: "tags") }
                #expect(placed == ["entity:Post", "entity:Tag", "link:Post:tags", "link:Tag:posts", "order:Post:tags"], "\(size) members")
                let names = try Self.stored(store, seed.post)
                #expect(names.count == size + 2 && names.first == "first" && names.last == "new" && names[size / 2 + 1] == "t\(size)")
            }
        }
    }

    @Test("inserting again and again at one place renumbers when the gap is gone, and keeps the order")
    func renumbering() throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true)) { store in
            let seed = try Self.seed(store, count: 2)
            let context = store.context("editor")
            try context.performAndWait {
                let post = try context.existingObject(with: seed.post)
                var expected = ["t1", "t2"]
                for round in 0..<45 {
                    try post.insertMember(insert("Tag", ["name": "n\(round)"], in: context), at: 1, into: "tags")
                    expected.insert("n\(round)", at: 1)
                }
                #expect(post.members(named: "tags") == expected)
                try context.save()
                #expect(try Self.stored(store, seed.post) == expected)
            }
            #expect(try store.problems() == [])
        }
    }

    @Test("an ordered relationship that is its own inverse: each person keeps the order of their own friends")
    func ownInverse() throws {
        try withOrgStore(schema: BlogModel.schema(friendsOrdered: true)) { store in
            let context = store.context("editor")
            let (ann, bob) = try context.performAndWait { () throws -> (ObjectID, ObjectID) in
                let ann = insert("Person", ["name": "Ann"], in: context), bob = insert("Person", ["name": "Bob"], in: context)
                let cy = insert("Person", ["name": "Cy"], in: context)
                ann.addMember(bob, to: "friends")
                ann.addMember(cy, to: "friends")
                cy.addMember(bob, to: "friends")
                try context.save()
                try ann.moveMember(at: 1, to: 0, in: "friends")
                #expect(ann.members(named: "friends") == ["Cy", "Bob"])
                #expect(bob.members(named: "friends") == ["Ann", "Cy"])
                try context.save()
                return (ann.objectID, bob.objectID)
            }
            #expect(try Self.stored(store, ann, "friends") == ["Cy", "Bob"])
            #expect(try Self.stored(store, bob, "friends") == ["Ann", "Cy"])
            #expect(try store.problems() == [])
        }
    }

    @Test("delete rules of an ordered end: its links and order entries go (but under noAction), deny keeps the list; a deleted member leaves the others in order")
    func deleteRules() throws {
        for rule in RelationshipDescription.DeleteRule.allCases {
            try withOrgStore(schema: BlogModel.schema(tagsRule: rule, tagsOrdered: true, postsOrdered: true)) { store in
                let seed = try Self.seed(store)
                let context = store.context("editor")
                let outcome = try context.performAndWait { () throws -> String in
                    // A member goes first: the others keep their order.
                    context.delete(try context.existingObject(with: seed.tags[1]))
                    try context.save()
                    #expect(try context.existingObject(with: seed.post).members(named: "tags") == ["t1", "t3", "t4"], "\(rule)")
                    context.delete(try context.existingObject(with: seed.post))
                    do {
                        try context.save()
                        return "ok"
                    } catch is ValidationError {
                        return "denied"
                    }
                }
                #expect(outcome == (rule == .deny ? "denied" : "ok"), "\(rule)")
                let remaining = try [0, 2, 3].map { try store.committed(seed.tags[$0]) != nil }
                #expect(remaining == Array(repeating: rule != .cascade, count: 3), "\(rule)")
                if rule == .deny { #expect(try Self.stored(store, seed.post) == ["t1", "t3", "t4"]) }
                if rule == .nullify { #expect(try Self.stored(store, seed.tags[0], "posts") == []) }
                #expect(try store.problems() == [], "\(rule)")
            }
        }
    }

    @Test("an end made ordered keeps its links, in primary-key order until placed; made unordered again it drops its keys; a renamed entity keeps its order")
    func migration() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let context = store.context("seed")
            let (post, tags) = try context.performAndWait { () throws -> (ObjectID, [ObjectID]) in
                let post = insert("Post", ["name": "P"], in: context)
                let tags = (1...3).map { insert("Tag", ["name": "t\($0)"], in: context) }
                for index in [2, 0, 1] { post.addMember(tags[index], to: "tags") }
                try context.save()
                return (post.objectID, tags.map(\.objectID))
            }
            store.objects.close()
            func reopen(_ schema: Schema, _ body: (ObjectStore) throws -> Void) throws {
                let reopened = try ObjectStore(directory: store.directory.path, schema: schema)
                defer { reopened.close() }
                try body(reopened)
                #expect(try reopened.relationshipProblems() == [])
            }
            func names(_ objects: ObjectStore, _ id: ObjectID = post, _ relationship: String = "tags") throws -> [String] {
                let reader = objects.newBackgroundContext()
                return try reader.performAndWait { try reader.existingObject(with: id).members(named: relationship) }
            }
            try reopen(BlogModel.schema(tagsOrdered: true)) { objects in
                #expect(try names(objects) == ["t1", "t2", "t3"])
                let editor = objects.newBackgroundContext()
                try editor.performAndWait {
                    let post = try editor.existingObject(with: post)
                    try post.moveMember(at: 0, to: 2, in: "tags")
                    post.addMember(insert("Tag", ["name": "t4"], in: editor), to: "tags")
                    try editor.save()
                }
                #expect(try names(objects) == ["t2", "t3", "t1", "t4"])
            }
            try reopen(BlogModel.schema()) { (objects) throws in
                #expect(try names(objects).sorted() == ["t1", "t2", "t3", "t4"])
                #expect(try names(objects, tags[0], "posts") == ["P"])
            }
            try reopen(BlogModel.schema(tagsOrdered: true)) { objects in
                #expect(try names(objects) == ["t1", "t2", "t3", "t4"])  // unplaced again: primary-key order
                let editor = objects.newBackgroundContext()
                try editor.performAndWait {
                    try editor.existingObject(with: post).moveMember(at: 0, to: 3, in: "tags")
                    try editor.save()
                }
            }
            // Post renamed Article: its ordered end's links and order entries move with it.
            let renamed = try Schema([
                EntityDescription("Article", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("tags", destination: "Tag", inverse: "posts", isToMany: true, isOrdered: true),
                ], renamingIdentifier: "Post"),
                EntityDescription("Tag", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("posts", destination: "Article", inverse: "tags", isToMany: true),
                ]),
                EntityDescription("Person", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("friends", destination: "Person", inverse: "friends", isToMany: true),
                ]),
            ])
            try reopen(renamed) { objects in
                let article = ObjectID(entityName: "Article", primaryKey: try #require(post.primaryKey))
                #expect(try names(objects, article) == ["t2", "t3", "t4", "t1"])
            }
        }
    }

    @Test("the order crosses contexts: a child's moves reach the parent, a merge shows the new order, a pinned context keeps its generation's, a prefetch keeps it, Codable sets it")
    func acrossContexts() throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true)) { store in
            let seed = try Self.seed(store)
            let parent = store.context("parent"), viewer = store.context("viewer"), pinned = store.context("pinned")
            try viewer.performAndWait { () throws in
                #expect(try viewer.existingObject(with: seed.post).members(named: "tags") == ["t1", "t2", "t3", "t4"])
            }
            try pinned.performAndWait { () throws in
                try pinned.setQueryGenerationFrom(.current)
                #expect(try pinned.existingObject(with: seed.post).members(named: "tags") == ["t1", "t2", "t3", "t4"])
            }
            let child = parent.newChildContext(name: "child")
            try child.performAndWait {
                let post = try child.existingObject(with: seed.post)
                try post.moveMember(at: 0, to: 3, in: "tags")
                try post.insertMember(insert("Tag", ["name": "t5"], in: child), at: 1, into: "tags")
                #expect(post.members(named: "tags") == ["t2", "t5", "t3", "t4", "t1"])
                try child.save()
            }
            try parent.performAndWait { () throws in
                #expect(try parent.existingObject(with: seed.post).members(named: "tags") == ["t2", "t5", "t3", "t4", "t1"])
                #expect(parent.updatedObjects.map(\.objectID) == [seed.post])
            }
            // A grandchild reads the order through both, and moves one more.
            let grandchild = child.newChildContext(name: "grandchild")
            try grandchild.performAndWait {
                try grandchild.existingObject(with: seed.post).moveMember(at: 4, to: 0, in: "tags")
                try grandchild.save()
            }
            try child.performAndWait { try child.save() }
            let note = try parent.performAndWait { () throws -> ContextDidSaveNotification in
                try parent.save()
                return try #require(parent.lastDidSaveNotification)
            }
            #expect(try Self.stored(store, seed.post) == ["t1", "t2", "t5", "t3", "t4"])
            try viewer.performAndWait {
                try viewer.mergeChanges(fromContextDidSave: note)
                #expect(try viewer.existingObject(with: seed.post).members(named: "tags") == ["t1", "t2", "t5", "t3", "t4"])
            }
            try pinned.performAndWait { () throws in
                #expect(try pinned.existingObject(with: seed.post).members(named: "tags") == ["t1", "t2", "t3", "t4"])
                #expect(try pinned.count(for: FetchRequest(entityName: "Post", predicate: .memberCount("tags", .equal, 4))) == 1)
            }
            let reader = store.context("prefetch")
            try reader.performAndWait {
                var request = FetchRequest(entityName: "Post", sortDescriptors: [.ascending("name")])
                request.relationshipKeyPathsForPrefetching = ["tags"]
                let posts = try reader.fetch(request)
                if TestBackend.current == .engine {
                    #expect(reader.keptMembers(of: posts[0], "tags")?.map(\.name) == ["t1", "t2", "t5", "t3", "t4"])
                }
                #expect(posts[0].members(named: "tags") == ["t1", "t2", "t5", "t3", "t4"])
                struct Post: Codable { var name: String; var tags: [ObjectID] }
                try posts[1].setValues(from: Post(name: "Q", tags: [seed.tags[3], seed.tags[0]]))
                try posts[0].setValues(from: Post(name: "P", tags: [seed.tags[2], seed.tags[1]]))
                #expect(posts.map { $0.members(named: "tags") } == [["t3", "t2"], ["t4", "t1"]])
                #expect(try reader.fetch(FetchRequest(entityName: "Post", predicate: .hasMember("tags", seed.tags[3]))).map(\.name) == ["Q"])
                try reader.save()
            }
            #expect(try Self.stored(store, seed.post) == ["t3", "t2"])
            #expect(try Self.stored(store, seed.other) == ["t4", "t1"])
            #expect(try store.problems() == [])
        }
    }

    @Test("refresh without merging drops the object's places, rollback drops them all")
    func refreshAndRollback() throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true)) { store in
            let seed = try Self.seed(store, count: 3)
            let context = store.context("editor")
            try context.performAndWait {
                let post = try context.existingObject(with: seed.post)
                try post.moveMember(at: 0, to: 2, in: "tags")
                try context.refresh(post, mergeChanges: true)
                #expect(post.members(named: "tags") == ["t2", "t3", "t1"])
                try context.refresh(post, mergeChanges: false)
                #expect(post.members(named: "tags") == ["t1", "t2", "t3"])
                #expect(!post.hasChanges)
                try post.moveMember(at: 2, to: 0, in: "tags")
                context.rollback()
                #expect(post.members(named: "tags") == ["t1", "t2", "t3"])
                #expect(!context.hasChanges)
            }
        }
    }
}
