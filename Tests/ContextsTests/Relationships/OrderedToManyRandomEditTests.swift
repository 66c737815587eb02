import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// Random edits of ordered to-manys. One context against an array model: after every append,
/// insert, move, removal and replacement the members come in the model's order, and again after
/// each save, read back by a fresh context (so renumbering and keys in gaps keep the order). Four
/// contexts at once under random policies: the stored graph and the (to-one, order key) index
/// are consistent after every save. Prints its seed; replay one with `CAIRN_SEED=<seed>`.
@Suite("Relationships: randomized ordered to-many edits")
struct OrderedToManyRandomEditTests {
    @Test("one context's edits keep the members in the order an array of them has")
    func orderMatchesAModel() throws {
        let seed = SeededRandom.seed()
        print("OrderedToManyRandomEditTests model seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        try withOrgStore(schema: OrderedToManyTests.schema()) { store in
            let seeded = try OrderedToManyTests.seed(store, count: 3)
            var made = 0
            try OrderedModelRun.run(store, seed: seed, owner: seeded.list, relationship: "songs", model: ["s1", "s2", "s3"]) {
                context, list, model, random in
                switch random.next(upTo: 6) {
                case 0:
                    made += 1
                    list.addMember(insert("Song", ["name": "n\(made)"], in: context), to: "songs")
                    model.append("n\(made)")
                case 1:
                    made += 1
                    let at = Int(random.next(upTo: UInt64(model.count + 1)))
                    try list.insertMember(insert("Song", ["name": "n\(made)"], in: context), at: at, into: "songs")
                    model.insert("n\(made)", at: at)
                case 2, 3:
                    guard !model.isEmpty else { break }
                    let from = Int(random.next(upTo: UInt64(model.count))), to = Int(random.next(upTo: UInt64(model.count)))
                    try list.moveMember(at: from, to: to, in: "songs")
                    model.insert(model.remove(at: from), at: to)
                case 4:
                    guard !model.isEmpty else { break }
                    let at = Int(random.next(upTo: UInt64(model.count)))
                    list.removeMember(try list.members(of: "songs")[at], from: "songs")
                    model.remove(at: at)
                default:
                    try context.save()
                }
            }
        }
    }

    @Test("four contexts editing two ordered lists at random leave the graph and its index consistent after every save")
    func concurrentEditsStayConsistent() throws {
        let seed = SeededRandom.seed()
        print("OrderedToManyRandomEditTests concurrent seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        try withOrgStore(schema: OrderedToManyTests.schema()) { store in
            let seeded = try OrderedToManyTests.seed(store)
            try RandomSaveStep.run(store, seed: seed, known: [seeded.list, seeded.other] + seeded.songs, steps: 300,
                                   label: "OrderedToManyRandomEditTests") { context, known, random in
                Self.edit(in: context, known: known, random: &random)
            }
        }
    }

    /// One random edit; returns the IDs of objects it inserted.
    static func edit(in context: ObjectContext, known: [ObjectID], random: inout SeededRandom) -> [ObjectID] {
        func pick(_ entity: String) -> StoredObject? { RandomSaveStep.pick(entity, from: known, in: context, random: &random) }
        guard let list = pick("Playlist"), let count = try? list.memberCount(of: "songs") else { return [] }
        switch random.next(upTo: 6) {
        case 0:  // a new song, placed
            let song = insert("Song", ["name": "n\(random.next(upTo: 1000))"], in: context)
            try? list.insertMember(song, at: Int(random.next(upTo: UInt64(count + 1))), into: "songs")
            return [song.objectID]
        case 1, 2:  // a move
            guard count > 0 else { return [] }
            try? list.moveMember(at: Int(random.next(upTo: UInt64(count))), to: Int(random.next(upTo: UInt64(count))), in: "songs")
        case 3:  // a song to the other list, last, or out of any
            pick("Song")?.setDestination(random.next(upTo: 3) == 0 ? nil : pick("Playlist"), of: "playlist")
        case 4:  // a song placed in this list from anywhere
            guard let song = pick("Song"), let others = try? list.members(of: "songs").filter({ $0 !== song }).count else { return [] }
            try? list.insertMember(song, at: Int(random.next(upTo: UInt64(others + 1))), into: "songs")
        default:  // a song deleted, or renamed
            guard let song = pick("Song") else { return [] }
            if random.next(upTo: 2) == 0 { context.delete(song) } else { song["name"] = .string("r\(random.next(upTo: 1000))") }
        }
        return []
    }
}
