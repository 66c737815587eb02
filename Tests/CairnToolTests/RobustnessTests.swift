import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension CairnToolTests {
    /// Hostile input and hostile surroundings: each gets a clear, typed error, loses
    /// nothing, and never a signal or a hang (every run here has a time limit).
    @Suite struct RobustnessTests {
        // MARK: - Unbounded input (ingest)

        @Test func ingestRefusesAnEndlessLineEarlyInBoundedMemory() throws {
            let directory = try TemporaryDirectory(purpose: "endless")
            defer { directory.remove() }
            let store = directory.path + "/store"
            // At most 512 MiB of data memory: holding the line until it ends would run out
            // (and /dev/zero never ends); refusing it at --max-line (16 MiB) does not. `exec`,
            // so that the time limit's SIGKILL reaches cairn itself.
            // A sanitizer's runtime reserves terabytes of shadow memory, which a data limit
            // refuses at startup: under `make asan`/`make tsan` (CAIRN_SANITIZER set) the run
            // keeps its time limit and its checks, without the memory limit.
            let limit = ProcessInfo.processInfo.environment["CAIRN_SANITIZER"] == nil ? "ulimit -d 524288; " : ""
            let run = try shell(limit + "exec \"$CAIRN\" ingest \"$S\" < /dev/zero", ["S": store], timeout: 30)
            #expect(!run.timedOut, "\(run)")
            #expect(run.status == 1, "\(run)")
            #expect(run.errorOutput.contains("input line 1 is longer than --max-line (16777216 bytes)"), "\(run)")
            #expect(run.output == "")
            #expect(try Store.check(directory: store).recordsPerTable.values.reduce(0, +) == 0)
        }

        @Test func maxLineAdmitsALineOfExactlyItsLengthAndRefusesOneByteMore() throws {
            let directory = try TemporaryDirectory(purpose: "maxline")
            defer { directory.remove() }
            let store = directory.path + "/store"
            let run = try cairn(["ingest", store, "--max-line", "10", "--writers", "1"],
                                input: "k\t12345678\nl\t123456789\nm\t1\n")
            #expect(run.status == 1, "\(run)")
            #expect(run.errorOutput.contains("input line 2 is longer than --max-line (10 bytes)"), "\(run)")
            #expect(try cairn("dump", store).lines == ["k\t12345678"])
            // The last line, without a line feed, is held to the same limit.
            let last = try cairn(["ingest", store, "--max-line", "10"], input: "l\t123456789")
            #expect(last.status == 1, "\(last)")
            #expect(try cairn("dump", store).lines == ["k\t12345678"])
        }

        // MARK: - Store files that are not regular files

        /// `data.mdb`, `lock.mdb`, `LOCK` or a log segment replaced by a FIFO or a directory:
        /// every command that opens the store refuses it naming the file and what it is.
        @Test(arguments: ["data.mdb", "lock.mdb", "LOCK", "wal/SEGMENT"])
        func aStoreFileThatIsNotARegularFileIsRefusedNamingIt(file: String) throws {
            for kind in ["FIFO", "directory"] {
                let directory = try TemporaryDirectory(purpose: "fifo")
                defer { directory.remove() }
                let store = directory.path + "/store"
                #expect(try cairn("put", store, "k", "v").status == 0)
                var name = file
                if file == "wal/SEGMENT" {
                    let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: store + "/wal").sorted().last)
                    name = "wal/" + segment
                }
                let path = store + "/" + name
                try FileManager.default.removeItem(atPath: path)
                if kind == "FIFO" {
                    #expect(mkfifo(path, 0o600) == 0)
                } else {
                    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                }
                let what = kind == "FIFO" ? "a FIFO (named pipe)" : "a directory"
                for arguments in [["get", store, "k"], ["check", store], ["dump", store], ["scan", store], ["stats", store], ["history", store],
                                  ["put", store, "k", "w"], ["delete", store, "k"], ["checkpoint", store], ["ingest", store]] {
                    let run = try cairn(arguments, input: Array("x\t1\n".utf8), timeout: 20)
                    #expect(!run.timedOut, "\(file) as \(kind): \(run)")
                    #expect(run.status == 3, "\(file) as \(kind): \(run)")
                    // `check` lists a log it cannot read among the store's problems, on stdout.
                    let said = run.errorOutput + run.output
                    #expect(said.contains(path) && said.contains("it is \(what), not a regular file"), "\(file) as \(kind): \(run)")
                }
            }
        }

        // MARK: - Smaller ones

        @Test func anEmptyPrefixIsEveryKey() throws {
            let directory = try TemporaryDirectory(purpose: "prefix")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn(["ingest", store], input: "b\t2\na\t1\nc\t3\n").status == 0)
            let run = try cairn("scan", store, "--prefix", "")
            #expect(run.status == 0, "\(run)")
            #expect(run.lines == ["a\t1", "b\t2", "c\t3"])
            #expect(try cairn("scan", store, "--prefix=", "--reverse", "--limit", "2").lines == ["c\t3", "b\t2"])
        }

        /// No record can be in a table whose name `put` refuses; every command says so alike.
        @Test(arguments: ["", "__cairn_meta", String(repeating: "t", count: 201)])
        func anInvalidTableNameIsAUsageErrorForEveryCommand(table: String) throws {
            let directory = try TemporaryDirectory(purpose: "table")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "applied", "v").status == 0)
            for arguments in [["put", store, "k", "v"], ["get", store, "applied"], ["delete", store, "k"], ["scan", store],
                              ["dump", store], ["ingest", store]] {
                let run = try cairn(arguments + ["--table", table], input: Array("k\tv\n".utf8))
                #expect(run.status == 1, "\(run)")
                #expect(run.errorOutput.contains("invalid table name"), "\(run)")
            }
            #expect(try cairn("dump", store).lines == ["applied\tv"])
        }

        @Test func aStoreWithoutPermissionSaysPermissionDeniedNotNoStore() throws {
            let directory = try TemporaryDirectory(purpose: "perm")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v").status == 0)
            #expect(chmod(store, 0) == 0)
            defer { chmod(store, 0o700) }
            // Root reads through any mode: drop the capabilities that let it.
            let drop = getuid() == 0
                ? "exec setpriv --inh-caps=-all --bounding-set=-dac_override,-dac_read_search "
                : "exec "
            for command in ["get \"$S\" k", "dump \"$S\"", "check \"$S\"", "stats \"$S\"", "put \"$S\" k w"] {
                let run = try shell(drop + "\"$CAIRN\" " + command, ["S": store], timeout: 20)
                #expect(run.status == 3, "\(command): \(run)")
                #expect(run.errorOutput.contains("Permission denied"), "\(command): \(run)")
                #expect(!run.errorOutput.contains("no Cairn store"), "\(command): \(run)")
            }
            chmod(store, 0o700)
            #expect(try cairn("get", store, "k").output == "v\n")
        }

        @Test func aScenarioThatIsNotARegularFileIsRefusedNamingWhatItIs() throws {
            let directory = try TemporaryDirectory(purpose: "scenario-kind")
            defer { directory.remove() }
            let fifo = directory.path + "/pipe.json"
            #expect(mkfifo(fifo, 0o600) == 0)
            let onDirectory = try cairn(["scenario", directory.path], input: [], timeout: 20)
            #expect(onDirectory.status == 1, "\(onDirectory)")
            #expect(onDirectory.errorOutput.contains("it is a directory, not a regular file"), "\(onDirectory)")
            #expect(!onDirectory.errorOutput.contains("NSCocoaErrorDomain"), "\(onDirectory)")
            let onFIFO = try cairn(["scenario", fifo], input: [], timeout: 20)
            #expect(!onFIFO.timedOut, "\(onFIFO)")
            #expect(onFIFO.status == 1, "\(onFIFO)")
            #expect(onFIFO.errorOutput.contains("it is a FIFO (named pipe), not a regular file"), "\(onFIFO)")
            let missing = try cairn(["scenario", directory.path + "/none.json"], input: [], timeout: 20)
            #expect(missing.status == 1, "\(missing)")
            #expect(missing.errorOutput.contains("No such file or directory"), "\(missing)")
            let policies = try cairn(["policies", "--scenarios", directory.path], input: [], timeout: 20)
            #expect(!policies.timedOut, "\(policies)")
            #expect(policies.status == 1, "\(policies)")
            #expect(policies.errorOutput.contains("FIFO"), "\(policies)")
            let noDirectory = try cairn(["policies", "--scenarios", directory.path + "/none"], input: [], timeout: 20)
            #expect(noDirectory.status == 1, "\(noDirectory)")
            #expect(noDirectory.errorOutput.contains("No such file or directory"), "\(noDirectory)")
        }

        /// An error names what was wrong without echoing a 100,000-character argument.
        @Test func errorsDoNotEchoHugeArgumentsInFull() throws {
            let directory = try TemporaryDirectory(purpose: "echo")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v").status == 0)
            let digits = String(repeating: "9", count: 100_000)
            let letters = String(repeating: "x", count: 100_000)
            for arguments in [["scan", store, "--limit", digits], ["scan", store, "--table", letters],
                              ["scan", store, "--" + letters], ["get", store, "k", letters], [letters],
                              ["scenario", "f.json", "--policy", letters], ["get", store + "/" + letters, "k"],
                              ["scenario", directory.path + "/" + letters]] {
                let run = try cairn(arguments)
                #expect(run.status == 1 || run.status == 3, "\(run)")
                #expect(!run.errorOutput.isEmpty)
                #expect(run.errorOutput.utf8.count < 2_000, "\(arguments.map { $0.prefix(20) }): \(run.errorOutput.utf8.count) bytes")
            }
        }

        @Test func onlyAMissingOrEmptyDirectoryOrAStoreBecomesAStore() throws {
            let directory = try TemporaryDirectory(purpose: "adopt")
            defer { directory.remove() }
            let busy = directory.path + "/busy"
            try FileManager.default.createDirectory(atPath: busy + "/sub", withIntermediateDirectories: true)
            try Data("mine".utf8).write(to: URL(fileURLWithPath: busy + "/notes.txt"))
            let file = directory.path + "/file"
            try Data("x".utf8).write(to: URL(fileURLWithPath: file))
            for target in [busy, file] {
                for arguments in [["put", target, "k", "v"], ["ingest", target], ["demo", "--dir", target]] {
                    let run = try cairn(arguments, input: Array("k\tv\n".utf8), timeout: 60)
                    #expect(run.status == 3, "\(run)")
                    #expect(run.errorOutput.contains(target), "\(run)")
                }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: busy).sorted() == ["notes.txt", "sub"])
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data("x".utf8))

            let empty = directory.path + "/empty"
            try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
            #expect(try cairn("put", empty, "k", "v").status == 0)
            #expect(try cairn("put", empty, "k2", "v").status == 0)
            // A store whose creation stopped before its data file: the lock files and wal/.
            let interrupted = directory.path + "/interrupted"
            try FileManager.default.createDirectory(atPath: interrupted + "/wal", withIntermediateDirectories: true)
            try Data().write(to: URL(fileURLWithPath: interrupted + "/LOCK"))
            #expect(try cairn("put", interrupted, "k", "v").status == 0)
            #expect(try cairn("get", interrupted, "k").output == "v\n")
        }

        @Test func dumpAndScanReportACorruptRecordAndCanSkipIt() throws {
            let directory = try TemporaryDirectory(purpose: "corrupt")
            defer { directory.remove() }
            let store = directory.path + "/store"
            let marker = "needle-" + String(repeating: "Q", count: 40)
            let lines = (0..<20).map { "k\(10 + $0)\tvalue-\($0)" } + ["k20x\t" + marker]
            #expect(try cairn(["ingest", store], input: lines.joined(separator: "\n")).status == 0)
            // Flip a byte of one record's value in the data file (the store is closed).
            let path = store + "/data.mdb"
            var data = try Data(contentsOf: URL(fileURLWithPath: path))
            let found = try #require(data.range(of: Data(marker.utf8)))
            data[found.lowerBound + 10] ^= 0x20
            try data.write(to: URL(fileURLWithPath: path))
            let good = lines.filter { !$0.contains(marker) }.sorted()
            let before = good.filter { $0 < "k20x" }

            for command in ["dump", "scan"] {
                let stopped = try cairn(command, store)
                #expect(stopped.status == 3, "\(stopped)")
                #expect(stopped.lines == before, "\(stopped)")
                #expect(stopped.errorOutput.contains("corrupt record in table default, key k20x"), "\(stopped)")
                #expect(stopped.errorOutput.contains("--skip-corrupt"), "\(stopped)")

                let skipped = try cairn(command, store, "--skip-corrupt")
                #expect(skipped.status == 3, "\(skipped)")
                #expect(skipped.lines == good, "\(skipped)")
                #expect(skipped.errorOutput.contains("skipped corrupt record in table default, key k20x"), "\(skipped)")
                #expect(skipped.errorOutput.contains("1 corrupt record skipped"), "\(skipped)")
            }
        }
    }
}
