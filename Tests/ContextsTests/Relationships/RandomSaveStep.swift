import CairnTestSupport
import Contexts
import Policies
import Testing

/// The save step of the randomized relationship tests: a random policy for the save (a failed
/// save is rolled back), the saved inserts' permanent IDs followed in the list of known objects,
/// and the saves and the conflicts a policy resolved counted.
struct RandomSaveStep {
    /// Four contexts at `steps` random steps on `store`: three in four an `edit` in one of them
    /// (it returns the objects it inserted; `check` then looks at that context, nil when fine),
    /// the others a save under a random policy followed by the graph and index checkers. Stops
    /// at the first problem; prints what it did, labelled `label`.
    static func run(
        _ store: OrgStore, seed: UInt64, known start: [ObjectID], steps: Int, label: String,
        edit: (ObjectContext, [ObjectID], inout SeededRandom) -> [ObjectID],
        check: ((ObjectContext, [ObjectID]) -> String?)? = nil
    ) throws {
        var random = SeededRandom(seed: seed)
        var known = start
        let contexts = (0..<4).map { store.context("editor\($0)") }
        var step = RandomSaveStep()
        for index in 0..<steps {
            let context = contexts[Int(random.next(upTo: 4))]
            guard random.next(upTo: 4) == 0 else {
                known += context.performAndWait { edit(context, known, &random) }
                if let check {
                    let mismatch = context.performAndWait { check(context, known) }
                    #expect(mismatch == nil, "seed \(seed), step \(index), \(context.name): \(mismatch ?? "")")
                    if mismatch != nil { return }
                }
                continue
            }
            guard try step.saveAndCheck(context, in: store, random: &random, known: &known, seed: seed, step: index) else { return }
        }
        print("\(label) seed \(seed): \(step.saves) saves, \(step.resolved) conflicts resolved by a policy")
        #expect(step.saves > 0 && step.resolved > 0, "seed \(seed)")
    }

    var saves = 0
    var resolved = 0

    /// A random one of the `known` objects of `entity` that `context` holds and has not deleted, or nil.
    static func pick(_ entity: String, from known: [ObjectID], in context: ObjectContext, random: inout SeededRandom) -> StoredObject? {
        let candidates = known.filter { $0.entityName == entity }
        guard !candidates.isEmpty,
              let object = try? context.existingObject(with: candidates[Int(random.next(upTo: UInt64(candidates.count)))]),
              !object.isDeleted else { return nil }
        return object
    }

    /// Saves `context`; returns "ok" or the error it threw.
    mutating func save(_ context: ObjectContext, random: inout SeededRandom, known: inout [ObjectID]) -> String {
        let outcome = context.performAndWait { () -> String in
            context.mergePolicy = policiesByName[policyNames[Int(random.next(upTo: 5))]]!
            do {
                try context.save()
                return "ok"
            } catch {
                context.rollback()
                return "\(error)"
            }
        }
        saves += 1
        resolved += context.performAndWait { outcome == "ok" ? context.lastSaveConflicts.count : 0 }
        let permanentOf = context.performAndWait { () -> [ObjectID: ObjectID] in
            guard outcome == "ok", let note = context.lastDidSaveNotification else { return [:] }
            return Dictionary(note.temporaryIDs.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
        }
        known = known.map { permanentOf[$0] ?? $0 }
        return outcome
    }

    /// Saves `context` as `save` does, then checks the stored graph (and now and then resets the
    /// context); returns whether the graph is consistent.
    mutating func saveAndCheck(
        _ context: ObjectContext, in store: OrgStore, random: inout SeededRandom, known: inout [ObjectID], seed: UInt64, step: Int
    ) throws -> Bool {
        let outcome = save(context, random: &random, known: &known)
        let problems = try store.problems()
        #expect(problems == [], "seed \(seed), step \(step), \(context.name) save (\(outcome)): \(problems)")
        if !problems.isEmpty { return false }
        if random.next(upTo: 3) == 0 { context.performAndWait { context.reset() } }
        return true
    }
}
