import CairnTestSupport
import Contexts
import Foundation
import KVEngine
import Policies
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The kill -9 loop: rounds of `KillWorker` on one store, each SIGKILLed at a random moment
/// (sometimes while it is still opening and recovering, often during a checkpoint or with
/// commits waiting for the applier). After each round the store is reopened and checked:
/// - `Store.check` finds it sound;
/// - every acknowledged batch is present whole, every acknowledged delete absent, no batch
///   is partly there, every value is the one written;
/// - every counter's value equals its record version, which is at least the acknowledged one;
/// - every object group is whole, its objects' `writes` equal their record version, at least
///   the acknowledged one, their payload the one written;
/// - the Item indexes (`group`, `writes,size`) hold exactly one entry per record
///   (`indexProblems()`), and a fetch by group through its index finds what the scan finds;
/// - the lossless tally holds every acknowledged increment (and no more than were begun).
///
/// A process crash loses nothing from the page cache, so acknowledged `.normal` commits must
/// survive too. Size: CAIRN_KILL_ROUNDS; replay: CAIRN_KILL_SEED (rounds depend on one another).
@Suite(.serialized) struct KillLoopTests {
    @Test(.timeLimit(.minutes(40)))
    func everyAcknowledgedCommitAndSaveSurvivesSIGKILL() throws {
        signal(SIGPIPE, SIG_IGN)
        let rounds = Reliability.size("KILL_ROUNDS", short: 5, torture: 200)
        let seed = Reliability.seed("KILL")
        Reliability.report("kill-9", "\(rounds) rounds, seed \(seed) (replay: CAIRN_KILL_SEED=\(seed) CAIRN_KILL_ROUNDS=\(rounds))")
        let directory = try TemporaryDirectory(prefix: "cairn-kill")
        defer { directory.remove() }
        let storePath = directory.path + "/store"
        try Self.createStore(storePath)

        var oracle = KillOracle()
        var figures = OutcomeCounts()
        for round in 0..<rounds {
            let roundSeed = Reliability.caseSeed(seed, round)
            var random = SeededRandom(seed: roundSeed)
            let acksPath = directory.path + "/acks-\(round)", outputPath = directory.path + "/output-\(round)"
            let process = try ChildProcess.start(
                role: KillWorker.role,
                arguments: ["STORE": storePath, "ACKS": acksPath, "ROUND": "\(round)", "SEED": "\(roundSeed)"],
                outputPath: outputPath)
            if random.chance(1, in: 6) {
                // Early: the child may still be starting, opening or replaying the log.
                usleep(UInt32(random.int(60_000)))
                figures.add("killed early")
            } else {
                let deadline = monotonicNow() + 60
                while !ChildProcess.completeLines(acksPath).contains(where: { $0.hasPrefix("ready") || $0.hasPrefix("err") }),
                      process.isRunning, monotonicNow() < deadline {
                    usleep(2_000)
                }
                usleep(UInt32(random.int(in: 30_000...600_000)))
            }
            let ending = ChildProcess.kill9(process)
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            #expect(ending == .signaled(SIGKILL), "round \(round) (seed \(seed)): the worker \(ending) before the kill; output: \(output.suffix(3000))")
            if let sanitizer = ChildProcess.sanitizerReport(outputPath) {
                Issue.record("round \(round) (seed \(seed)): the worker reported \(sanitizer)")
            }
            let lines = ChildProcess.completeLines(acksPath)
            if !lines.contains(where: { $0.hasPrefix("ready") }) { figures.add("killed before the store finished opening") }
            let roundFigures = oracle.absorb(lines)
            for problem in oracle.takeProblems() { Issue.record("round \(round) (seed \(seed)): worker said: \(problem)") }
            figures.add("acknowledged operations", roundFigures.acknowledged)
            if roundFigures.killedInCheckpoint { figures.add("killed during a checkpoint") }

            let problems = try Self.verify(storePath: storePath, oracle: oracle, figures: &figures)
            for problem in problems.prefix(20) { Issue.record("round \(round) (seed \(seed)): \(problem)") }
            if !problems.isEmpty { break }
            unlink(acksPath)
            unlink(outputPath)
        }
        Reliability.report("kill-9", "\(rounds) rounds, seed \(seed): \(figures)")
        Reliability.report("kill-9", "acknowledged so far: \(oracle.summary)")
        #expect(figures["acknowledged operations"] > 0, "no round acknowledged anything: the loop exercised nothing")
    }

    /// Creates the store with the two tallies the savers increment.
    static func createStore(_ path: String) throws {
        let objects = try ObjectStore(directory: path, schema: TortureModel.schema)
        defer { objects.close() }
        let context = objects.newBackgroundContext(name: "setup")
        try context.performAndWait {
            for (key, label) in [(UInt64(1), "lossless"), (2, "lossy")] {
                let tally = context.insert(entity: "Tally", primaryKey: key)
                tally["count"] = .int(0)
                tally["label"] = .string(label)
            }
            try context.save()
        }
    }

    /// Reopens the store and checks everything the oracle knows; returns the problems.
    static func verify(storePath: String, oracle: KillOracle, figures: inout OutcomeCounts) throws -> [String] {
        var problems: [String] = []
        let store = try Store(directory: storePath)
        let recovery = store.recoveryReport
        if recovery.replayedCommits > 0 { figures.add("rounds that replayed commits") }
        figures.add("commits replayed", recovery.replayedCommits)
        if recovery.tornTail != nil { figures.add("torn tails cut") }
        if let cut = recovery.corruptionCut { problems.append("recovery cut corruption: \(cut)") }

        let snapshot = try store.snapshot()
        // Batches: whole, with their values; acknowledged ones present, deleted ones absent.
        var seen: [String: (members: Set<Int>, size: Int)] = [:]
        try snapshot.forEach(in: "batches") { key, value, version in
            let keyText = String(decoding: key, as: UTF8.self)
            let parts = keyText.split(separator: "/")
            guard parts.count == 5, let member = Int(parts[4]), let parsed = TortureModel.parseBatchValue(value),
                  parsed.group == parts[1...3].joined(separator: "/") else {
                problems.append("batch key \(keyText) holds a value that was never written")
                return true
            }
            if version != 1 { problems.append("batch key \(keyText) has record version \(version), 1 expected") }
            seen[parsed.group, default: ([], parsed.size)].members.insert(member)
            return true
        }
        for (group, found) in seen where found.members != Set(0..<found.size) {
            problems.append("batch \(group) is partly present: members \(found.members.sorted()) of \(found.size)")
        }
        for (group, batch) in oracle.batches {
            if batch.deleted {
                if seen[group] != nil { problems.append("batch \(group) was deleted (acknowledged) but is present") }
            } else if !batch.deleteBegun && seen[group] == nil {
                problems.append("acknowledged batch \(group) (commit \(batch.version)) is missing")
            }
        }
        figures.add("batch checks", seen.count)

        // Counters: value equals record version, at least the acknowledged version.
        var counters: [Int: UInt64] = [:]
        try snapshot.forEach(in: "counters") { key, value, version in
            let name = String(decoding: key, as: UTF8.self)
            if String(decoding: value, as: UTF8.self) != String(version) {
                problems.append("counter \(name) has value \(String(decoding: value, as: UTF8.self)) at record version \(version)")
            }
            if let number = Int(name.dropFirst(2)) { counters[number] = version }
            return true
        }
        for (counter, acknowledged) in oracle.counters where counters[counter, default: 0] < acknowledged {
            problems.append("counter c/\(counter) is at version \(counters[counter, default: 0]), \(acknowledged) was acknowledged")
        }
        snapshot.close()

        // Objects.
        let objects = try ObjectStore(store: store, schema: TortureModel.schema)
        // Index entries were written in the commits of their records: recovery keeps both or neither.
        for problem in try objects.indexProblems() { problems.append("after recovery: \(problem)") }
        let context = objects.newBackgroundContext(name: "checker")
        try context.performAndWait {
            var groups: [String: [(id: ObjectID, size: Int, writes: Int, version: UInt64, payloadOK: Bool)]] = [:]
            for item in try context.fetch(FetchRequest(entityName: "Item")) {
                let group = item["group", as: String.self] ?? "?"
                let writes = item["writes", as: Int.self] ?? -1
                let payloadOK = item["payload", as: String.self] == TortureModel.payload(group: group, writes: writes)
                groups[group, default: []].append((item.objectID, item["size", as: Int.self] ?? -1, writes,
                                                   item.committedVersion, payloadOK))
            }
            // What the checks need is copied out: with every item held, each count below also
            // scanned all of them for unsaved matches (quadratic at torture size).
            context.reset()
            for (group, members) in groups {
                let size = members[0].size
                if members.count != size || members.contains(where: { $0.size != size }) {
                    problems.append("object group \(group) is partly present: \(members.count) of \(size)")
                }
                if Set(members.map(\.writes)).count != 1 {
                    problems.append("object group \(group) was partly updated: writes \(members.map(\.writes))")
                }
                for member in members {
                    if UInt64(member.writes) != member.version {
                        problems.append("\(member.id) has writes \(member.writes) at record version \(member.version)")
                    }
                    if !member.payloadOK { problems.append("\(member.id) has a payload that was never written") }
                }
            }
            for (group, expected) in oracle.groups {
                let found = groups[group]
                if expected.deleted {
                    if found != nil { problems.append("object group \(group) was deleted (acknowledged) but is present") }
                    continue
                }
                let viaIndex = try context.count(for: FetchRequest(entityName: "Item", predicate: .compare("group", .equal, .string(group))))
                if viaIndex != found?.count ?? 0 {
                    problems.append("object group \(group): the group index finds \(viaIndex), the scan \(found?.count ?? 0)")
                }
                guard let found else {
                    if !expected.deleteBegun { problems.append("acknowledged object group \(group) is missing") }
                    continue
                }
                if Set(found.map { $0.id.primaryKey ?? 0 }) != Set(expected.keys) {
                    problems.append("object group \(group) has keys \(found.map { $0.id.primaryKey ?? 0 }), acknowledged \(expected.keys)")
                }
                let writes = found[0].writes
                if writes < expected.writes || writes > expected.writes + 1 {
                    problems.append("object group \(group) has writes \(writes), acknowledged \(expected.writes)")
                }
            }
            figures.add("object group checks", groups.count)
            let lossless = try context.existingObject(with: TortureModel.losslessTally)["count", as: Int.self] ?? -1
            if lossless < oracle.tallyAcknowledged[1, default: 0] || lossless > oracle.tallyBegun[1, default: 0] {
                problems.append("lossless tally is \(lossless): \(oracle.tallyAcknowledged[1, default: 0]) increments acknowledged, \(oracle.tallyBegun[1, default: 0]) begun")
            }
            let lossy = try context.existingObject(with: TortureModel.lossyTally)["count", as: Int.self] ?? -1
            if lossy < 0 || lossy > oracle.tallyBegun[2, default: 0] {
                problems.append("lossy tally is \(lossy), only \(oracle.tallyBegun[2, default: 0]) increments were begun")
            }
        }
        store.close()
        let check = try Store.check(directory: storePath)
        if !check.isSound { problems.append("check found \(check.problems.prefix(5))") }
        return problems
    }
}

/// What the workers acknowledged, across rounds.
struct KillOracle {
    struct Batch {
        var size: Int
        var version: UInt64
        var deleteBegun = false
        var deleted = false
    }

    struct Group {
        var keys: [UInt64]
        var writes = 1
        var deleteBegun = false
        var deleted = false
    }

    var batches: [String: Batch] = [:]
    var counters: [Int: UInt64] = [:]
    var groups: [String: Group] = [:]
    var tallyAcknowledged: [Int: Int] = [:]
    var tallyBegun: [Int: Int] = [:]
    private var problems: [String] = []

    var summary: String {
        "\(batches.count) batches (\(batches.values.filter(\.deleted).count) deleted), \(counters.count) counters, "
            + "\(groups.count) object groups (\(groups.values.filter(\.deleted).count) deleted), "
            + "lossless tally \(tallyAcknowledged[1, default: 0]) increments, lossy tally \(tallyAcknowledged[2, default: 0])"
    }

    mutating func takeProblems() -> [String] {
        defer { problems.removeAll() }
        return problems
    }

    /// Takes in one round's lines.
    mutating func absorb(_ lines: [String]) -> (acknowledged: Int, killedInCheckpoint: Bool) {
        var acknowledged = 0
        var inCheckpoint = false
        for line in lines {
            let fields = line.split(separator: " ").map(String.init)
            guard let kind = fields.first else { continue }
            switch kind {
            case "B" where fields.count == 6:
                batches["\(fields[1])/\(fields[2])/\(fields[3])"] = Batch(size: Int(fields[4]) ?? 0, version: UInt64(fields[5]) ?? 0)
                acknowledged += 1
            case "bD" where fields.count == 4:
                batches["\(fields[1])/\(fields[2])/\(fields[3])"]?.deleteBegun = true
            case "D" where fields.count == 4:
                batches["\(fields[1])/\(fields[2])/\(fields[3])"]?.deleted = true
                acknowledged += 1
            case "C" where fields.count == 3:
                if let counter = Int(fields[1]), let version = UInt64(fields[2]) {
                    counters[counter] = max(counters[counter, default: 0], version)
                }
                acknowledged += 1
            case "I" where fields.count == 4:
                groups[fields[1]] = Group(keys: fields[3].split(separator: ",").compactMap { UInt64($0) })
                acknowledged += 1
            case "U" where fields.count == 3:
                if let writes = Int(fields[2]) { groups[fields[1]]?.writes = writes }
                acknowledged += 1
            case "bX" where fields.count == 2:
                groups[fields[1]]?.deleteBegun = true
            case "X" where fields.count == 2:
                groups[fields[1]]?.deleted = true
                acknowledged += 1
            case "bT" where fields.count == 2:
                tallyBegun[Int(fields[1]) ?? 0, default: 0] += 1
            case "T" where fields.count == 2:
                tallyAcknowledged[Int(fields[1]) ?? 0, default: 0] += 1
                acknowledged += 1
            case "bK":
                inCheckpoint = true
            case "K":
                inCheckpoint = false
            case "err", "bad":
                problems.append(line)
            default:
                continue
            }
        }
        return (acknowledged, inCheckpoint)
    }
}
