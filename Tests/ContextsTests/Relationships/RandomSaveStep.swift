import CairnTestSupport
import Contexts
import Policies
import Testing

/// The save step of the randomized relationship tests: a random policy for the save (a failed
/// save is rolled back), the saved inserts' permanent IDs followed in the list of known objects,
/// and the saves and the conflicts a policy resolved counted.
struct RandomSaveStep {
    var saves = 0
    var resolved = 0

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
