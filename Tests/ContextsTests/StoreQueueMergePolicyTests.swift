import Dispatch
import Foundation
import KVEngine
import KeyValueQueue
import Locking
import Policies
import Testing

/// StoreQueue's merge policies: conflicts with writers outside the queue resolved key by key.
@Suite("StoreQueue merge policies")
struct StoreQueueMergePolicyTests {
    /// The committed string value of `key` in table "kv", nil when absent.
    func committed(_ key: String, _ store: Store) throws -> String? {
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        return try snapshot.get(key, in: "kv").map { String(decoding: $0.value, as: UTF8.self) }
    }

    func put(_ pairs: [(String, String?)], _ store: Store) throws {
        var batch = WriteBatch()
        for (key, value) in pairs {
            if let value { batch.put(value, forKey: key, in: "kv") } else { batch.delete(Array(key.utf8), in: "kv") }
        }
        try store.commit(batch)
    }

    /// Passes conflicts to `policy` and remembers every call's conflicts.
    struct Recording: ValueMergePolicy {
        let policy: any ValueMergePolicy
        let calls = ConditionLock<[[ValueConflict]]>([])
        var name: String { policy.name }
        func resolve(_ conflicts: [ValueConflict]) throws -> [ValueResolution] {
            calls.withLock { $0.append(conflicts) }
            return try policy.resolve(conflicts)
        }
    }

    /// One transaction meeting the four kinds of conflict at once, and a key without one:
    /// "both" changed on both sides, "read" only read here and changed outside, "deletedHere"
    /// deleted here and changed outside, "deletedThere" changed here and deleted outside, "new"
    /// written here alone. The outside writer commits between the reads and the commit.
    func runConflictingTransaction(_ policy: any ValueMergePolicy, _ store: Store) throws {
        try put([("both", "b0"), ("read", "r0"), ("deletedHere", "d0"), ("deletedThere", "e0")], store)
        let queue = StoreQueue(store: store, label: "policies", mergePolicy: policy)
        try queue.inTransaction { db, _ in
            _ = try db.string(forKey: "read", in: "kv")
            try db.put("b-ours", forKey: "both", in: "kv")
            try db.delete("deletedHere", in: "kv")
            try db.put("e-ours", forKey: "deletedThere", in: "kv")
            try db.put("n-ours", forKey: "new", in: "kv")
            try put([("both", "b-theirs"), ("read", "r-theirs"), ("deletedHere", "d-theirs"), ("deletedThere", nil)], store)
        }
    }

    @Test("each built-in resolves every kind of conflict as Docs/MergePolicies.md's table says; error keeps conditionFailed",
          arguments: [
              ("error", nil),
              ("storeTrump", ["b-theirs", "r-theirs", "d-theirs", nil, "n-ours"]),
              ("objectTrump", ["b-ours", "r-theirs", nil, "e-ours", "n-ours"]),
              ("overwrite", ["b-ours", "r0", nil, "e-ours", "n-ours"]),
              ("rollback", ["b-theirs", "r-theirs", "d-theirs", nil, "n-ours"]),
          ] as [(String, [String?]?)])
    func builtIns(name: String, expected: [String?]?) throws {
        try withTestStore { (test: TestStore) throws -> Void in
            let store = test.objects.store
            let policy = Recording(policy: try #require(WholeValuePolicy.named(name)))
            let keys = ["both", "read", "deletedHere", "deletedThere", "new"]
            if let expected {
                try runConflictingTransaction(policy, store)
                #expect(try keys.map { try committed($0, store) } == expected)
            } else {
                do {
                    try runConflictingTransaction(policy, store)
                    Issue.record("the error policy let a conflicting transaction commit")
                } catch KVError.conditionFailed(let failures) {
                    #expect(Set(failures.map { String(decoding: $0.key, as: UTF8.self) })
                        == ["both", "read", "deletedHere", "deletedThere"])
                }
                // Nothing of it written: the outside writer's state, and no "new".
                #expect(try keys.map { try committed($0, store) } == ["b-theirs", "r-theirs", "d-theirs", nil, nil])
            }
            // What the policy was shown: ancestor = the value read, ours, theirs.
            let calls = policy.calls.value
            #expect(calls.count == 1)
            let byKey = Dictionary(uniqueKeysWithValues: (calls.first ?? []).map { (String(decoding: $0.key, as: UTF8.self), $0) })
            let text = { (bytes: [UInt8]?) in bytes.map { String(decoding: $0, as: UTF8.self) } }
            #expect(byKey.keys.sorted() == ["both", "deletedHere", "deletedThere", "read"])
            #expect(byKey["both"].map { [text($0.ancestor), text($0.ours), text($0.theirs)] } == ["b0", "b-ours", "b-theirs"])
            #expect(byKey["read"].map { [text($0.ancestor), text($0.ours), text($0.theirs)] } == ["r0", "r0", "r-theirs"])
            #expect(byKey["read"]?.isWrittenHere == false)
            #expect(byKey["deletedHere"].map { [text($0.ancestor), text($0.ours), text($0.theirs)] } == ["d0", nil, "d-theirs"])
            #expect(byKey["deletedThere"].map { [text($0.ancestor), text($0.ours), text($0.theirs)] } == ["e0", "e-ours", nil])
            #expect(byKey["deletedThere"]?.theirsVersion == 0)
            #expect(byKey["both"]?.ancestorVersion == 1)
            #expect(byKey["both"]?.theirsVersion == 2)
        }
    }

    @Test("a transaction's own policy overrides the queue's; explicit conditions are never overridden")
    func perTransactionPolicyAndConditions() throws {
        try withTestStore { (test: TestStore) throws -> Void in
            let store = test.objects.store
            try put([("k", "0")], store)
            let queue = StoreQueue(store: store)
            try queue.inTransaction(mergePolicy: .objectTrump) { db, _ in
                try db.put("ours", forKey: "k", in: "kv")
                try put([("k", "theirs")], store)
            }
            #expect(try committed("k", store) == "ours")
            #expect(throws: KVError.self) {
                try queue.inTransaction(mergePolicy: .overwrite) { db, _ in
                    // Holds now (v3: "0", "theirs", "ours"); the outside writer then breaks it.
                    try db.put("guarded", forKey: "k", in: "kv", if: .version(3))
                    try put([("k", "moved")], store)
                }
            }
            #expect(try committed("k", store) == "moved")
        }
    }

    @Test("a transaction its policy leaves with nothing to write commits nothing")
    func nothingLeftToWrite() throws {
        try withTestStore { (test: TestStore) throws -> Void in
            let store = test.objects.store
            try put([("k", "0")], store)
            let queue = StoreQueue(store: store, mergePolicy: .rollback)
            let before = try store.stats().commitVersion
            try queue.inTransaction { db, _ in
                try db.put("ours", forKey: "k", in: "kv")
                try put([("k", "theirs")], store)
            }
            #expect(try committed("k", store) == "theirs")
            #expect(try store.stats().commitVersion == before + 1)   // the outside writer's commit only
        }
    }

    /// A counter kept as decimal text: theirs + (ours − ancestor), so no increment is lost.
    struct AddingDeltas: ValueMergePolicy {
        let calls = ConditionLock(0)
        var name: String { "addingDeltas" }
        func resolve(_ conflicts: [ValueConflict]) -> [ValueResolution] {
            calls.withLock { $0 += 1 }
            let number = { (bytes: [UInt8]?) in bytes.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0 }
            return conflicts.map { .merged(Array(String(number($0.theirs) + number($0.ours) - number($0.ancestor)).utf8)) }
        }
    }

    @Test("a merging policy keeps every delta of concurrent writers on several threads, each with its own queue",
          .timeLimit(.minutes(5)))
    func countersAddDeltasUnderConcurrentWriters() throws {
        let threads = 4, perThread = 200
        try withTestStore { (test: TestStore) throws -> Void in
            let store = test.objects.store
            let policy = AddingDeltas()
            let failures = ConditionLock<[String]>([])
            // All start together, so their transactions overlap (and collide) from the first.
            let ready = ConditionLock(0)
            let finished = DispatchGroup()
            for thread in 0..<threads {
                finished.enter()
                // Queues of their own: one queue would serialise the transactions, and there
                // would be nothing to merge.
                let queue = StoreQueue(store: store, label: "writer\(thread)", durability: .normal,
                                       mergePolicy: policy, maxCommitAttempts: 64)
                Thread {
                    defer { finished.leave() }
                    ready.withLock { $0 += 1 }
                    ready.broadcast()
                    ready.wait(until: { $0 == threads }) { _, _ in }
                    do {
                        for index in 0..<perThread {
                            try queue.inTransaction { db, _ in
                                let current = Int(try db.string(forKey: "counter", in: "kv") ?? "0")!
                                try db.put(String(current + index % 7 + 1), forKey: "counter", in: "kv")
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }.start()
            }
            finished.wait()
            #expect(failures.value.isEmpty)
            let expected = threads * (0..<perThread).reduce(0) { $0 + $1 % 7 + 1 }
            #expect(try committed("counter", store) == String(expected))
            // The writers did collide, so the sum above is the policy's doing.
            #expect(policy.calls.value > 0)
        }
    }

    /// Resolves with ours, but commits a change to every conflicting key first, as a writer
    /// that never lets up would: every retry conflicts again.
    struct Meddling: ValueMergePolicy {
        let store: Store
        let calls = ConditionLock(0)
        var name: String { "meddling" }
        func resolve(_ conflicts: [ValueConflict]) throws -> [ValueResolution] {
            let call = calls.withLock { count in
                count += 1
                return count
            }
            var batch = WriteBatch()
            for conflict in conflicts { batch.put(Array("meddled\(call)".utf8), forKey: conflict.key, in: conflict.table) }
            try store.commit(batch)
            return conflicts.map { _ in .ours }
        }
    }

    @Test("retries are bounded: a conflict on every attempt ends in TooManyConflictRetries, nothing written")
    func retriesExhausted() throws {
        try withTestStore { (test: TestStore) throws -> Void in
            let store = test.objects.store
            try put([("hot", "0")], store)
            let policy = Meddling(store: store)
            let queue = StoreQueue(store: store, mergePolicy: policy, maxCommitAttempts: 3)
            do {
                try queue.inTransaction { db, _ in
                    try db.put("ours", forKey: "hot", in: "kv")
                    try db.put("side", forKey: "cold", in: "kv")
                    try put([("hot", "outside")], store)
                }
                Issue.record("the transaction committed although every attempt conflicted")
            } catch let error as TooManyConflictRetries {
                #expect(error.attempts == 3)
                #expect(error.policyName == "meddling")
                #expect(error.conflicts.map(\.key) == [Array("hot".utf8)])
                #expect(error.description.contains("all 3 commit attempts"))
            }
            #expect(policy.calls.value == 3)
            #expect(try committed("hot", store) == "meddled3")
            #expect(try committed("cold", store) == nil)
        }
    }

    /// Answers one resolution too few.
    struct Short: ValueMergePolicy {
        var name: String { "short" }
        func resolve(_ conflicts: [ValueConflict]) -> [ValueResolution] { Array(conflicts.dropFirst().map { _ in .ours }) }
    }

    /// Deletes every conflicting key.
    struct DeletesAll: ValueMergePolicy {
        var name: String { "deletesAll" }
        func resolve(_ conflicts: [ValueConflict]) -> [ValueResolution] { conflicts.map { _ in .delete } }
    }

    @Test("a policy's .delete deletes; a wrong count of answers is a typed error and nothing is written")
    func deleteAndCountMismatch() throws {
        try withTestStore { (test: TestStore) throws -> Void in
            let store = test.objects.store
            try put([("k", "0")], store)
            let queue = StoreQueue(store: store)
            try queue.inTransaction(mergePolicy: DeletesAll()) { db, _ in
                try db.put("ours", forKey: "k", in: "kv")
                try put([("k", "theirs")], store)
            }
            #expect(try committed("k", store) == nil)
            #expect(throws: ResolutionCountMismatch.self) {
                try queue.inTransaction(mergePolicy: Short()) { db, _ in
                    try db.put("ours", forKey: "k", in: "kv")
                    try db.put("side", forKey: "other", in: "kv")
                    try put([("k", "theirs again")], store)
                }
            }
            #expect(try committed("k", store) == "theirs again")
            #expect(try committed("other", store) == nil)
        }
    }
}
