import Contexts
import Foundation
import Policies
import Testing

/// Many-to-many in one context and in the store: both ends follow at once, both ends are
/// updated and versioned, a link is two entries however large the set, the schema's checks.
@Suite("Relationships: many-to-many")
struct ManyToManyTests {
    @Test("the schema takes a many-to-many pair and one that is its own inverse; a link table name past the engine's limit is refused")
    func schema() throws {
        let schema = BlogModel.schema()
        #expect(schema.entity(named: "Post")?.relationship(named: "tags")?.isToMany == true)
        #expect(schema.entity(named: "Person")?.relationship(named: "friends")?.inverse == "friends")
        let long = String(repeating: "r", count: 200)
        #expect(throws: SchemaError.self) {
            try Schema([
                EntityDescription("A", attributes: [], relationships: [RelationshipDescription(long, destination: "B", inverse: "as", isToMany: true)]),
                EntityDescription("B", attributes: [], relationships: [RelationshipDescription("as", destination: "A", inverse: long, isToMany: true)]),
            ])
        }
    }

    @Test("adding, removing and replacing on one end changes the other at once, and both ends become updated")
    func bothEndsFollow() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                let p1 = try context.existingObject(with: seed.p1), p2 = try context.existingObject(with: seed.p2)
                let swift = try context.existingObject(with: seed.swift), go = try context.existingObject(with: seed.go)
                #expect(p1.memberNames("tags") == ["rust", "swift"])
                #expect(try go.memberCount(of: "posts") == 0)
                p1.addMember(go, to: "tags")
                #expect(go.memberNames("posts") == ["P1"])
                #expect(p1.memberNames("tags") == ["go", "rust", "swift"])
                #expect(p1.isUpdated && go.isUpdated)
                swift.removeMember(p1, from: "posts")  // from the other end
                #expect(p1.memberNames("tags") == ["go", "rust"])
                #expect(try swift.memberCount(of: "posts") == 0)
                try p2.replaceMembers(of: "tags", with: [swift, go])
                #expect(p2.memberNames("tags") == ["go", "swift"])
                #expect(go.memberNames("posts") == ["P1", "P2"])
                #expect(try context.existingObject(with: seed.rust).memberNames("posts") == ["P1"])
                #expect(Set(context.updatedObjects.map(\.name)) == ["P1", "P2", "swift", "rust", "go"])
                // Adding a link that is there, or undoing a change, changes nothing more.
                p1.addMember(try context.existingObject(with: seed.rust), to: "tags")
                #expect(p1.memberNames("tags") == ["go", "rust"])
                try context.save()
            }
            #expect(try store.linked(seed.p1, "tags") == ["go", "rust"])
            #expect(try store.linked(seed.p2, "tags") == ["go", "swift"])
            #expect(try store.linked(seed.go, "posts") == ["P1", "P2"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a link change raises both ends' versions, also when no attribute changed, and undoing it before saving writes nothing")
    func versionsOfBothEnds() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let before = try [seed.p2, seed.go, seed.swift].map { try #require(try store.committed($0)).version }
            let context = store.context("editor")
            try context.performAndWait {
                let p2 = try context.existingObject(with: seed.p2), go = try context.existingObject(with: seed.go)
                p2.addMember(go, to: "tags")
                try context.save()
                #expect(context.lastDidSaveNotification.map { Set($0.updatedObjectIDs) } == [seed.p2, seed.go])
                go.removeMember(p2, from: "posts")
                go.addMember(p2, to: "posts")  // back as saved
                #expect(go.memberNames("posts") == ["P2"])
            }
            let after = try [seed.p2, seed.go, seed.swift].map { try #require(try store.committed($0)).version }
            #expect(after == [before[0] + 1, before[1] + 1, before[2]])
            #expect(try store.linked(seed.go, "posts") == ["P2"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a link to a new object, and between two new objects, is saved with their permanent IDs")
    func newObjects() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            let (post, tag) = try context.performAndWait { () throws -> (ObjectID, ObjectID) in
                let post = insert("Post", ["name": "P3"], in: context), tag = insert("Tag", ["name": "zig"], in: context)
                post.addMember(tag, to: "tags")
                post.addMember(try context.existingObject(with: seed.swift), to: "tags")
                #expect(tag.memberNames("posts") == ["P3"])
                try context.save()
                return (post.objectID, tag.objectID)
            }
            #expect(try store.linked(post, "tags") == ["swift", "zig"])
            #expect(try store.linked(tag, "posts") == ["P3"])
            #expect(try store.linked(seed.swift, "posts") == ["P1", "P3"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a relationship that is its own inverse: a friendship is one link, seen from both people")
    func ownInverse() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let context = store.context("editor")
            let (ann, bob) = try context.performAndWait { () throws -> (ObjectID, ObjectID) in
                let ann = insert("Person", ["name": "Ann"], in: context), bob = insert("Person", ["name": "Bob"], in: context)
                let cy = insert("Person", ["name": "Cy"], in: context)
                ann.addMember(bob, to: "friends")
                cy.addMember(ann, to: "friends")
                #expect(bob.memberNames("friends") == ["Ann"])
                #expect(ann.memberNames("friends") == ["Bob", "Cy"])
                try context.save()
                bob.removeMember(ann, from: "friends")
                #expect(ann.memberNames("friends") == ["Cy"])
                try context.save()
                return (ann.objectID, bob.objectID)
            }
            #expect(try store.linked(ann, "friends") == ["Cy"])
            #expect(try store.linked(bob, "friends") == [])
            #expect(try store.problems() == [])
        }
    }

    @Test("adding one link writes two records and two link entries, with ten members or thousands")
    func constantWrites() throws {
        for size in [10, 3_000] {
            try withOrgStore(schema: BlogModel.schema()) { store in
                let context = store.context("loader")
                let (tag, post) = try context.performAndWait { () throws -> (ObjectID, ObjectID) in
                    let tag = insert("Tag", ["name": "big"], in: context)
                    for index in 0..<size { insert("Post", ["name": "P\(index)"], in: context).addMember(tag, to: "tags") }
                    let post = insert("Post", ["name": "new"], in: context)
                    try context.save()
                    return (tag.objectID, post.objectID)
                }
                let written = WrittenKeys()
                store.objects.storage.addCommitObserver { notice in written.note(notice.writtenKeys) }
                let editor = store.context("editor")
                try editor.performAndWait {
                    try editor.existingObject(with: tag).addMember(try editor.existingObject(with: post), to: "posts")
                    try editor.save()
                }
                let keys = written.last
                #expect(keys.count == 4, "\(size) members: \(keys.map(\.table))")
                #expect(Set(keys.map(\.table)) == ["entity:Tag", "entity:Post", "link:Tag:posts", "link:Post:tags"])
                #expect(try editor.performAndWait { try editor.existingObject(with: tag).memberCount(of: "posts") } == size + 1)
            }
        }
    }
}

/// Opening a store with a schema that renames an entity moves its links; one that drops a
/// many-to-many clears them, so declaring it again starts empty.
@Suite("Relationships: many-to-many migration")
struct ManyToManyMigrationTests {
    static func schema(post: String, linked: Bool) throws -> Schema {
        try Schema([
            EntityDescription(post, attributes: [AttributeDescription("name", .string)], relationships: linked ? [
                RelationshipDescription("tags", destination: "Tag", inverse: "posts", isToMany: true),
            ] : [], renamingIdentifier: post == "Post" ? nil : "Post"),
            EntityDescription("Tag", attributes: [AttributeDescription("name", .string)], relationships: linked ? [
                RelationshipDescription("posts", destination: post, inverse: "tags", isToMany: true),
            ] : []),
        ])
    }

    @Test("a renamed entity keeps its links; a dropped many-to-many leaves no entries behind")
    func renameAndDrop() throws {
        try withOrgStore(schema: try Self.schema(post: "Post", linked: true)) { store in
            let (post, tag) = try store.context("seed").performAndWait { () throws -> (ObjectID, ObjectID) in
                let context = store.context("writer")
                return try context.performAndWait {
                    let post = insert("Post", ["name": "P1"], in: context), tag = insert("Tag", ["name": "swift"], in: context)
                    post.addMember(tag, to: "tags")
                    try context.save()
                    return (post.objectID, tag.objectID)
                }
            }
            store.objects.close()
            func reopen(_ post: String, linked: Bool, _ body: (ObjectStore) throws -> Void) throws {
                let objects = try ObjectStore(directory: store.directory.path, schema: try Self.schema(post: post, linked: linked))
                defer { objects.close() }
                try body(objects)
            }
            let article = ObjectID(entityName: "Article", primaryKey: try #require(post.primaryKey))
            try reopen("Article", linked: true) { objects in
                let context = objects.newBackgroundContext()
                try context.performAndWait { () throws in
                    #expect(try context.existingObject(with: article).members(of: "tags").map(\.name) == ["swift"])
                    #expect(try context.existingObject(with: tag).members(of: "posts").map(\.objectID) == [article])
                }
                #expect(try objects.relationshipProblems() == [])
            }
            try reopen("Article", linked: false) { _ in }
            try reopen("Article", linked: true) { objects in
                let context = objects.newBackgroundContext()
                try context.performAndWait { () throws in
                    #expect(try context.existingObject(with: article).memberCount(of: "tags") == 0)
                    #expect(try context.existingObject(with: tag).memberCount(of: "posts") == 0)
                }
            }
        }
    }
}

/// The keys of the last commit a store's observer saw.
final class WrittenKeys: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var keys: [StorageKey] = []

    func note(_ written: [StorageKey]) {
        lock.withLock { keys = written }
    }

    var last: [StorageKey] { lock.withLock { keys } }
}
