import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// Concurrent one-to-one edits (pairing, unpairing, marrying, deleting, inserting) from four
/// contexts working from older reads under random policies: after every save each stored pair
/// names itself back and nothing names a deleted object. Prints its seed; replay one with
/// `CAIRN_SEED=<seed>`.
@Suite("Relationships: randomized concurrent one-to-one edits")
struct OneToOneRandomEditTests {
    @Test("the stored pairs are symmetric after every save of four contexts editing them at random")
    func pairsStaySymmetric() throws {
        let seed = SeededRandom.seed()
        print("OneToOneRandomEditTests seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        try Self.run(seed: seed)
    }

    /// A seed that once failed: a cancelled delete's partner took an older read as the store's state.
    @Test("regression seeds", arguments: [11586658132281579159] as [UInt64])
    func regression(_ seed: UInt64) throws {
        try Self.run(seed: seed)
    }

    static func run(seed: UInt64) throws {
        try withOrgStore(schema: OneToOneTests.schema()) { store in
            let seeded = try OneToOneTests.seed(store)
            try RandomSaveStep.run(store, seed: seed, known: [seeded.ann, seeded.bob, seeded.carl, seeded.d1, seeded.d2], steps: 300,
                                   label: "OneToOneRandomEditTests") { context, known, random in
                Self.edit(in: context, known: known, random: &random)
            }
        }
    }

    /// One random edit; returns the IDs of objects it inserted.
    static func edit(in context: ObjectContext, known: [ObjectID], random: inout SeededRandom) -> [ObjectID] {
        func pick(_ entity: String) -> StoredObject? { RandomSaveStep.pick(entity, from: known, in: context, random: &random) }
        switch random.next(upTo: 6) {
        case 0, 1:  // a person takes a desk, or leaves hers
            pick("Person")?.setDestination(random.next(upTo: 4) == 0 ? nil : pick("Desk"), of: "desk")
        case 2:  // a desk is given, from its own end
            pick("Desk")?.setDestination(pick("Person"), of: "owner")
        case 3:  // a marriage (or a divorce)
            pick("Person")?.setDestination(random.next(upTo: 3) == 0 ? nil : pick("Person"), of: "spouse")
        case 4:  // a delete: the partner is emptied
            if let object = pick(random.next(upTo: 2) == 0 ? "Person" : "Desk") { context.delete(object) }
        default:  // a new person or desk
            let entity = random.next(upTo: 2) == 0 ? "Person" : "Desk"
            return [insert(entity, ["name": "N\(random.next(upTo: 1000))"], in: context).objectID]
        }
        return []
    }
}
