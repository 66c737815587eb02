import Contexts
import Policies
import Testing

/// Posts and tags: `Post.tags` and `Tag.posts` are a many-to-many pair (the links are their own
/// entries, in both ends' tables); `Person.friends` is a many-to-many that is its own inverse.
/// The delete rules are each test's choice, and which ends keep an order (`tagsOrdered`,
/// `postsOrdered`, `friendsOrdered`).
enum BlogModel {
    static func schema(tagsRule: RelationshipDescription.DeleteRule = .nullify,
                       postsRule: RelationshipDescription.DeleteRule = .nullify,
                       tagsOrdered: Bool = false, postsOrdered: Bool = false, friendsOrdered: Bool = false) -> Schema {
        do {
            return try Schema([
                EntityDescription("Post", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("tags", destination: "Tag", inverse: "posts", isToMany: true, deleteRule: tagsRule,
                                            isOrdered: tagsOrdered),
                ]),
                EntityDescription("Tag", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("posts", destination: "Post", inverse: "tags", isToMany: true, deleteRule: postsRule,
                                            isOrdered: postsOrdered),
                ]),
                EntityDescription("Person", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("friends", destination: "Person", inverse: "friends", isToMany: true,
                                            isOrdered: friendsOrdered),
                ]),
            ])
        } catch {
            fatalError("blog schema: \(error)")
        }
    }

    struct Seed {
        let p1, p2, swift, rust, go: ObjectID
    }

    /// Posts P1 (tagged swift and rust) and P2 (tagged rust); tags swift, rust and go; committed.
    static func seed(_ store: OrgStore) throws -> Seed {
        let context = store.context("seed")
        return try context.performAndWait {
            let p1 = insert("Post", ["name": "P1"], in: context), p2 = insert("Post", ["name": "P2"], in: context)
            let tags = ["swift", "rust", "go"].map { insert("Tag", ["name": $0], in: context) }
            p1.addMember(tags[0], to: "tags")
            p1.addMember(tags[1], to: "tags")
            tags[1].addMember(p2, to: "posts")
            try context.save()
            return Seed(p1: p1.objectID, p2: p2.objectID, swift: tags[0].objectID, rust: tags[1].objectID, go: tags[2].objectID)
        }
    }
}

extension OrgStore {
    /// The names of the stored members of `owner`'s `relationship`, sorted, read by a fresh context.
    func linked(_ owner: ObjectID, _ relationship: String) throws -> [String] {
        try storedMembers(of: owner, relationship)
    }
}

extension StoredObject {
    /// The names of the members of `relationship`, sorted ([] when it throws).
    func memberNames(_ relationship: String) -> [String] {
        ((try? members(of: relationship)) ?? []).map(\.name).sorted()
    }
}
