import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// One context's random edits of an ordered many-to-many end against an array model: after every
/// append (from either end), insert, move, removal, replacement and save the members come in
/// the model's order, and a fresh context reads the same back at the end (so renumbering and
/// keys in gaps keep the order). Prints its seed; replay one with `CAIRN_SEED=<seed>`.
@Suite("Relationships: ordered many-to-many against an array")
struct OrderedManyToManyModelTests {
    @Test("one context's edits keep an ordered end's members in the order an array of them has")
    func orderMatchesAModel() throws {
        let seed = SeededRandom.seed()
        print("OrderedManyToManyModelTests seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        try withOrgStore(schema: BlogModel.schema(tagsOrdered: true, postsOrdered: true)) { store in
            let seeded = try OrderedManyToManyTests.seed(store, count: 3)
            var pool = ["t1", "t2", "t3"]  // every tag made, member or not
            try OrderedModelRun.run(store, seed: seed, owner: seeded.post, relationship: "tags", model: ["t1", "t2", "t3"]) {
                context, post, model, random in
                func tag(named name: String) throws -> StoredObject {
                    let request = FetchRequest(entityName: "Tag", predicate: .compare("name", .equal, .string(name)))
                    return try #require(try context.fetch(request).first)
                }
                /// A tag of the pool, or a new one (added to the pool).
                func someTag() throws -> (StoredObject, String) {
                    if random.next(upTo: 3) == 0 || pool.isEmpty {
                        let name = "n\(pool.count)"
                        pool.append(name)
                        return (insert("Tag", ["name": name], in: context), name)
                    }
                    let name = pool[Int(random.next(upTo: UInt64(pool.count)))]
                    return (try tag(named: name), name)
                }
                switch random.next(upTo: 8) {
                case 0:  // append, from either end
                    let (tag, name) = try someTag()
                    if random.next(upTo: 2) == 0 { post.addMember(tag, to: "tags") } else { tag.addMember(post, to: "posts") }
                    if !model.contains(name) { model.append(name) }
                case 1, 2:  // insert at an index (a member moves there)
                    let (tag, name) = try someTag()
                    model.removeAll { $0 == name }
                    let at = Int(random.next(upTo: UInt64(model.count + 1)))
                    try post.insertMember(tag, at: at, into: "tags")
                    model.insert(name, at: at)
                case 3, 4:
                    guard !model.isEmpty else { break }
                    let from = Int(random.next(upTo: UInt64(model.count))), to = Int(random.next(upTo: UInt64(model.count)))
                    try post.moveMember(at: from, to: to, in: "tags")
                    model.insert(model.remove(at: from), at: to)
                case 5:
                    guard !model.isEmpty else { break }
                    let at = Int(random.next(upTo: UInt64(model.count)))
                    if random.next(upTo: 2) == 0 {
                        post.removeMember(try post.members(of: "tags")[at], from: "tags")
                    } else {
                        try tag(named: model[at]).removeMember(post, from: "posts")
                    }
                    model.remove(at: at)
                case 6:  // replace with a shuffled part of the list and a tag of the pool
                    var names = model.filter { _ in random.next(upTo: 3) != 0 }
                    for index in names.indices.reversed() {
                        names.swapAt(index, Int(random.next(upTo: UInt64(index + 1))))
                    }
                    let (extra, name) = try someTag()
                    if !names.contains(name) { names.append(name) }
                    try post.replaceMembers(of: "tags", with: try names.map { $0 == name ? extra : try tag(named: $0) })
                    model = names
                default:
                    try context.save()
                }
            }
        }
    }
}
