import Contexts
import Policies
import Testing

/// The contract's many-to-many rows under the five built-in policies: the fact is the set of
/// links, merged link by link. B saves first, A second from an older read; after every save the
/// stored links must be symmetric and name stored objects.
@Suite("Relationships: many-to-many conflicts under every policy")
struct ManyToManyConflictTests {
    typealias Race = RelationshipConflictTests

    @Test("both sides change one post's tags: storeTrump and objectTrump keep both sides' changes, overwrite writes the tags A read with its change, rollback takes the store's",
          arguments: policyNames)
    func bothSidesChangeOneSet(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, a) = try Race.race(store, policy: policy, read: seed.p1, first: { a in
                let tags = try a.existingObject(with: seed.p1).members(of: "tags")
                #expect(tags.map(\.name).sorted() == ["rust", "swift"])
            }, theirs: { b in
                try b.existingObject(with: seed.p1).addMember(try b.existingObject(with: seed.go), to: "tags")
            }, ours: { a in
                try a.existingObject(with: seed.p1).removeMember(try a.existingObject(with: seed.swift), from: "tags")
            })
            #expect(result == Race.outcome(policy))
            if result == "conflict" {
                let conflicts = a.performAndWait { a.lastSaveConflicts }
                #expect(conflicts.map(\.kind) == [.updateUpdate])
                // The link properties: A read rust and swift, removed swift; the store added go.
                let go = "tags[\(seed.go.uriString)]", swift = "tags[\(seed.swift.uriString)]"
                #expect(conflicts.first?.changedProperties == [swift])
                #expect(conflicts.first?.storeChangedProperties == [go])
            }
            let expected: [String: [String]] = [
                "error": ["go", "rust", "swift"], "storeTrump": ["go", "rust"], "objectTrump": ["go", "rust"],
                "overwrite": ["rust"], "rollback": ["go", "rust", "swift"],
            ]
            #expect(try store.linked(seed.p1, "tags") == expected[policy])
            #expect(try store.linked(seed.go, "posts") == (policy == "overwrite" ? [] : ["P1"]))
            #expect(try store.linked(seed.swift, "posts") == (["error", "rollback"].contains(policy) ? ["P1"] : []))
            #expect(try store.problems() == [])
        }
    }

    @Test("a context that never read the set holds only its own change: overwrite then keeps the store's addition too",
          arguments: policyNames)
    func unreadSetUnderOverwrite(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.p1, theirs: { b in
                try b.existingObject(with: seed.p1).addMember(try b.existingObject(with: seed.go), to: "tags")
            }, ours: { a in
                try a.existingObject(with: seed.p1).removeMember(try a.existingObject(with: seed.swift), from: "tags")
            })
            #expect(result == Race.outcome(policy))
            let kept = ["error", "rollback"].contains(policy) ? ["go", "rust", "swift"] : ["go", "rust"]
            #expect(try store.linked(seed.p1, "tags") == kept)
            #expect(try store.problems() == [])
        }
    }

    @Test("two contexts link different tags to one post: a conflict under error, both links kept under the others but rollback",
          arguments: policyNames)
    func concurrentAdditions(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.p2, theirs: { b in
                try b.existingObject(with: seed.p2).addMember(try b.existingObject(with: seed.go), to: "tags")
            }, ours: { a in
                try a.existingObject(with: seed.swift).addMember(try a.existingObject(with: seed.p2), to: "posts")
            })
            #expect(result == Race.outcome(policy))
            let expected = ["error": ["go", "rust"], "rollback": ["go", "rust"]][policy] ?? ["go", "rust", "swift"]
            #expect(try store.linked(seed.p2, "tags") == expected)
            #expect(try store.linked(seed.swift, "posts") == (expected.contains("swift") ? ["P1", "P2"] : ["P1"]))
            #expect(try store.problems() == [])
        }
    }

    @Test("both sides make the same change to one link: every policy but error saves it once", arguments: policyNames)
    func sameChangeOnBothSides(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.p2, first: { a in
                try a.setQueryGenerationFrom(.current)  // A keeps reading what it read first
                _ = try a.existingObject(with: seed.p2).members(of: "tags")
                _ = try a.existingObject(with: seed.go)
            }, theirs: { b in
                try b.existingObject(with: seed.p2).addMember(try b.existingObject(with: seed.go), to: "tags")
            }, ours: { a in
                try a.existingObject(with: seed.p2).addMember(try a.existingObject(with: seed.go), to: "tags")
                try a.existingObject(with: seed.p2)["name"] = .string("P2'")
            })
            #expect(result == Race.outcome(policy))
            #expect(try store.linked(seed.p2, "tags") == ["go", "rust"])
            #expect(try store.linked(seed.go, "posts") == [policy == "error" || policy == "rollback" ? "P2" : "P2'"])
            #expect(try store.problems() == [])
        }
    }

    @Test("a link is a change of both ends: a link to a tag renamed since it was read conflicts on the tag; rollback of the tag drops the link",
          arguments: policyNames)
    func linkVersusRenameOfTheOtherEnd(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, a) = try Race.race(store, policy: policy, read: seed.go, theirs: { b in
                try b.existingObject(with: seed.go)["name"] = .string("golang")
            }, ours: { a in
                try a.existingObject(with: seed.p2).addMember(try a.existingObject(with: seed.go), to: "tags")
            })
            #expect(result == Race.outcome(policy))
            if result == "conflict" {
                #expect(a.performAndWait { a.lastSaveConflicts.map(\.objectID) } == [seed.go.uriString])
            }
            // Overwrite writes the whole tag: its name as A read it, over the rename.
            let name = policy == "overwrite" ? "go" : "golang"
            #expect(try store.committed(seed.go)?.values.value(of: "name") == .string(name))
            let linked = ["storeTrump", "objectTrump", "overwrite"].contains(policy)
            #expect(try store.linked(seed.p2, "tags") == (linked ? [name, "rust"] : ["rust"]).sorted())
            #expect(try store.linked(seed.go, "posts") == (linked ? ["P2"] : []))
            #expect(try store.problems() == [])
        }
    }

    @Test("a link to an object deleted in the store is an update/delete conflict on it: the store's side removes the link, ours re-inserts the object with it",
          arguments: policyNames)
    func linkToDeletedObject(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, a) = try Race.race(store, policy: policy, read: seed.go, theirs: { b in
                b.delete(try b.existingObject(with: seed.go))
            }, ours: { a in
                try a.existingObject(with: seed.p2).addMember(try a.existingObject(with: seed.go), to: "tags")
            })
            #expect(result == Race.outcome(policy))
            if result == "conflict" { #expect(a.performAndWait { a.lastSaveConflicts.map(\.kind) } == [.updateDelete]) }
            switch policy {
            case "error", "storeTrump", "rollback":
                if policy != "error" { #expect(try store.committed(seed.go) == nil) }
                #expect(try store.linked(seed.p2, "tags") == ["rust"])
            default:  // objectTrump, overwrite: go is back, under its ID, with the link
                #expect(try store.committed(seed.go)?.values.value(of: "name") == .string("go"))
                #expect(try store.linked(seed.p2, "tags") == ["go", "rust"])
                #expect(try store.linked(seed.go, "posts") == ["P2"])
            }
            #expect(try store.problems() == [])
        }
    }

    @Test("a delete against a store update that linked the object: a delete that wins unlinks that link too, one that loses keeps it",
          arguments: policyNames)
    func deleteVersusAddedLink(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, a) = try Race.race(store, policy: policy, read: seed.go, first: { a in
                a.delete(try a.existingObject(with: seed.go))
            }, theirs: { b in
                try b.existingObject(with: seed.p2).addMember(try b.existingObject(with: seed.go), to: "tags")
            })
            #expect(result == Race.outcome(policy))
            if result == "conflict" { #expect(a.performAndWait { a.lastSaveConflicts.map(\.kind) } == [.deleteUpdate]) }
            switch policy {
            case "error", "storeTrump", "rollback":
                #expect(try store.linked(seed.p2, "tags") == ["go", "rust"])
            default:
                #expect(try store.committed(seed.go) == nil)
                #expect(try store.linked(seed.p2, "tags") == ["rust"])
            }
            #expect(try store.problems() == [])
        }
    }

    /// Writes ours for posts and takes the store's state for tags.
    struct PostsWin: MergePolicy {
        var name: String { "postsWin" }
        func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
            conflicts.map { $0.objectID.contains("/Post/") ? .write($0.ourValues ?? [:]) : .takeStore }
        }
    }

    @Test("both ends of a link conflict and resolve it differently: the end first in the save settles it, the other is written as it took it",
          arguments: [true, false])
    func firstResolvedEndSettles(_ postFirst: Bool) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let a = store.context("A", policy: PostsWin()), b = store.context("B")
            try a.performAndWait {
                for id in postFirst ? [seed.p2, seed.go] : [seed.go, seed.p2] { _ = try a.existingObject(with: id) }
            }
            try b.performAndWait {
                try b.existingObject(with: seed.p2)["name"] = .string("P2 by B")
                try b.existingObject(with: seed.go)["name"] = .string("go by B")
                try b.save()
            }
            try a.performAndWait {
                try a.existingObject(with: seed.p2).addMember(try a.existingObject(with: seed.go), to: "tags")
                try a.save()
                #expect(a.lastSaveConflicts.count == 2)
            }
            #expect(try store.committed(seed.p2)?.values.value(of: "name") == .string("P2"))
            #expect(try store.committed(seed.go)?.values.value(of: "name") == .string("go by B"))
            #expect(try store.linked(seed.go, "posts") == (postFirst ? ["P2"] : []))
            #expect(try store.problems() == [])
        }
    }

    @Test("a delete whose nullify the context applied loses to the store: the links it removed stay", arguments: ["storeTrump", "rollback"])
    func cancelledDeleteKeepsItsLinks(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema()) { store in
            let seed = try BlogModel.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.rust, first: { a in
                a.delete(try a.existingObject(with: seed.rust))  // nullify: P1 and P2 lose rust here
                #expect(try a.existingObject(with: seed.p1).members(of: "tags").map(\.name) == ["swift"])
            }, theirs: { b in
                try b.existingObject(with: seed.rust)["name"] = .string("rustlang")
            })
            #expect(result == "ok")
            #expect(try store.linked(seed.rust, "posts") == ["P1", "P2"])
            #expect(try store.problems() == [])
        }
    }
}
