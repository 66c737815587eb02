import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// Concurrent many-to-many edits (linking, unlinking, replacing sets, friendships, inserts,
/// renames and deletes under each delete rule) from four contexts working from older reads
/// under random policies: after every save every stored link has its mirror and names stored
/// objects (and every index entry matches its record), and each context's view of a link is the
/// same from both ends. With every end ordered the edits also insert and move links, and after
/// every save each ordered end's order entries match its links' keys exactly, and each context
/// lists every member once. Prints its seed; replay one with `CAIRN_SEED=<seed>`;
/// `CAIRN_TORTURE=1` runs ten times the steps.
@Suite("Relationships: randomized concurrent many-to-many edits")
struct ManyToManyRandomEditTests {
    static let steps = ProcessInfo.processInfo.environment["CAIRN_TORTURE"] == "1" ? 3000 : 300

    @Test("the stored links are symmetric and name stored objects after every save of four contexts editing them at random",
          arguments: RelationshipDescription.DeleteRule.allCases)
    func linksStayConsistent(_ postsRule: RelationshipDescription.DeleteRule) throws {
        let seed = SeededRandom.seed()
        print("ManyToManyRandomEditTests (\(postsRule)) seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        try Self.run(seed: seed, postsRule: postsRule, steps: Self.steps)
    }

    @Test("with every end ordered, links stay symmetric and each end's order entries match its keys after every save of four contexts inserting and moving links at random",
          arguments: [RelationshipDescription.DeleteRule.nullify, .cascade])
    func orderedLinksStayConsistent(_ postsRule: RelationshipDescription.DeleteRule) throws {
        let seed = SeededRandom.seed()
        print("ManyToManyRandomEditTests ordered (\(postsRule)) seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        try Self.run(seed: seed, postsRule: postsRule, steps: Self.steps, ordered: true)
    }

    /// A seed that once failed: a member a delete unlinked took the store's state, and its
    /// resolution dropped the unlinking of the object the commit deleted.
    @Test("regression seeds", arguments: [2000304702422880155] as [UInt64])
    func regression(_ seed: UInt64) throws {
        try Self.run(seed: seed, postsRule: .nullify, steps: 300)
    }

    static func run(seed: UInt64, postsRule: RelationshipDescription.DeleteRule, steps: Int, ordered: Bool = false) throws {
        let schema = BlogModel.schema(postsRule: postsRule, tagsOrdered: ordered, postsOrdered: ordered, friendsOrdered: ordered)
        try withOrgStore(schema: schema) { store in
            let seeded = try BlogModel.seed(store)
            // Under noAction a deleted tag's posts keep naming it: only there may the ends differ.
            try RandomSaveStep.run(store, seed: seed, known: [seeded.p1, seeded.p2, seeded.swift, seeded.rust, seeded.go], steps: steps,
                                   label: "ManyToManyRandomEditTests" + (ordered ? " ordered" : ""), edit: { context, known, random in
                Self.edit(in: context, known: known, random: &random, ordered: ordered)
            }, check: postsRule == .noAction ? nil : { context, known in Self.asymmetry(in: context, known: known) })
        }
    }

    /// A link the context shows from one end but not from the other, or a member listed twice; nil when none.
    static func asymmetry(in context: ObjectContext, known: [ObjectID]) -> String? {
        for id in known where id.entityName == "Post" {
            guard let post = try? context.existingObject(with: id), !post.isDeleted,
                  let tags = try? post.members(of: "tags") else { continue }
            if Set(tags.map(ObjectIdentifier.init)).count != tags.count { return "\(post.objectID) lists a tag twice" }
            for tag in tags {
                guard let posts = try? tag.members(of: "posts") else { continue }
                if Set(posts.map(ObjectIdentifier.init)).count != posts.count { return "\(tag.objectID) lists a post twice" }
                if !posts.contains(where: { $0 === post }) { return "\(post.objectID) lists \(tag.objectID), which does not list it back" }
            }
        }
        return nil
    }

    /// One random edit; returns the IDs of objects it inserted. With `ordered` ends, one in four
    /// places a link (an insert at an index, or a move) instead.
    static func edit(in context: ObjectContext, known: [ObjectID], random: inout SeededRandom, ordered: Bool = false) -> [ObjectID] {
        func pick(_ entity: String) -> StoredObject? { RandomSaveStep.pick(entity, from: known, in: context, random: &random) }
        if ordered && random.next(upTo: 4) == 0 {
            let fromPost = random.next(upTo: 2) == 0
            guard let owner = pick(fromPost ? "Post" : "Tag"), let member = pick(fromPost ? "Tag" : "Post"),
                  let count = try? owner.memberCount(of: fromPost ? "tags" : "posts") else { return [] }
            let relationship = fromPost ? "tags" : "posts"
            if random.next(upTo: 2) == 0 || count == 0 {
                let others = ((try? owner.members(of: relationship)) ?? []).filter { $0 !== member }.count
                try? owner.insertMember(member, at: Int(random.next(upTo: UInt64(others + 1))), into: relationship)
            } else if let listed = try? owner.members(of: relationship).count, listed > 0 {
                try? owner.moveMember(at: Int(random.next(upTo: UInt64(listed))), to: Int(random.next(upTo: UInt64(listed))), in: relationship)
            }
            return []
        }
        switch random.next(upTo: 9) {
        case 0, 1:  // link a post and a tag, from either end
            guard let post = pick("Post"), let tag = pick("Tag") else { return [] }
            if random.next(upTo: 2) == 0 { post.addMember(tag, to: "tags") } else { tag.addMember(post, to: "posts") }
        case 2, 3:  // unlink one of a post's tags
            guard let post = pick("Post"), let tags = try? post.members(of: "tags"), !tags.isEmpty else { return [] }
            post.removeMember(tags[Int(random.next(upTo: UInt64(tags.count)))], from: "tags")
        case 4:  // replace a tag's posts
            guard let tag = pick("Tag") else { return [] }
            let posts = [pick("Post"), pick("Post")].compactMap { $0 }
            try? tag.replaceMembers(of: "posts", with: posts)
        case 5:  // a friendship made or ended
            guard let one = pick("Person"), let other = pick("Person") else {
                return [insert("Person", ["name": "F\(random.next(upTo: 1000))"], in: context).objectID]
            }
            if random.next(upTo: 3) == 0 { one.removeMember(other, from: "friends") } else { one.addMember(other, to: "friends") }
        case 6:  // a delete: its links go by the rule
            guard random.next(upTo: 2) == 0, let object = pick(random.next(upTo: 2) == 0 ? "Post" : "Tag") else { return [] }
            context.delete(object)
        case 7:  // a rename
            pick(random.next(upTo: 2) == 0 ? "Post" : "Tag")?["name"] = .string("R\(random.next(upTo: 1000))")
        default:  // a new post or tag, linked to one that exists
            let entity = random.next(upTo: 2) == 0 ? "Post" : "Tag"
            let object = insert(entity, ["name": "N\(random.next(upTo: 1000))"], in: context)
            if let other = pick(entity == "Post" ? "Tag" : "Post") { object.addMember(other, to: entity == "Post" ? "tags" : "posts")}
            return [object.objectID]
        }
        return []
    }
}
