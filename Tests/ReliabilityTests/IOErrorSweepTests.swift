import CairnTestSupport
import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every I/O call of a scripted workload fails once, in turn, as SQLite's I/O error tests
/// do: a clean run counts each operation (open, write, sync, truncate, remove, directory
/// sync, from opening the store to `shutDown()`), then for N = 1…count the Nth call of that
/// operation fails with EIO, and again with ENOSPC. For each case:
/// - the failure reaches the caller as the injected `KVError.io` (possibly wrapped in
///   `poisoned`) from the call that hit it or from `shutDown()`, or is absorbed where nothing
///   depends on it (retiring applied segments); a failed write or sync is never absorbed;
/// - the open store, poisoned or not, reads exactly what it acknowledged;
/// - after a failed write or sync, every later commit fails with `poisoned` (never retried);
///   after other failures the store goes on, consistently;
/// - after a crash and a reboot that keeps only synced bytes, the store opens, holds every
///   acknowledged `.full` commit and equals the model at the version it recovered, and
///   `check` finds it sound.
///
/// Sizes: CAIRN_IOERROR_SCRIPTS. Replay one case with the printed
/// CAIRN_IOERROR_CASE=<script seed>:<operation>:<N>:<errno>.
@Suite(.serialized) struct IOErrorSweepTests {
    static let errnos: [Int32] = [EIO, ENOSPC]

    @Test(.timeLimit(.minutes(30)))
    func everyIOFailureIsTypedAndLosesNothingAcknowledged() throws {
        if let replay = Reliability.replayCase("IOERROR") {
            let parts = replay.split(separator: ":").map(String.init)
            try #require(parts.count == 4, "CAIRN_IOERROR_CASE is <script seed>:<operation>:<N>:<errno>")
            let operation = try #require(FaultFileSystem.Operation.allCases.first { "\($0)" == parts[1] })
            var figures = OutcomeCounts()
            try runCase(script: ScriptedWorkload(seed: UInt64(parts[0]) ?? 0, commits: Self.commitsPerScript),
                        operation: operation, occurrence: Int(parts[2]) ?? 1, errno: Int32(parts[3]) ?? EIO, figures: &figures)
            return
        }
        let scripts = Reliability.size("IOERROR_SCRIPTS", short: 1, torture: 12)
        let seed = Reliability.seed("IOERROR")
        Reliability.report("io-errors", "\(scripts) scripts, every I/O call × \(Self.errnos.count) errnos, seed \(seed) (replay the run: CAIRN_IOERROR_SEED=\(seed))")
        var figures = OutcomeCounts()
        var points = 0
        for index in 0..<scripts {
            let script = ScriptedWorkload(seed: Reliability.caseSeed(seed, index), commits: Self.commitsPerScript)
            let counts = try cleanCounts(script)
            for operation in FaultFileSystem.Operation.allCases {
                for occurrence in 0..<counts[operation, default: 0] {
                    points += 1
                    for code in Self.errnos {
                        try runCase(script: script, operation: operation, occurrence: occurrence + 1, errno: code, figures: &figures)
                    }
                }
            }
        }
        Reliability.report("io-errors", "\(points) I/O points, \(figures.total / 1) outcomes, seed \(seed): \(figures)")
        #expect(points > 0)
    }

    static let commitsPerScript = 30

    /// How many times a clean run calls each operation, from opening to a clean close.
    func cleanCounts(_ script: ScriptedWorkload) throws -> [FaultFileSystem.Operation: Int] {
        let directory = try TemporaryDirectory(prefix: "cairn-io-clean")
        defer { directory.remove() }
        let disk = FaultFileSystem()
        let run = script.run(directory: directory.path, fileSystem: ClassifyingFileSystem(disk))
        #expect(run.errors.isEmpty, "script \(script.seed): a clean run failed: \(run.errors.map(\.error))")
        run.store?.close()
        var counts: [FaultFileSystem.Operation: Int] = [:]
        for operation in FaultFileSystem.Operation.allCases { counts[operation] = disk.count(of: operation) }
        return counts
    }

    func runCase(script: ScriptedWorkload, operation: FaultFileSystem.Operation, occurrence: Int, errno code: Int32,
                 figures: inout OutcomeCounts) throws {
        let replay = "CAIRN_IOERROR_CASE=\(script.seed):\(operation):\(occurrence):\(code)"
        let directory = try TemporaryDirectory(prefix: "cairn-io")
        defer { directory.remove() }
        let disk = FaultFileSystem()
        disk.inject(operation, at: occurrence, errno: code)
        let fileSystem = ClassifyingFileSystem(disk)
        let run = Watchdog.shared.guarding("I/O error case \(replay)") {
            script.run(directory: directory.path, fileSystem: fileSystem, retryOpen: true)
        }
        // Poisoned or not, the open store answers reads with exactly what it acknowledged.
        var shutDownError: KVError? = nil
        if let store = run.store {
            let acknowledged = Int(run.acknowledged.last?.version ?? 0)
            for difference in try ScriptedWorkload.differences(store, from: script.states[acknowledged]).prefix(5) {
                Issue.record("\(replay): the live store after the failure: \(difference)")
            }
            // A clean shutdown: its flush and retirement are I/O points too, and it reports.
            do { try store.shutDown() } catch { shutDownError = error }
        }

        // The failure is typed and carries the injected errno.
        let injected = { (error: KVError) -> Bool in
            var underlying = error
            while case .poisoned(let inner) = underlying { underlying = inner }
            if case .io(let failed, _, _) = underlying { return failed == code }
            return false
        }
        var outcome: String
        if let first = run.errors.first {
            if !injected(first.error) {
                Issue.record("\(replay): the first error is not the injected one: \(first.step): \(first.error)")
            }
            for later in run.errors.dropFirst() where !injected(later.error) {
                Issue.record("\(replay): a later error is not the injected one: \(later.step): \(later.error)")
            }
            if run.sawPoisoned {
                outcome = "poisoned"
            } else if run.succeededAfterError {
                outcome = "went on"
            } else {
                outcome = "stopped"
            }
        } else if let shutDownError {
            if !injected(shutDownError) {
                Issue.record("\(replay): shutDown reported an error that is not the injected one: \(shutDownError)")
            }
            outcome = "reported by shutDown"
        } else if disk.count(of: operation) < occurrence {
            // The applier's syncs depend on timing: this run made fewer calls of the
            // operation than the clean run counted, so the fault never fired.
            outcome = "not reached"
        } else {
            outcome = "absorbed"
        }
        // A failed write or sync of the log must poison: no later commit may succeed.
        if operation == .write || operation == .sync, let first = run.errors.first, first.step != "open",
           run.committedAfterError {
            Issue.record("\(replay): a commit succeeded after a failed \(operation) (\(first.error)): the store was not poisoned")
        }
        if outcome == "absorbed" && (operation == .write || operation == .sync) {
            Issue.record("\(replay): a failed \(operation) was never reported")
        }
        figures.add("\(operation) → \(outcome)")

        // Reboot with only synced bytes: nothing acknowledged is lost.
        run.store?.simulateCrash()
        let survivor = disk.afterPowerLoss(.dropUnsynced, seed: UInt64(occurrence))
        let reopened: Store
        do {
            reopened = try Watchdog.shared.guarding("I/O error reopen \(replay)") {
                try Store(directory: directory.path, options: script.options, fileSystem: survivor)
            }
        } catch {
            Issue.record("\(replay): reopening after the failure failed: \(error)")
            return
        }
        defer { reopened.close() }
        let recovered = try reopened.stats().commitVersion
        if recovered < run.mustSurvive {
            Issue.record("\(replay): acknowledged durable commit \(run.mustSurvive) was lost (recovered through \(recovered))")
        }
        if recovered > run.attempted {
            Issue.record("\(replay): recovered version \(recovered) was never committed (last tried \(run.attempted))")
            return
        }
        for difference in try ScriptedWorkload.differences(reopened, from: script.states[Int(recovered)]).prefix(5) {
            Issue.record("\(replay): after recovery to \(recovered): \(difference)")
        }
        reopened.close()
        let check = try Store.check(directory: directory.path, fileSystem: survivor)
        #expect(check.isSound, "\(replay): check after recovery found \(check.problems)")
    }
}
