import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension CairnToolTests {
    /// Every command run with standard input, output and error really closed in the child
    /// (a shell's `<&- >&- 2>&-` on the exec'd `cairn`), and the issue's own shapes with one
    /// or two closed. A closed descriptor is the lowest free number, so a store file opened
    /// then took it and output landed in the store: `ingest S >&-` wrote its `ok` lines into
    /// `S/LOCK`, `dump S <&- >&-` the dump into `lock.mdb`. After each run: the exit status
    /// is a normal run's (a closed input reads as empty), `LOCK` holds only a pid, no store
    /// file holds what the command prints, the records are the expected ones and
    /// `Store.check` finds the store sound.
    @Suite struct ClosedDescriptorTests {
        static let allClosed = "<&- >&- 2>&-"

        /// A command line (`$S` the store, `$D` a scratch directory holding one scenario
        /// file), the descriptors closed, its input when stdin is open, the records of table
        /// `t` afterwards (nil: unchanged), and text it prints (looked for in store files).
        struct Case: CustomTestStringConvertible, Sendable {
            let words: String
            var closing = ClosedDescriptorTests.allClosed
            var input: String = ""
            var recordsAfter: [String]? = nil
            var prints: [String] = []
            var testDescription: String { "cairn \(words) \(closing)" }
        }

        static let seeded = ["apple\tred-marker", "pear\tgreen-marker"]

        static let cases: [Case] = [
            Case(words: "put \"$S\" plum purple-marker --table t", recordsAfter: seeded + ["plum\tpurple-marker"]),
            Case(words: "get \"$S\" apple --table t", prints: ["red-marker\n"]),
            Case(words: "get \"$S\" absent-key --table t", closing: "2>&-", prints: ["no record under key absent-key"]),
            Case(words: "delete \"$S\" apple --table t", recordsAfter: ["pear\tgreen-marker"]),
            Case(words: "scan \"$S\" --table t --prefix a", prints: ["apple\tred-marker\n"]),
            Case(words: "dump \"$S\" --table t", prints: ["apple\tred-marker\npear\tgreen-marker\n"]),
            Case(words: "dump \"$S\" --table t", closing: "<&- >&-", prints: ["apple\tred-marker\npear\tgreen-marker\n"]),
            // All closed, ingest reads an empty input; with stdout alone closed, it commits.
            Case(words: "ingest \"$S\" --table t", prints: ["ok "]),
            Case(words: "ingest \"$S\" --table t", closing: ">&-", input: "fig\tviolet-marker\n",
                 recordsAfter: ["apple\tred-marker", "fig\tviolet-marker", "pear\tgreen-marker"], prints: ["ok fig\n"]),
            Case(words: "check \"$S\"", prints: ["is sound\n", "applied version"]),
            Case(words: "stats \"$S\"", prints: ["commit version", "LMDB map size"]),
            Case(words: "checkpoint \"$S\"", prints: ["checkpoint removed", "LMDB holds every commit"]),
            Case(words: "scenario \"$D/one.json\"", prints: ["objectTrump"]),
            Case(words: "policies --scenarios \"$D\"", prints: ["Merge policies compared"]),
            Case(words: "demo --dir \"$D/demo\"", prints: ["Concurrent durable commits", "Crash and recovery"]),
            Case(words: "help get", prints: ["Usage: cairn get"]),
            Case(words: "frobnicate", prints: ["unknown command"]),
        ]

        @Test(arguments: cases)
        func commandWithClosedStandardDescriptors(_ testCase: Case) throws {
            let directory = try TemporaryDirectory(purpose: "closed-fd")
            defer { directory.remove() }
            let store = directory.path + "/store", scratch = directory.path + "/scratch"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
            try FileManager.default.copyItem(
                atPath: try ScenarioTests.scenarioPath(ScenarioTests.canonicalFiles[0]), toPath: scratch + "/one.json")
            try Data(testCase.input.utf8).write(to: URL(fileURLWithPath: directory.path + "/input"))
            do {
                let seed = try Store(directory: store)
                defer { seed.close() }
                var batch = WriteBatch()
                batch.put("red-marker", forKey: "apple", in: "t")
                batch.put("green-marker", forKey: "pear", in: "t")
                try seed.commit(batch)
            }

            let stdin = testCase.closing.contains("<&-") ? "" : " < \"$I\""
            let run = try shell("exec \"$CAIRN\" \(testCase.words)\(stdin) \(testCase.closing)",
                                ["S": store, "D": scratch, "I": directory.path + "/input"])
            #expect(!run.timedOut, "\(run)")
            let expectedStatus: Int32 = testCase.words.hasPrefix("frobnicate") ? 1 : testCase.words.contains("absent") ? 2 : 0
            #expect(run.status == expectedStatus, "\(run)")

            for path in testCase.words.hasPrefix("demo") ? [scratch + "/demo"] : [store] {
                let lock = try String(contentsOfFile: path + "/LOCK", encoding: .utf8)
                #expect(lock.allSatisfy { $0.isNumber || $0 == "\n" }, "LOCK holds \(lock.debugDescription)")
                for file in try storeFiles(path) {
                    let contents = try Data(contentsOf: URL(fileURLWithPath: file))
                    for text in testCase.prints {
                        #expect(contents.range(of: Data(text.utf8)) == nil, "\(file) holds the printed \(text.debugDescription)")
                    }
                }
                let report = try Store.check(directory: path)
                #expect(report.isSound, "\(report.problems)")
            }
            let reopened = try Store(directory: store)
            defer { reopened.close() }
            let snapshot = try reopened.snapshot()
            defer { snapshot.close() }
            let records = try snapshot.scan(in: "t").map {
                String(decoding: $0.key, as: UTF8.self) + "\t" + String(decoding: $0.value, as: UTF8.self)
            }
            #expect(records == testCase.recordsAfter ?? Self.seeded)
        }

        /// The files of a store directory, `wal/` included.
        private func storeFiles(_ path: String) throws -> [String] {
            var files = try FileManager.default.contentsOfDirectory(atPath: path)
                .filter { $0 != "wal" }.map { path + "/" + $0 }
            files += try FileManager.default.contentsOfDirectory(atPath: path + "/wal").map { path + "/wal/" + $0 }
            return files
        }
    }
}
