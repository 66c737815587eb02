import CairnTestSupport
import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Damage to LMDB's data file — flipped bytes anywhere and in the meta pages, zeroed and
/// garbage pages, truncation — opened and read in child processes (LMDB has no page
/// checksums; if damage ever got past the engine's verifier, a crash inside LMDB must not
/// take the test run with it).
///
/// Fails on any value read back that was never written (`WRONG`), on a Swift runtime trap
/// in Cairn's code, on a child that reports a sanitizer error, on a crash inside LMDB (by
/// signal: the data-file verifier, `LMDBVerifier`, must have turned that damage into a
/// typed error) and on a hang (a child killed after 30 s without progress). Reports,
/// without failing: records silently missing (damage that leaves a structurally valid
/// tree, e.g. a flipped bit in a leaf's key, that no check can tell from a real deletion),
/// and how many cases were typed errors, detected damage, or harmless.
///
/// Size: CAIRN_LMDB_CORRUPTION_CASES. Replay: CAIRN_LMDB_CORRUPTION_SEED=<seed>
/// CAIRN_LMDB_CORRUPTION_FIRST=<case> CAIRN_LMDB_CORRUPTION_CASES=1.
@Suite(.serialized) struct LMDBCorruptionTests {
    @Test(.timeLimit(.minutes(30)))
    func damagedDataFilesNeverYieldWrongValues() throws {
        let cases = Reliability.size("LMDB_CORRUPTION_CASES", short: 30, torture: 600)
        let first = Reliability.size("LMDB_CORRUPTION_FIRST", short: 0, torture: 0)
        let seed = Reliability.seed("LMDB_CORRUPTION")
        Reliability.report("lmdb-corruption", "\(cases) cases, seed \(seed) (replay one: CAIRN_LMDB_CORRUPTION_SEED=\(seed) CAIRN_LMDB_CORRUPTION_FIRST=<case> CAIRN_LMDB_CORRUPTION_CASES=1)")
        let directory = try TemporaryDirectory(prefix: "cairn-lmdb-sweep")
        defer { directory.remove() }
        let base = directory.path + "/base"
        try LMDBCorpus.build(directory: base, seed: seed)
        // The undamaged corpus reads back exactly, or the sweep proves nothing.
        let intact = try Store(directory: base)
        #expect(try ScriptedWorkload.differences(intact, from: LMDBCorpus.expected(seed: seed), tables: LMDBCorpus.tables).isEmpty)
        intact.close()

        var figures = OutcomeCounts()
        var findings: [String] = []
        var next = first
        var spawns = 0
        while next < first + cases {
            spawns += 1
            let results = directory.path + "/results-\(spawns)", output = directory.path + "/output-\(spawns)"
            let process = try ChildProcess.start(
                role: LMDBCorruptionChild.role,
                arguments: ["BASE": base, "WORK": directory.path + "/work", "SEED": "\(seed)", "FIRST": "\(next)",
                            "COUNT": "\(first + cases - next)", "RESULTS": results],
                outputPath: output)
            // Wait while it makes progress; a child silent for 30 s is hung.
            var seen = 0, lastProgress = monotonicNow(), hung = false
            while process.isRunning {
                usleep(20_000)
                let count = ChildProcess.completeLines(results).count
                if count != seen { seen = count; lastProgress = monotonicNow() }
                if monotonicNow() - lastProgress > 30 {
                    hung = true
                    break
                }
            }
            let ending = hung ? ChildProcess.kill9(process) : ChildProcess.wait(process, timeout: 5).ending
            if let sanitizer = ChildProcess.sanitizerReport(output, ignoringDeadlySignals: true) {
                Issue.record("lmdb corruption (seed \(seed)): a child reported \(sanitizer)")
            }
            var started: (index: Int, damage: String)? = nil
            for line in ChildProcess.completeLines(results) {
                let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
                guard fields.count >= 2, let index = Int(fields[1]) else { continue }
                if fields[0] == "start" {
                    started = (index, fields.count > 2 ? fields[2] : "")
                    continue
                }
                started = nil
                next = index + 1
                let detail = fields.count > 2 ? fields[2] : ""
                let outcome = String(detail.prefix { $0 != " " })
                switch outcome {
                case "WRONG":
                    Issue.record("lmdb corruption case \(index) (seed \(seed)): a read returned data never written: \(detail)")
                    figures.add("WRONG")
                case "missing":
                    figures.add(detail.contains("check=sound") ? "records silently missing (finding)" : "records missing, check reports damage")
                    if findings.count < 40 { findings.append("case \(index): \(detail)") }
                case "harness-error":
                    Issue.record("lmdb corruption case \(index) (seed \(seed)): \(detail)")
                default:
                    figures.add(outcome.hasPrefix("open-error") ? "open: typed error" : outcome)
                }
            }
            guard let crashed = started else {
                if ending != .exited(0) {
                    Issue.record("lmdb corruption (seed \(seed)): a child \(ending) between cases")
                    break
                }
                continue
            }
            // The child died inside this case.
            next = crashed.index + 1
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let assertion = text.split(separator: "\n").first { $0.contains("Assertion") || $0.contains("mdb.c") }
            if hung {
                Issue.record("lmdb corruption case \(crashed.index) (seed \(seed)), \(crashed.damage): no progress for 30 s")
                figures.add("hang")
            } else if text.contains("Fatal error") {
                Issue.record("lmdb corruption case \(crashed.index) (seed \(seed)), \(crashed.damage): Cairn's code trapped on a damaged file: \(text.suffix(1500))")
                figures.add("trap in Cairn")
            } else {
                let signal = ending == .signaled(SIGBUS) ? "SIGBUS" : ending == .signaled(SIGSEGV) ? "SIGSEGV"
                    : ending == .signaled(SIGABRT) ? "SIGABRT" : ChildProcess.sanitizerCaughtSignal(output) ?? "\(ending)"
                let detail = assertion.map { " (\($0))" } ?? ""
                Issue.record("lmdb corruption case \(crashed.index) (seed \(seed)), \(crashed.damage): \(signal) inside LMDB\(detail); the verifier let the damage through")
                figures.add("crash in LMDB: \(signal)")
            }
        }
        Reliability.report("lmdb-corruption", "\(cases) cases in \(spawns) child processes, seed \(seed): \(figures)")
        for finding in findings.prefix(15) { Reliability.report("lmdb-corruption", "finding: \(finding)") }
        #expect(figures.total >= cases - 1)
    }

    /// A data file shorter than LMDB's meta page says (an interrupted copy, a file system
    /// that lost its tail) is a typed error when the store opens. LMDB maps the file and
    /// checks nothing, so without the verifier's length check (or, with verification off,
    /// `checkFileLength`) the first read of a page past the end kills the process with SIGBUS.
    @Test func aTruncatedDataFileIsATypedErrorNotABusError() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-truncated-mdb")
        defer { directory.remove() }
        let store = directory.path + "/store"
        try LMDBCorpus.build(directory: store, seed: 7)
        let path = store + "/data.mdb"
        let bytes = try readWholeFile(path)
        try writeWholeFile(path, Array(bytes.prefix(bytes.count / 2 / 4096 * 4096)))
        let results = directory.path + "/results"
        let process = try ChildProcess.start(role: OpenAndReadChild.role, arguments: ["STORE": store, "RESULTS": results],
                                             outputPath: directory.path + "/output")
        let ending = ChildProcess.wait(process, timeout: 60).ending
        let lines = ChildProcess.completeLines(results)
        #expect(ending == .exited(0), "the child ended with \(ending)")
        #expect(lines.first?.hasPrefix("open-error:wrongFormat") == true, "\(lines)")
    }
}
