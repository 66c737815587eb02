import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// Two writers racing to insert the same values: the constraint check is the commit's own
/// condition, so exactly one object per value survives under every policy. Two ObjectStores on
/// one engine store, each with its context on its own queue, stand for two processes: they
/// share nothing above the storage seam.
@Suite struct UniquenessConcurrencyTests {
    static let emails = 60

    @Test(arguments: ["error", "storeTrump", "objectTrump", "overwrite", "rollback"])
    func twoWritersInsertingTheSameEmailsLeaveExactlyOneObjectPerEmail(policyName: String) throws {
        let store = try IndexedStore(schema: UniqueModel.schema())
        defer { store.close() }
        let twin = try ObjectStore(store: store.objects.store, schema: UniqueModel.schema())
        let policy = try #require(BuiltInPolicies.named(policyName))
        let writers = [store.objects, twin].enumerated().map { index, objects in
            objects.newBackgroundContext(name: "writer\(index)", mergePolicy: policy)
        }
        let successes = SuccessCount()
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for (index, context) in writers.enumerated() {
            DispatchQueue.global().async(group: group) {
                start.wait()
                for number in 0..<Self.emails {
                    context.performAndWait {
                        let user = context.insert(entity: "User")
                        user["email"] = .string("user\(number)@x")
                        user["name"] = .string("writer\(index)")
                        do {
                            try context.save()
                            successes.add()
                        } catch is MergeError {
                            context.rollback()  // the error policy: the other writer won
                        } catch {
                            Issue.record("writer\(index), email \(number): \(error)")
                            context.rollback()
                        }
                    }
                }
            }
        }
        start.signal()
        start.signal()
        group.wait()

        let users = try UniqueModel.storedUsers(in: store.objects)
        var perEmail: [AttributeValue: Int] = [:]
        for user in users { perEmail[user.value(of: "email"), default: 0] += 1 }
        #expect(users.count == Self.emails)
        #expect(perEmail.values.allSatisfy { $0 == 1 })
        if policyName == "error" { #expect(successes.value == Self.emails) }
        #expect(try store.objects.indexProblems() == [])
    }
}

/// A thread-safe count.
final class SuccessCount: @unchecked Sendable {
    // @unchecked: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
