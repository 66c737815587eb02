import CairnTestSupport
import Contexts
import Dispatch
import Foundation
import Locking
import Policies
import Testing

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("perform runs blocks in FIFO order on the context's queue, ahead of later async performs")
    func performIsFIFO() async throws {
        try await withTestStore { store in
            let context = store.context("fifo")
            let order = ConditionLock<[Int]>([])
            enqueue(200, on: context, into: order)
            // An async perform queues behind them.
            let count = try await context.perform { order.value.count }
            #expect(count == 200)
            #expect(order.value == Array(0..<200))
        }
    }

    /// Fire-and-forget `perform` from synchronous code. (In async code the async `perform`
    /// overload wins, as with Core Data's; see Docs/Contexts.md.)
    func enqueue(_ count: Int, on context: ObjectContext, into order: ConditionLock<[Int]>) {
        for index in 0..<count {
            context.perform {
                precondition(context.isOnQueue)
                order.withLock { $0.append(index) }
            }
        }
    }

    @Test("performAndWait is re-entrant, returns values and rethrows")
    func performAndWait() throws {
        struct Oops: Error {}
        try withTestStore { store in
            let context = store.context("sync")
            #expect(!context.isOnQueue)
            let nested = context.performAndWait {
                context.performAndWait { context.performAndWait { context.isOnQueue ? 42 : 0 } }
            }
            #expect(nested == 42)
            #expect(throws: Oops.self) {
                try context.performAndWait { () throws -> Int in
                    try context.performAndWait { throw Oops() }
                }
            }
            // Another context's queue is not this one's.
            let other = store.context("other")
            let crossed = other.performAndWait { (other.isOnQueue, context.isOnQueue) }
            #expect(crossed == (true, false))
        }
    }

    @Test("the queues a block lends end with it: after an inner performAndWait returns, its context is no longer usable from the outer block, nor any from outside")
    func aBlocksLentQueuesEndWithIt() throws {
        try withTestStore { store in
            let outer = store.context("outer")
            let inner = store.context("inner")
            let seen = outer.performAndWait { () -> (Bool, Bool, Bool) in
                let lent = inner.performAndWait { (outer.isOnQueue, inner.isOnQueue) }
                return (lent.0, lent.1, inner.isOnQueue)
            }
            #expect(seen == (true, true, false))
            #expect(!outer.isOnQueue && !inner.isOnQueue)
            // Lent twice over on one thread, then back to one, then none.
            let third = store.context("third")
            let nested = outer.performAndWait { () -> (Bool, Bool) in
                let deep = inner.performAndWait { third.performAndWait { outer.isOnQueue && inner.isOnQueue && third.isOnQueue } }
                return (deep, inner.isOnQueue || third.isOnQueue)
            }
            #expect(nested == (true, false))
        }
    }

    @Test("async perform returns and throws")
    func asyncPerform() async throws {
        struct Oops: Error {}
        try await withTestStore { store in
            let context = store.context("async")
            let value = try await context.perform { context.isOnQueue ? "on queue" : "off" }
            #expect(value == "on queue")
            await #expect(throws: Oops.self) { try await context.perform { () throws -> Int in throw Oops() } }
            let view = await store.objects.viewContext
            let onView = try await view.perform { view.isOnQueue }
            #expect(onView)
        }
    }

    @Test("bank transfers from many contexts on many threads: with the error policy and refresh-and-retry, no money and no transfer is lost", .timeLimit(.minutes(5)))
    func bankTransfers() async throws {
        let accountCount = 4
        let workers = 12
        let transfersPerWorker = 50
        let seed = UInt64.random(in: 0..<UInt64.max)
        print("bankTransfers seed: \(seed)")
        try await withTestStore { store in
            var accounts: [ObjectID] = []
            for index in 0..<accountCount {
                accounts.append(try store.seed("Account", ["owner": .string("a\(index)"), "balance": .int(1_000)]))
            }
            let ids = accounts
            // Each worker returns the transfers it saved: (from, to, amount).
            let results = try await withThrowingTaskGroup(of: ([(Int, Int, Int64)], Int).self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        let context = store.context("worker\(worker)")
                        return try await context.perform {
                            var random = SplitMix(seed: seed &+ UInt64(worker))
                            var done: [(Int, Int, Int64)] = []
                            var conflicts = 0
                            for _ in 0..<transfersPerWorker {
                                let from = Int(random.next() % UInt64(ids.count))
                                let to = (from + 1 + Int(random.next() % UInt64(ids.count - 1))) % ids.count
                                let amount = Int64(random.next() % 50) + 1
                                let source = try context.existingObject(with: ids[from])
                                let target = try context.existingObject(with: ids[to])
                                while true {
                                    source["balance"] = .int((source["balance", as: Int64.self] ?? 0) - amount)
                                    target["balance"] = .int((target["balance", as: Int64.self] ?? 0) + amount)
                                    do {
                                        try context.save()
                                        done.append((from, to, amount))
                                        break
                                    } catch is MergeError {
                                        conflicts += 1
                                        try context.refresh(source, mergeChanges: false)
                                        try context.refresh(target, mergeChanges: false)
                                    }
                                }
                            }
                            return (done, conflicts)
                        }
                    }
                }
                var all: [([(Int, Int, Int64)], Int)] = []
                for try await result in group { all.append(result) }
                return all
            }
            let transfers = results.flatMap(\.0)
            let conflicts = results.map(\.1).reduce(0, +)
            #expect(transfers.count == workers * transfersPerWorker, "every transfer eventually saved")
            var expected = [Int64](repeating: 1_000, count: accountCount)
            for (from, to, amount) in transfers {
                expected[from] -= amount
                expected[to] += amount
            }
            var balances: [Int64] = []
            for id in ids {
                guard case .int(let balance) = try store.committed(id)?.values.value(of: "balance") else {
                    Issue.record("missing balance")
                    return
                }
                balances.append(balance)
            }
            #expect(balances.reduce(0, +) == Int64(1_000 * accountCount), "money is conserved")
            #expect(balances == expected, "each account holds exactly its saved transfers")
            print("bankTransfers: \(transfers.count) transfers, \(conflicts) conflicts retried")
        }
    }

    @Test("a counter incremented from many contexts under addingDeltas over objectTrump counts every increment", .timeLimit(.minutes(5)))
    func countingWithDeltas() async throws {
        let workers = 10
        let increments = 60
        try await withTestStore { store in
            let counter = try store.seed("Counter", ["count": .int(0)])
            let rounds = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        let context = store.context("counter\(worker)", policy: .addingDeltas(for: ["count"], otherwise: .objectTrump))
                        return try await context.perform {
                            let object = try context.existingObject(with: counter)
                            var conflictRounds = 0
                            for step in 0..<increments {
                                object["count"] = .int((object["count", as: Int64.self] ?? 0) + 1)
                                object["label"] = .string("w\(worker)-\(step)")
                                // Under heavy contention a save may lose maxSaveAttempts races in a
                                // row; it then writes nothing and keeps its changes, so saving again
                                // must still count the increment exactly once.
                                while true {
                                    do {
                                        try context.save()
                                        conflictRounds += context.lastSaveReport?.conflicts.count ?? 0
                                        break
                                    } catch ContextError.tooManyConflictRetries {
                                        conflictRounds += context.lastSaveReport?.conflicts.count ?? 0
                                    }
                                }
                            }
                            return conflictRounds
                        }
                    }
                }
                var total = 0
                for try await rounds in group { total += rounds }
                return total
            }
            #expect(try store.committed(counter)?.values["count"] == .int(Int64(workers * increments)))
            print("countingWithDeltas: \(rounds) conflict rounds merged")
        }
    }

    @Test("contexts on the main queue and a private queue work side by side")
    func mainAndPrivate() async throws {
        try await withTestStore { store in
            let view = await store.objects.viewContext
            let editor = store.objects.newContext(name: "editor", concurrencyType: .mainQueue)
            let id = try await view.perform {
                let object = view.insert(entity: "Person")
                object["name"] = .string("Ann")
                object["age"] = .int(30)
                try view.save()
                return object.objectID
            }
            // Two main-queue contexts share the queue; each one's key is its own.
            let seen = try await editor.perform { (editor.isOnQueue, view.isOnQueue, try editor.existingObject(with: id)["age"]) }
            #expect(seen.0 && seen.1)
            #expect(seen.2 == .int(30))
        }
    }
}

/// A tiny seeded generator (SplitMix64), so a failing run can be replayed from its printed seed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
