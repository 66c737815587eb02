import Contexts
import Policies
import Testing

/// An ordered many-to-many end's conflicts under the five policies. Links still merge link by
/// link; a link's place at an ordered end is the value of its link property (its key), so it
/// merges like an attribute: moves of different links are all kept, a link both sides moved goes
/// where the winning side put it; overwrite writes the order as this context read it, with its
/// changes; rollback takes the store's. A reorder changes the ordered end alone, so it never
/// conflicts with a change of a member.
@Suite("Relationships: ordered many-to-many conflicts under every policy")
struct OrderedManyToManyConflictTests {
    typealias Race = RelationshipConflictTests
    typealias Tests = OrderedManyToManyTests

    static let schema = BlogModel.schema(tagsOrdered: true)

    @Test("two contexts move different links of one post: error fails, storeTrump and objectTrump keep both moves, overwrite A's order as read with its move, rollback the store's",
          arguments: policyNames)
    func differentLinksMoved(_ policy: String) throws {
        try withOrgStore(schema: Self.schema) { store in
            let seed = try Tests.seed(store)
            let (result, a) = try Race.race(store, policy: policy, read: seed.post, first: { a in
                try a.existingObject(with: seed.post).moveMember(at: 0, to: 3, in: "tags")  // t1 last
            }, theirs: { b in
                try b.existingObject(with: seed.post).moveMember(at: 2, to: 0, in: "tags")  // t3 first
            })
            #expect(result == Race.outcome(policy))
            if result == "conflict" {
                let conflicts = a.performAndWait { a.lastSaveConflicts }
                #expect(conflicts.map(\.objectID) == [seed.post.uriString])  // the tags were not changed
                #expect(conflicts.first?.changedProperties == ["tags[\(seed.tags[0].uriString)]"])
                #expect(conflicts.first?.storeChangedProperties == ["tags[\(seed.tags[2].uriString)]"])
            }
            let expected: [String: [String]] = [
                "error": ["t3", "t1", "t2", "t4"], "storeTrump": ["t3", "t2", "t4", "t1"], "objectTrump": ["t3", "t2", "t4", "t1"],
                "overwrite": ["t2", "t3", "t4", "t1"], "rollback": ["t3", "t1", "t2", "t4"],
            ]
            #expect(try Tests.stored(store, seed.post) == expected[policy])
            #expect(try store.problems() == [])
        }
    }

    @Test("both contexts move one link: its key is a property changed on both sides, the trumping side's place wins",
          arguments: policyNames)
    func sameLinkMoved(_ policy: String) throws {
        try withOrgStore(schema: Self.schema) { store in
            let seed = try Tests.seed(store)
            let (result, a) = try Race.race(store, policy: policy, read: seed.post, first: { a in
                try a.existingObject(with: seed.post).moveMember(at: 1, to: 3, in: "tags")  // t2 last
            }, theirs: { b in
                try b.existingObject(with: seed.post).moveMember(at: 1, to: 0, in: "tags")  // t2 first
            })
            #expect(result == Race.outcome(policy))
            if result == "conflict" {
                let conflict = try #require(a.performAndWait { a.lastSaveConflicts.first })
                let property = "tags[\(seed.tags[1].uriString)]"
                #expect(conflict.changedProperties == [property] && conflict.storeChangedProperties == [property])
                // The link's value is its key: B put it before t1's, A after t4's.
                guard case .int(let ancestor) = conflict.ancestorValues.value(of: property),
                      case .int(let ours) = conflict.ourValues?.value(of: property) ?? .null,
                      case .int(let theirs) = conflict.storeValues?.value(of: property) ?? .null else {
                    Issue.record("link property values: \(conflict)")
                    return
                }
                #expect(theirs < ancestor && ancestor < ours)
            }
            let ours = ["objectTrump", "overwrite"].contains(policy)
            #expect(try Tests.stored(store, seed.post) == (ours ? ["t1", "t3", "t4", "t2"] : ["t2", "t1", "t3", "t4"]))
            #expect(try store.problems() == [])
        }
    }

    @Test("two contexts append a tag each: both end up last, in primary-key order, under storeTrump, objectTrump and overwrite; rollback keeps the store's",
          arguments: policyNames)
    func concurrentAppends(_ policy: String) throws {
        try withOrgStore(schema: Self.schema) { store in
            let seed = try Tests.seed(store, count: 2)
            let (result, _) = try Race.race(store, policy: policy, read: seed.post, first: { a in
                try a.existingObject(with: seed.post).addMember(insert("Tag", ["name": "a"], in: a), to: "tags")
                try a.obtainPermanentIDs(for: Array(a.insertedObjects))  // A's tag has the lower key
            }, theirs: { b in
                try b.existingObject(with: seed.post).addMember(insert("Tag", ["name": "b"], in: b), to: "tags")
            })
            #expect(result == Race.outcome(policy))
            let kept = ["storeTrump", "objectTrump", "overwrite"].contains(policy)
            #expect(try Tests.stored(store, seed.post) == (kept ? ["t1", "t2", "a", "b"] : ["t1", "t2", "b"]))
            #expect(try store.problems() == [])
        }
    }

    @Test("a link moved here and removed in the store: the trumping side decides whether it stays (objectTrump and overwrite keep it, at our place)",
          arguments: policyNames)
    func movedVersusRemoved(_ policy: String) throws {
        try withOrgStore(schema: Self.schema) { store in
            let seed = try Tests.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.post, first: { a in
                try a.existingObject(with: seed.post).moveMember(at: 1, to: 3, in: "tags")  // t2 last
            }, theirs: { b in
                try b.existingObject(with: seed.post).removeMember(try b.existingObject(with: seed.tags[1]), from: "tags")
            })
            #expect(result == Race.outcome(policy))
            let ours = ["objectTrump", "overwrite"].contains(policy)
            #expect(try Tests.stored(store, seed.post) == (ours ? ["t1", "t3", "t4", "t2"] : ["t1", "t3", "t4"]))
            #expect(try store.linked(seed.tags[1], "posts") == (ours ? ["P"] : []))
            #expect(try store.problems() == [])
        }
    }

    @Test("a reorder changes the ordered end alone: a move against a rename of the moved tag does not conflict, under any policy",
          arguments: policyNames)
    func moveVersusRenameOfTheMember(_ policy: String) throws {
        try withOrgStore(schema: Self.schema) { store in
            let seed = try Tests.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.post, first: { a in
                _ = try a.existingObject(with: seed.tags[0])
                try a.existingObject(with: seed.post).moveMember(at: 0, to: 3, in: "tags")
            }, theirs: { b in
                try b.existingObject(with: seed.tags[0])["name"] = .string("one")
            })
            #expect(result == "ok")
            #expect(try Tests.stored(store, seed.post) == ["t2", "t3", "t4", "one"])
            #expect(try store.problems() == [])
        }
    }

    @Test("with both ends ordered, reorders of one link at its two ends do not conflict, and both are kept", arguments: policyNames)
    func bothEndsReorderOneLink(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true, postsOrdered: true)) { store in
            let seed = try Tests.seed(store, count: 2)
            let setup = store.context("setup")
            try setup.performAndWait {
                try setup.existingObject(with: seed.tags[0]).addMember(try setup.existingObject(with: seed.other), to: "posts")
                try setup.save()  // t1: P, Q
            }
            let (result, _) = try Race.race(store, policy: policy, read: seed.post, first: { a in
                try a.existingObject(with: seed.post).moveMember(at: 0, to: 1, in: "tags")  // P: t2, t1
            }, theirs: { b in
                try b.existingObject(with: seed.tags[0]).moveMember(at: 0, to: 1, in: "posts")  // t1: Q, P
            })
            #expect(result == "ok")
            #expect(try Tests.stored(store, seed.post) == ["t2", "t1"])
            #expect(try Tests.stored(store, seed.tags[0], "posts") == ["Q", "P"])
            #expect(try store.problems() == [])
        }
    }

    @Test("both ends ordered, both conflicting: each end's place of a new link is its own resolution's", arguments: policyNames)
    func bothEndsConflict(_ policy: String) throws {
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true, postsOrdered: true)) { store in
            let seed = try Tests.seed(store, count: 2)
            // A links Q to t1 at the front of both lists; B renames Q and t1 meanwhile.
            let (result, _) = try Race.race(store, policy: policy, read: seed.other, first: { a in
                let t1 = try a.existingObject(with: seed.tags[0]), other = try a.existingObject(with: seed.other)
                try other.insertMember(t1, at: 0, into: "tags")
                try t1.insertMember(other, at: 0, into: "posts")
            }, theirs: { b in
                try b.existingObject(with: seed.other)["name"] = .string("Q2")
                try b.existingObject(with: seed.tags[0])["name"] = .string("one")
            })
            #expect(result == Race.outcome(policy))
            switch policy {
            case "error", "rollback":
                #expect(try Tests.stored(store, seed.tags[0], "posts") == ["P"])
            default:
                let q = policy == "overwrite" ? "Q" : "Q2"
                #expect(try Tests.stored(store, seed.tags[0], "posts") == [q, "P"])
                #expect(try Tests.stored(store, seed.other).count == 1)
            }
            #expect(try store.problems() == [])
        }
    }
}
