import CairnTestSupport
import Contexts
import Testing

/// The model check of the ordered to-many tests (one-to-many and many-to-many alike): `steps`
/// random edits of `owner`'s ordered `relationship` in one context, each made to an array too.
/// After each the members must come in the array's order, and at the end, saved, a fresh context
/// must read them so (renumbering and keys in gaps keep the order) and the checkers find nothing.
enum OrderedModelRun {
    /// `edit` makes one edit to the owner and to the model (it may save), drawing from `random`.
    static func run(
        _ store: OrgStore, seed: UInt64, owner: ObjectID, relationship: String, model start: [String], steps: Int = 400,
        edit: (ObjectContext, StoredObject, inout [String], inout SeededRandom) throws -> Void
    ) throws {
        var random = SeededRandom(seed: seed)
        var model = start
        let context = store.context("editor")
        for step in 0..<steps {
            let result = try context.performAndWait { () throws -> [String] in
                let list = try context.existingObject(with: owner)
                try edit(context, list, &model, &random)
                return list.members(named: relationship)
            }
            #expect(result == model, "seed \(seed), step \(step)")
            if result != model { return }
        }
        try context.performAndWait { try context.save() }
        let reader = store.context("reader")
        #expect(try reader.performAndWait { try reader.existingObject(with: owner).members(named: relationship) } == model, "seed \(seed)")
        #expect(try store.problems() == [], "seed \(seed)")
    }
}
