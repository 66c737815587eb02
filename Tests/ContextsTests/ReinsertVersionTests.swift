import Contexts
import Policies
import Testing

@Suite("Record versions across delete and re-insert")
struct ReinsertVersionTests {
    @Test("a record deleted and re-inserted continues its version, so a stale reader's save conflicts (no ABA)")
    func versionContinuesAfterReinsert() throws {
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
                // The engine continues from the tombstone's version instead of restarting at 1.
                #expect(again.committedVersion == TestBackend.current.reinsertedVersion(deletedAt: 1))
            }
            try stale.performAndWait {
                try stale.existingObject(with: id)["age"] = .int(31)
                // The record the context read is gone: the contract wants a conflict here.
                #expect(throws: MergeError.self) { try stale.save() }
            }
        }
    }
}
