import Contexts
import Policies
import Testing

/// Many-to-many delete rules, applied at `delete(_:)` (so `deletedObjects` and the members show
/// them before the save) and again at the save for the links the store holds.
@Suite("Relationships: many-to-many delete rules")
struct ManyToManyDeleteRuleTests {
    @Test("nullify: each member loses the deleted object at once, becomes updated, and the save removes both entries of every link")
    func nullify() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let versions = try [seed.p1, seed.p2].map { try #require(try store.committed($0)).version }
            let context = store.context("editor")
            try context.performAndWait {
                let rust = try context.existingObject(with: seed.rust)
                context.delete(rust)
                let p1 = try context.existingObject(with: seed.p1), p2 = try context.existingObject(with: seed.p2)
                #expect(p1.memberNames("tags") == ["swift"] && p2.memberNames("tags") == [])
                #expect(p1.isUpdated && p2.isUpdated)
                try context.save()
            }
            #expect(try store.committed(seed.rust) == nil)
            #expect(try [seed.p1, seed.p2].map { try #require(try store.committed($0)).version } == versions.map { $0 + 1 })
            #expect(try store.linked(seed.p1, "tags") == ["swift"])
            #expect(try store.problems() == [])
        }
    }

    @Test("nullify also unlinks members the context never read, and one linked by another save since it read the object")
    func nullifyUnseenMembers() throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait { context.delete(try context.existingObject(with: seed.go)) }
            let other = store.context("other")
            try other.performAndWait {
                try other.existingObject(with: seed.go).addMember(try other.existingObject(with: seed.p2), to: "posts")
                try other.save()
            }
            context.mergePolicy = .objectTrump  // the delete wins over the link made meanwhile
            try context.performAndWait { try context.save() }
            #expect(try store.committed(seed.go) == nil)
            #expect(try store.linked(seed.p2, "tags") == ["rust"])
            #expect(try store.problems() == [])
        }
    }

    @Test("cascade deletes the members, and theirs in turn, at delete(_:), so deletedObjects lists them; a cycle ends")
    func cascade() throws {
        try withOrgStore(schema: BlogModel.schema(tagsRule: .cascade, postsRule: .cascade)) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                context.delete(try context.existingObject(with: seed.swift))
                // swift -> P1 -> rust -> P2: every one deleted, go untouched.
                #expect(Set(context.deletedObjects.map(\.name)) == ["swift", "P1", "rust", "P2"])
                try context.save()
            }
            for id in [seed.swift, seed.p1, seed.rust, seed.p2] { #expect(try store.committed(id) == nil) }
            #expect(try store.committed(seed.go) != nil)
            #expect(try store.problems() == [])
        }
    }

    @Test("deny fails the save with a validation error naming the object and relationship while it has members, and writes nothing")
    func deny() throws {
        try withOrgStore(schema: BlogModel.schema(postsRule: .deny)) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                let rust = try context.existingObject(with: seed.rust)
                context.delete(rust)
                let error = try #require(throws: ValidationError.self) { try context.save() }
                #expect(error.objectID == seed.rust && error.attributeName == "posts" && error.problem == .deleteDenied(destinations: 2))
                context.rollback()
                // Unlinked first, the delete goes through.
                let posts = try rust.members(of: "posts")
                for post in posts { rust.removeMember(post, from: "posts") }
                context.delete(rust)
                try context.save()
            }
            #expect(try store.committed(seed.rust) == nil)
            #expect(try store.linked(seed.p1, "tags") == ["swift"])
            #expect(try store.problems() == [])
        }
    }

    @Test("deny counts the links the store holds, also one made since the context read the object")
    func denyCountsTheStore() throws {
        try withOrgStore(schema: BlogModel.schema(postsRule: .deny)) { store in
            let seed = try BlogModel.seed(store)
            let context = store.context("editor")
            try context.performAndWait { _ = try context.existingObject(with: seed.go) }
            let other = store.context("other")
            try other.performAndWait {
                try other.existingObject(with: seed.go).addMember(try other.existingObject(with: seed.p2), to: "posts")
                try other.save()
            }
            try context.performAndWait {
                context.mergePolicy = .objectTrump
                context.delete(try context.existingObject(with: seed.go))
                #expect(throws: ValidationError.self) { try context.save() }
            }
            #expect(try store.linked(seed.go, "posts") == ["P2"])
        }
    }

    @Test("noAction leaves the links naming the deleted object, both entries of each: reading the members skips it, counting counts it")
    func noAction() throws {
        try withOrgStore(schema: BlogModel.schema(postsRule: .noAction)) { store in
            let seed = try BlogModel.seed(store)
            let versions = try [seed.p1, seed.p2].map { try #require(try store.committed($0)).version }
            let context = store.context("editor")
            try context.performAndWait {
                context.delete(try context.existingObject(with: seed.rust))
                try context.save()
            }
            #expect(try [seed.p1, seed.p2].map { try #require(try store.committed($0)).version } == versions)
            #expect(try store.linked(seed.p1, "tags") == ["swift"])  // the link to rust stays, unread
            let reader = store.context("reader")
            #expect(try reader.performAndWait { try reader.existingObject(with: seed.p1).memberCount(of: "tags") } == 2)
            // The checker allows exactly these dangling links (the deleted end's rule is noAction).
            #expect(try store.problems() == [])
        }
    }
}
