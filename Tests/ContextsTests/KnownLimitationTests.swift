import Contexts
import Policies
import Testing

@Suite("Known engine limitations")
struct KnownLimitationTests {
    @Test("a record deleted and re-inserted restarts at version 1, hiding the change from a stale reader (ABA)")
    func versionRestartsAfterReinsert() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let stale = store.context("stale")
            try stale.performAndWait { _ = try stale.existingObject(with: id) }
            let deleter = store.context("deleter")
            try deleter.performAndWait {
                deleter.delete(try deleter.existingObject(with: id))
                try deleter.save()
                let again = deleter.insert(entity: "Person", primaryKey: id.primaryKey!)
                again["name"] = .string("Zoe")
                again["age"] = .int(1)
                try deleter.save()
            }
            try stale.performAndWait {
                try stale.existingObject(with: id)["age"] = .int(31)
                // The contract wants a conflict here (the record the context read is gone); the
                // engine's record version restarts at 1 on re-insert, so the save cannot tell.
                withKnownIssue("KVEngine: record versions restart at 1 after delete + re-insert") {
                    #expect(throws: MergeError.self) { try stale.save() }
                }
            }
        }
    }
}
