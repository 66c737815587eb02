import Foundation
import KVEngine
import Locking
import Policies
import ScenarioFormat

/// `cairn demo`: group commit, snapshot isolation and recovery, shown on a scratch store, then
/// one conflict under every merge policy.
enum DemoCommand {
    static let command = Command(
        name: "demo",
        summary: "Show group commit, snapshot isolation, crash recovery and merge policies on scratch stores.",
        arguments: [],
        options: [.value("dir", "D", "Use the store in directory D and keep it (default: a temporary directory, removed afterwards).")],
        discussion: """
            Eight writer threads make about 5,000 single-record commits with full durability.
            While they run, a snapshot reads the same key twice and gets the same answer.
            Then the demo reports commits per second and fdatasync calls per commit, makes
            1,000 more commits that only the log holds, stops the store as a crash would,
            reopens it, and prints what recovery replayed and the store's stats.
            Last, two contexts edit the same person (one property each, and one property
            both), the second save conflicts, and the outcome is shown under every built-in
            merge policy: the same run as 'cairn scenario', each policy on a fresh store.
            """,
        run: run
    )

    static let writerCount = 8
    static let commitsPerWriter = 625
    /// Every `watchedEvery`-th commit of each writer overwrites `watchedKey`.
    static let watchedEvery = 10
    static let watchedKey = "demo/watched"

    /// What the writers have done, shared with the main thread.
    private struct Progress {
        var commits = 0
        var latestVersion: UInt64 = 0
        var finishedWriters = 0
        var failure: KVError?
    }

    @Sendable private static func run(_ arguments: Arguments) throws -> ExitStatus {
        let directory: String
        let isTemporary: Bool
        if let chosen = arguments.value("dir") {
            directory = chosen
            isTemporary = false
        } else {
            directory = try makeTemporaryDirectory()
            isTemporary = true
        }
        defer { if isTemporary { try? FileManager.default.removeItem(atPath: directory) } }

        let out = StandardStream.output
        out.write("Cairn demo\n==========\n")
        out.write("Store: \(directory)\(isTemporary ? " (temporary, removed at the end; --dir D keeps one)" : "")\n")

        var store = try StoreAccess.openOrCreate(directory)
        defer { store.close() }
        var seed = WriteBatch()
        seed.put("initial", forKey: watchedKey)
        try store.commit(seed, durability: .full)
        let before = try store.stats()

        // 1. Writers.
        let total = writerCount * commitsPerWriter
        section("1. Concurrent durable commits")
        out.write("""
            \(writerCount) writer threads each make \(commitsPerWriter) single-record commits with full durability:
            a commit returns only once it is fdatasync'd. Every \(watchedEvery)th commit of each
            writer overwrites the key "\(watchedKey)"; the others write keys of their own.

            """)
        let progress = ConditionLock(Progress())
        let started = ContinuousClock.now
        let writers = ThreadGroup(count: writerCount) { [store] writer in
            defer {
                progress.withLock { $0.finishedWriters += 1 }
                progress.broadcast()
            }
            for index in 0..<commitsPerWriter {
                var batch = WriteBatch()
                if index % watchedEvery == 0 {
                    batch.put("written by writer \(writer), commit \(index)", forKey: watchedKey)
                } else {
                    batch.put("value \(writer)-\(index)", forKey: "demo/writer-\(writer)/\(index)")
                }
                do throws(KVError) {
                    let info = try store.commit(batch, durability: .full)
                    progress.withLock { state in
                        state.commits += 1
                        state.latestVersion = max(state.latestVersion, info.version)
                    }
                    progress.broadcast()
                } catch {
                    progress.withLock { if $0.failure == nil { $0.failure = error } }
                    return
                }
            }
        }

        // 2. A snapshot taken mid-way keeps reading at its version.
        func waitForCommits(_ count: Int) -> Progress {
            progress.wait(until: { $0.commits >= count || $0.finishedWriters == writerCount }) { state, _ in state }
        }
        let early = waitForCommits(total / 5)
        let snapshot = try store.snapshot()
        let first = try snapshot.get(watchedKey)
        let late = waitForCommits(total * 3 / 5)
        let second = try snapshot.get(watchedKey)
        let fresh = try store.snapshot()
        let latest = try fresh.get(watchedKey)
        section("2. A snapshot keeps its version")
        out.write("""
            Snapshot taken at commit version \(snapshot.version), after \(early.commits) of the \(total) commits.
              first read of "\(watchedKey)":   \(describe(first))
            \(late.commits - early.commits) more commits landed (latest commit version \(late.latestVersion)).
              second read, same snapshot:   \(describe(second))
              read from a new snapshot at version \(fresh.version):   \(describe(latest))

            """)
        fresh.close()
        snapshot.close()
        let isolated = first == second
        out.write(isolated
            ? "The snapshot's two reads agree: commits after its version are invisible to it.\n"
            : "ERROR: the snapshot's two reads differ; snapshot isolation is broken.\n")

        writers.join()
        let elapsed = ContinuousClock.now - started
        if let failure = progress.withLock({ $0.failure }) { throw failure }
        let finalSnapshot = try store.snapshot()
        var lastWritten = try finalSnapshot.get(watchedKey)
        finalSnapshot.close()

        // 3. Group commit.
        let after = try store.stats()
        let commits = progress.withLock { $0.commits }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let syncs = after.logSyncs - before.logSyncs
        let appends = after.logAppends - before.logAppends
        section("3. Group commit")
        out.write(Figures([
            ("commits", "\(commits) in \(format(seconds, digits: 2)) s, \(format(Double(commits) / seconds, digits: 0)) commits/s"),
            ("fdatasync calls", "\(syncs): \(format(Double(syncs) / Double(commits), digits: 3)) per commit, \(format(Double(commits) / Double(max(syncs, 1)), digits: 1)) commits share each"),
            ("log appends", "\(appends): \(format(Double(commits) / Double(max(appends, 1)), digits: 1)) commits per group append"),
        ]).text)
        out.write("""
            Concurrent commits queue behind a leader that appends them to the log with one
            write and makes them durable with one fdatasync, so each writer still gets a
            durable commit while the disk sees far fewer syncs than commits.

            """)

        // 4. Crash and recovery: commits that only the log holds are replayed on open.
        store.close()
        var holdBack = Store.Options()
        holdBack.applyThreshold = Int.max
        holdBack.applyInterval = 3600
        store = try Store(directory: directory, options: holdBack)
        let crashCommits = 1_000
        for index in 0..<crashCommits {
            var batch = WriteBatch()
            batch.put("after-crash-\(index)", forKey: watchedKey)
            let info = try store.commit(batch, durability: .full)
            lastWritten = Record(key: Array(watchedKey.utf8), value: Array("after-crash-\(index)".utf8),
                                 version: info.recordVersions[0])
        }
        // Stopped the way kill -9 would stop it: no flush, no final sync, files just closed.
        store.simulateCrash()
        store = try Store(directory: directory)
        let recovery = store.recoveryReport
        section("4. Crash and recovery")
        out.write("""
            The store was reopened with its background applier held back, took \(crashCommits) more durable
            commits (only the log held them), and was stopped the way a crash stops it: nothing
            flushed, nothing synced at close. Opening it again replays the log into LMDB.

            """)
        out.write(Figures([
            ("replayed commits", "\(recovery.replayedCommits) (\(byteCount(recovery.replayedBytes)))"),
            ("version after open", "\(recovery.lastVersion)"),
            ("torn tail cut", recovery.tornTail.map { "\($0)" } ?? "none"),
            ("corruption cut", recovery.corruptionCut.map { "\($0)" } ?? "none"),
            ("segments removed", recovery.removedSegments.isEmpty ? "none" : recovery.removedSegments.joined(separator: ", ")),
        ]).text)
        let reread = try store.snapshot()
        let durable = try reread.get(watchedKey)
        reread.close()
        let consistent = durable == lastWritten
        out.write(consistent
            ? "After reopening, \"\(watchedKey)\" reads \(describe(durable)), as last committed.\n"
            : "ERROR: after reopening, \"\(watchedKey)\" reads \(describe(durable)), not \(describe(lastWritten)).\n")

        // 5. Stats.
        section("5. Stats")
        out.write(AdminCommands.text(try store.stats()))

        // 6. Merge policies.
        let policiesAgree = try showMergePolicies()
        return isolated && consistent && policiesAgree ? .success : .storeProblem
    }

    /// Two contexts edit one person; B saves first, A's save conflicts. Runs the scenario under
    /// every built-in policy through the scenario runner and checks the contract's outcomes.
    /// Returns whether every run matched them.
    private static func showMergePolicies() throws -> Bool {
        let out = StandardStream.output
        section("6. Merge policies")
        let scenario = try Scenario.parse(mergeScenario)
        let results = try ScenarioRuns.run(scenario, under: BuiltInPolicies.all)
        out.write("""
            The store holds p = {name: "Ann", age: 30, city: "Oslo"}. Contexts A and B both fetch it.
            B sets name "Anna" and age 31, and saves first. A, still holding version 1, sets
            age 40 and city "Rome", and saves: age changed on both sides, city only in A, name
            only in B. Each column is a run under that merge policy on a fresh store; p.* is
            the committed person afterwards.

            """)
        out.write("\n" + ScenarioReport.table(scenario, results).text)
        let secondSave = scenario.saveStepIndices.last!
        if let conflict = results.first(where: { $0.policy == "error" })?.record(at: secondSave)?.conflicts.first {
            out.write("""

                A's save met one \(conflict.kind.rawValue) conflict on \(conflict.ref): it read version \(conflict.ancestorVersion), \
                the store holds version \(conflict.storeVersion).
                The error policy (every context's default) refuses the save and writes nothing.
                storeTrump keeps B's values where both changed; objectTrump keeps A's; overwrite
                writes A's whole object, undoing B's name; rollback drops A's changes.

                """)
        }
        let differences = ScenarioRuns.differences(scenario, results)
        if differences.isEmpty {
            out.write("Every policy gave the outcome Docs/MergePolicies.md states.\n")
        } else {
            out.write("ERROR: outcomes differ from Docs/MergePolicies.md:\n" + differences.map { "  \($0)\n" }.joined())
        }
        return differences.isEmpty
    }

    /// The example of Docs/MergePolicies.md ("The built-in policies by example") as a scenario,
    /// with the outcomes that page states as its expectations.
    static let mergeScenario = #"""
        {
          "name": "demo: A and B edit the same person",
          "entities": { "Person": { "name": "string", "age": "int", "city": "string?" } },
          "store": { "p": { "entity": "Person", "values": { "name": "Ann", "age": 30, "city": "Oslo" } } },
          "steps": [
            { "in": "A", "do": "fetch", "ref": "p" },
            { "in": "B", "do": "fetch", "ref": "p" },
            { "in": "B", "do": "set", "ref": "p", "values": { "name": "Anna", "age": 31 } },
            { "in": "B", "do": "save" },
            { "in": "A", "do": "set", "ref": "p", "values": { "age": 40, "city": "Rome" } },
            { "in": "A", "do": "save" }
          ],
          "expect": {
            "error":       { "saves": ["ok", "conflict"], "store": { "p": { "name": "Anna", "age": 31, "city": "Oslo" } } },
            "storeTrump":  { "saves": ["ok", "ok"],       "store": { "p": { "name": "Anna", "age": 31, "city": "Rome" } } },
            "objectTrump": { "saves": ["ok", "ok"],       "store": { "p": { "name": "Anna", "age": 40, "city": "Rome" } } },
            "overwrite":   { "saves": ["ok", "ok"],       "store": { "p": { "name": "Ann",  "age": 40, "city": "Rome" } } },
            "rollback":    { "saves": ["ok", "ok"],       "store": { "p": { "name": "Anna", "age": 31, "city": "Oslo" } } }
          }
        }
        """#

    private static func section(_ title: String) {
        StandardStream.output.write("\n\(title)\n\(String(repeating: "-", count: title.count))\n")
    }

    private static func describe(_ record: Record?) -> String {
        guard let record else { return "absent" }
        return "\"\(String(decoding: record.value, as: UTF8.self))\" (record version \(record.version))"
    }

    private static func format(_ value: Double, digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }

    private static func makeTemporaryDirectory() throws -> String {
        var template = Array((FileManager.default.temporaryDirectory.path + "/cairn-demo-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CommandError.failed("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}
