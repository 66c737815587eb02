import CairnTestSupport
import Foundation
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Isolation, checked on a recorded history (the in-process version of Jepsen's Elle).
///
/// Threads run random transactions against a few hot keys while the applier and log
/// rotation are busy: take a snapshot, read some keys (record version and value), then
/// commit conditional puts, deletes and checks based on what was read. Every value written
/// is unique, so a read names the commit that wrote it. The checker then proves:
/// - commit versions are distinct and contiguous: one serial order;
/// - replayed in that order, every condition of every committed transaction held (no lost
///   update), every record version the commit returned is the one the order implies
///   (versions continue across deletes), and the store ends in the replayed state;
/// - every read equals the latest commit at or below its snapshot's version (snapshot
///   isolation: no read of an uncommitted, aborted or later value; repeatable reads);
/// - a snapshot taken after a commit was acknowledged (on any thread) sees it;
/// - every condition failure is justified: a commit after the snapshot changed that key.
///
/// Sizes: CAIRN_HISTORY_THREADS × CAIRN_HISTORY_TRANSACTIONS. Replay: CAIRN_HISTORY_SEED
/// (thread interleavings differ run to run; the seed fixes each thread's choices).
@Suite(.serialized) struct HistoryCheckTests {
    struct Read: Sendable {
        var key: String
        var version: UInt64
        var value: String?
    }

    enum Operation: Sendable {
        case put(key: String, value: String, condition: Condition)
        case delete(key: String, condition: Condition)
        case check(key: String, condition: Condition)

        var key: String {
            switch self {
            case .put(let key, _, _), .delete(let key, _), .check(let key, _): return key
            }
        }
    }

    enum Outcome: Sendable {
        case readOnly
        case committed(CommitInfo)
        case aborted([FailedCondition])
    }

    struct Transaction: Sendable {
        var thread: Int
        var started: Double
        var finished: Double
        var snapshot: UInt64
        var reads: [Read]
        var operations: [Operation]
        var outcome: Outcome
    }

    static let table = "h"

    @Test(.timeLimit(.minutes(20)))
    func historiesAreSerialAndReadsAreSnapshotIsolated() throws {
        let threads = Reliability.size("HISTORY_THREADS", short: 6, torture: 8)
        let perThread = Reliability.size("HISTORY_TRANSACTIONS", short: 150, torture: 3000)
        let seed = Reliability.seed("HISTORY")
        Reliability.report("history", "\(threads) threads × \(perThread) transactions, seed \(seed) (replay: CAIRN_HISTORY_SEED=\(seed))")
        let directory = try TemporaryDirectory(prefix: "cairn-history")
        defer { directory.remove() }
        var options = Store.Options()
        options.applyInterval = 0.001
        options.applyThreshold = 2048
        options.segmentSize = 16 << 10
        options.mapSize = 64 << 20
        options.durability = .normal
        let store = try Store(directory: directory.path, options: options)
        defer { store.close() }
        let keys = (0..<10).map { "key\($0)" }
        let history = ConditionLock<[Transaction]>([])
        let failures = ConditionLock<[String]>([])
        runThreads(threads) { thread in
            var random = SeededRandom(seed: seed &+ UInt64(thread) &* 0x9E37_79B9_7F4A_7C15)
            var mine: [Transaction] = []
            for number in 0..<perThread {
                do {
                    mine.append(try Self.transaction(store, thread: thread, number: number, keys: keys, random: &random))
                } catch {
                    failures.withLock { $0.append("thread \(thread) transaction \(number): \(error)") }
                    break
                }
            }
            history.withLock { $0 += mine }
        }
        for failure in failures.withLock({ $0 }).prefix(5) { Issue.record("seed \(seed): \(failure)") }
        let final = try store.snapshot()
        var finalState: [String: (version: UInt64, value: String)] = [:]
        try final.forEach(in: Self.table) { key, value, version in
            finalState[String(decoding: key, as: UTF8.self)] = (version, String(decoding: value, as: UTF8.self))
            return true
        }
        final.close()
        let transactions = history.withLock { $0 }
        let problems = Self.check(transactions, finalState: finalState)
        for problem in problems.prefix(20) { Issue.record("seed \(seed): \(problem)") }
        var outcomes = OutcomeCounts()
        for transaction in transactions {
            switch transaction.outcome {
            case .readOnly: outcomes.add("read-only")
            case .committed: outcomes.add("committed")
            case .aborted: outcomes.add("aborted by a condition")
            }
        }
        Reliability.report("history", "\(transactions.count) transactions, \(transactions.reduce(0) { $0 + $1.reads.count }) reads checked, seed \(seed): \(outcomes); problems \(problems.count)")
    }

    /// One random transaction: read at a snapshot, then conditional writes based on it.
    static func transaction(_ store: Store, thread: Int, number: Int, keys: [String],
                            random: inout SeededRandom) throws -> Transaction {
        let started = monotonicNow()
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        var reads: [Read] = []
        var chosen = Set<String>()
        for _ in 0..<random.int(in: 1...4) { chosen.insert(random.pick(keys)) }
        for key in chosen.sorted() {
            let record = try snapshot.get(key, in: table)
            reads.append(Read(key: key, version: record?.version ?? 0, value: record.map { String(decoding: $0.value, as: UTF8.self) }))
        }
        var operations: [Operation] = []
        var batch = WriteBatch()
        if !random.chance(1, in: 4) {
            for read in reads where random.chance(2, in: 3) {
                let condition: Condition = read.value == nil ? .absent : .version(read.version)
                if read.value != nil && random.chance(1, in: 6) {
                    operations.append(.delete(key: read.key, condition: condition))
                    batch.delete(read.key, in: table, if: condition)
                } else if random.chance(1, in: 6) {
                    operations.append(.check(key: read.key, condition: condition))
                    batch.require(condition, forKey: Array(read.key.utf8), in: table)
                } else {
                    let value = "t\(thread)-\(number)-\(read.key)"
                    operations.append(.put(key: read.key, value: value, condition: condition))
                    batch.put(value, forKey: read.key, in: table, if: condition)
                }
            }
        }
        var outcome = Outcome.readOnly
        if !operations.isEmpty {
            let durability: Durability = random.chance(1, in: 8) ? .full : .normal
            do {
                outcome = .committed(try store.commit(batch, durability: durability))
            } catch {
                guard case .conditionFailed(let failed) = error else { throw error }
                outcome = .aborted(failed)
            }
            // Repeatable read: the snapshot still answers as before the commit.
            if let read = reads.first {
                let again = try snapshot.get(read.key, in: table)
                if again?.version ?? 0 != read.version || again.map({ String(decoding: $0.value, as: UTF8.self) }) != read.value {
                    reads.append(Read(key: read.key, version: again?.version ?? 0,
                                      value: again.map { String(decoding: $0.value, as: UTF8.self) }))
                }
            }
        }
        return Transaction(thread: thread, started: started, finished: monotonicNow(), snapshot: snapshot.version,
                           reads: reads, operations: operations, outcome: outcome)
    }

    /// Checks a history; returns every anomaly found.
    static func check(_ transactions: [Transaction], finalState: [String: (version: UInt64, value: String)]) -> [String] {
        var problems: [String] = []
        // A batch of checks only writes nothing: it gets no version of its own, it reports
        // the version it was checked at.
        let isCheckOnly = { (transaction: Transaction) in
            transaction.operations.allSatisfy { if case .check = $0 { return true } else { return false } }
        }
        let allCommitted = transactions.compactMap { transaction -> (Transaction, CommitInfo)? in
            if case .committed(let info) = transaction.outcome { return (transaction, info) }
            return nil
        }
        let committed = allCommitted.filter { !isCheckOnly($0.0) }.sorted { $0.1.version < $1.1.version }
        let checkOnly = allCommitted.filter { isCheckOnly($0.0) }

        // One serial order: versions 1…n, each once.
        for (index, entry) in committed.enumerated() where entry.1.version != UInt64(index + 1) {
            problems.append("commit versions are not contiguous: position \(index) has version \(entry.1.version)")
            break
        }

        // Replay in commit order.
        struct KeyState { var live = false; var version: UInt64 = 0; var value: String? = nil }
        var state: [String: KeyState] = [:]
        // Per key: (commit version, live, record version, value) after each commit that touched it.
        var timeline: [String: [(commit: UInt64, version: UInt64, value: String?)]] = [:]
        for (transaction, info) in committed {
            guard info.recordVersions.count == transaction.operations.count else {
                problems.append("commit \(info.version) returned \(info.recordVersions.count) versions for \(transaction.operations.count) operations")
                continue
            }
            var touched = Set<String>()
            for (operation, returned) in zip(transaction.operations, info.recordVersions) {
                var current = state[operation.key, default: KeyState()]
                let condition: Condition
                switch operation {
                case .put(_, _, let required), .delete(_, let required), .check(_, let required): condition = required
                }
                let holds: Bool
                switch condition {
                case .absent: holds = !current.live
                case .version(let expected): holds = current.live && current.version == expected
                }
                if !holds {
                    problems.append("lost update: commit \(info.version) required \(condition) of \(operation.key), but the serial order has it \(current.live ? "at version \(current.version)" : "absent")")
                }
                switch operation {
                case .put(let key, let value, _):
                    current.version += 1
                    current.live = true
                    current.value = value
                    if returned != current.version {
                        problems.append("commit \(info.version) put \(key) at record version \(returned), the serial order says \(current.version)")
                    }
                case .delete(let key, _):
                    current.live = false
                    current.value = nil
                    if returned != 0 { problems.append("commit \(info.version) deleted \(key) but returned version \(returned)") }
                case .check(let key, _):
                    if returned != (current.live ? current.version : 0) {
                        problems.append("commit \(info.version) checked \(key) at \(returned), the serial order says \(current.version)")
                    }
                }
                state[operation.key] = current
                touched.insert(operation.key)
            }
            for key in touched {
                let current = state[key]!
                timeline[key, default: []].append((info.version, current.live ? current.version : 0, current.value))
            }
        }

        // A check-only batch's conditions held at the version it reports.
        for (transaction, info) in checkOnly {
            for (operation, returned) in zip(transaction.operations, info.recordVersions) {
                guard case .check(let key, let condition) = operation else { continue }
                let entry = timeline[key]?.last { $0.commit <= info.version }
                let version = entry?.version ?? 0
                let holds: Bool
                switch condition {
                case .absent: holds = version == 0
                case .version(let expected): holds = version == expected
                }
                if !holds || returned != version {
                    problems.append("check-only batch at version \(info.version) passed \(condition) of \(key), which was at version \(version) then (it returned \(returned))")
                }
            }
        }

        // Every read equals the latest commit at or below its snapshot.
        let lastVersion = committed.last?.1.version ?? 0
        for transaction in transactions {
            if transaction.snapshot > lastVersion {
                problems.append("thread \(transaction.thread) read at snapshot \(transaction.snapshot), beyond the last commit \(lastVersion)")
            }
            for read in transaction.reads {
                let entry = timeline[read.key]?.last { $0.commit <= transaction.snapshot }
                let expectedVersion = entry?.version ?? 0, expectedValue = entry?.value
                if read.version != expectedVersion || read.value != expectedValue {
                    problems.append("thread \(transaction.thread) read \(read.key) at snapshot \(transaction.snapshot) as version \(read.version) \(read.value ?? "absent"), but commit \(entry?.commit ?? 0) left version \(expectedVersion) \(expectedValue ?? "absent")")
                }
            }
            // Every condition failure names a key that a commit after the snapshot changed.
            if case .aborted(let failed) = transaction.outcome {
                for failure in failed {
                    let key = String(decoding: failure.key, as: UTF8.self)
                    let changedLater = timeline[key]?.contains { $0.commit > transaction.snapshot } ?? false
                    if !changedLater {
                        problems.append("thread \(transaction.thread): spurious conflict on \(key): nothing committed it after snapshot \(transaction.snapshot)")
                    }
                }
            }
        }

        // A snapshot begun after a commit was acknowledged sees it.
        let acknowledged = committed.map { (finished: $0.0.finished, version: $0.1.version) }.sorted { $0.finished < $1.finished }
        var prefixMax: [UInt64] = []
        for entry in acknowledged { prefixMax.append(max(prefixMax.last ?? 0, entry.version)) }
        for transaction in transactions {
            // The commits acknowledged before this transaction began.
            var low = 0, high = acknowledged.count
            while low < high {
                let middle = (low + high) / 2
                if acknowledged[middle].finished < transaction.started { low = middle + 1 } else { high = middle }
            }
            if low > 0 && transaction.snapshot < prefixMax[low - 1] {
                problems.append("thread \(transaction.thread)'s snapshot \(transaction.snapshot) misses commit \(prefixMax[low - 1]), acknowledged before it began")
            }
        }

        // The store ends where the replay does.
        for (key, current) in state where current.live {
            if finalState[key]?.version != current.version || finalState[key]?.value != current.value {
                problems.append("final state of \(key) is \(String(describing: finalState[key])), the replay says version \(current.version) \(current.value ?? "")")
            }
        }
        for key in finalState.keys where state[key]?.live != true {
            problems.append("final state has \(key), which the replay deleted or never wrote")
        }
        return problems
    }
}
