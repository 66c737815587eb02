import Foundation
import KVEngine
import Testing

extension CairnToolTests {
    @Suite struct AdminCommandTests {
        @Test func checkOfASoundStoreExitsZero() throws {
            let directory = try TemporaryDirectory(purpose: "check")
            defer { directory.remove() }
            let store = directory.path + "/store"
            for index in 0..<5 {
                #expect(try cairn("put", store, "key-\(index)", "value-\(index)").status == 0)
            }
            #expect(try cairn("put", store, "other", "o", "--table", "second").status == 0)
            let run = try cairn("check", store)
            #expect(run.status == 0, "\(run)")
            #expect(run.output.contains("is sound"))
            #expect(run.lines.contains { $0.hasPrefix("    table default") && $0.hasSuffix(" 5") }, "\(run)")
            #expect(!run.output.contains("problems:"))
        }

        @Test func checkOfSomethingThatIsNotAStoreExitsThree() throws {
            let directory = try TemporaryDirectory(purpose: "notstore")
            defer { directory.remove() }
            let run = try cairn("check", directory.path)
            #expect(run.status == 3, "\(run)")
            #expect(run.errorOutput.contains("no Cairn store"))
        }

        @Test func statsJSONReportsTheCommitsMade() throws {
            let directory = try TemporaryDirectory(purpose: "stats")
            defer { directory.remove() }
            let store = directory.path + "/store"
            for index in 0..<7 {
                #expect(try cairn("put", store, "key-\(index)", "value").status == 0)
            }
            #expect(try cairn("put", store, "t", "value", "--table", "other").status == 0)
            let run = try cairn("stats", store, "--json")
            #expect(run.status == 0, "\(run)")
            let object = try JSONSerialization.jsonObject(with: Data(run.output.utf8))
            let stats = try #require(object as? [String: Any], "stats --json is not an object: \(run.output)")
            let commitVersion = try #require((stats["commitVersion"] as? NSNumber)?.uint64Value, "\(stats)")
            #expect(commitVersion == 8)
            #expect((stats["appliedVersion"] as? NSNumber)?.uint64Value == commitVersion)
            #expect((stats["recordCount"] as? NSNumber)?.intValue == 8)
            let tables = try #require(stats["recordsPerTable"] as? [String: Any])
            #expect((tables["default"] as? NSNumber)?.intValue == 7)
            #expect((tables["other"] as? NSNumber)?.intValue == 1)
            #expect(stats["oldestSnapshotVersion"] is NSNull)
            #expect(((stats["mapSize"] as? NSNumber)?.intValue ?? 0) > 0)

            let text = try cairn("stats", store)
            #expect(text.status == 0, "\(text)")
            #expect(text.lines.contains { $0.hasPrefix("  commit version") && $0.hasSuffix(" 8") }, "\(text)")
            #expect(text.lines.contains { $0.hasPrefix("  oldest snapshot") && $0.hasSuffix(" none") }, "\(text)")
        }

        @Test func checkpointSucceedsAndSaysWhatItRemoved() throws {
            let directory = try TemporaryDirectory(purpose: "checkpoint")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v").status == 0)
            let run = try cairn("checkpoint", store)
            #expect(run.status == 0, "\(run)")
            #expect(run.output.contains("checkpoint removed"), "\(run)")
            #expect(run.output.contains("through version 1"), "\(run)")
            #expect(try cairn("get", store, "k").output == "v\n")
            #expect(try cairn("check", store).status == 0)
        }

        @Test func globalHelpListsEveryCommand() throws {
            for flag in ["--help", "-h", "help"] {
                let run = try cairn(flag)
                #expect(run.status == 0, "\(run)")
                for name in ["put", "get", "delete", "scan", "dump", "ingest", "check", "stats", "checkpoint", "demo"] {
                    #expect(run.lines.contains { $0.hasPrefix("  \(name) ") }, "\(flag) does not list \(name)")
                }
            }
        }

        @Test(arguments: ["put", "get", "delete", "scan", "dump", "ingest", "check", "stats", "checkpoint", "demo"])
        func everyCommandHasItsOwnHelp(name: String) throws {
            let run = try cairn(name, "--help")
            #expect(run.status == 0, "\(run)")
            #expect(run.output.hasPrefix("Usage: cairn \(name)"), "\(run)")
            #expect(try cairn("help", name).output == run.output)
            #expect(try cairn(name, "-h").output == run.output)
        }

        @Test func demoRunsAndKeepsItsStoreWhenGivenADirectory() throws {
            let directory = try TemporaryDirectory(purpose: "demo")
            defer { directory.remove() }
            let store = directory.path + "/store"
            let run = try cairn("demo", "--dir", store)
            #expect(run.status == 0, "\(run)")
            for heading in ["Concurrent durable commits", "A snapshot keeps its version", "Group commit", "Crash and recovery", "Stats"] {
                #expect(run.output.contains(heading), "demo output lacks \(heading)")
            }
            #expect(run.output.contains("The snapshot's two reads agree"))
            #expect(!run.output.contains("ERROR"))
            let check = try Store.check(directory: store)
            #expect(check.isSound, "\(check.problems)")
            // 8 writers x 625 commits, one in ten on the shared key, plus the seed commit, then
            // 1,000 commits to the shared key that only the log held when the demo "crashed".
            #expect(check.appliedVersion == 6001)
            #expect(run.output.contains("replayed commits    1000"))
            #expect(check.recordsPerTable["default"] == 8 * (625 - 63) + 1)
        }
    }
}
