import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension CairnToolTests {
    @Suite struct KeyValueCommandTests {
        @Test func putGetDeleteScanAndDumpRoundTrip() throws {
            let directory = try TemporaryDirectory(purpose: "kv")
            defer { directory.remove() }
            let store = directory.path + "/store"
            for (key, value) in [("apple", "red"), ("apricot", "orange"), ("banana", "yellow"), ("blueberry", "blue"),
                                 ("cherry", "dark red"), ("dürüm", "héllo wörld ✓")] {
                let put = try cairn("put", store, key, value)
                #expect(put.status == 0, "\(put)")
            }
            let dash = try cairn("put", store, "--", "-dash", "-value")
            #expect(dash.status == 0, "\(dash)")

            #expect(try cairn("get", store, "banana").output == "yellow\n")
            #expect(try cairn("get", store, "dürüm").output == "héllo wörld ✓\n")
            #expect(try cairn("get", store, "--", "-dash").output == "-value\n")
            let overwrite = try cairn("put", store, "banana", "green")
            #expect(overwrite.status == 0, "\(overwrite)")
            #expect(try cairn("get", store, "banana").output == "green\n")

            let prefix = try cairn("scan", store, "--prefix", "ap")
            #expect(prefix.status == 0, "\(prefix)")
            #expect(prefix.lines == ["apple\tred", "apricot\torange"])
            #expect(try cairn("scan", store, "--limit", "2").lines == ["-dash\t-value", "apple\tred"])
            #expect(try cairn("scan", store, "--reverse", "--limit", "2").lines == ["dürüm\théllo wörld ✓", "cherry\tdark red"])
            #expect(try cairn("scan", store, "--prefix", "b", "--reverse").lines == ["blueberry\tblue", "banana\tgreen"])
            #expect(try cairn("scan", store, "--prefix", "zzz").output == "")
            #expect(try cairn("scan", store, "--limit", "0").output == "")

            let deleted = try cairn("delete", store, "apricot")
            #expect(deleted.status == 0, "\(deleted)")
            let missing = try cairn("get", store, "apricot")
            #expect(missing.status == 2, "\(missing)")
            #expect(missing.output == "")
            #expect(missing.errorOutput.contains("apricot"))

            let dump = try cairn("dump", store)
            #expect(dump.status == 0, "\(dump)")
            #expect(dump.lines == [
                "-dash\t-value", "apple\tred", "banana\tgreen", "blueberry\tblue", "cherry\tdark red", "dürüm\théllo wörld ✓",
            ])
        }

        @Test func getOfAMissingKeyExitsTwo() throws {
            let directory = try TemporaryDirectory(purpose: "missing")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "present", "1").status == 0)
            let run = try cairn("get", store, "absent")
            #expect(run.status == 2, "\(run)")
            #expect(run.errorOutput.hasPrefix("cairn: "))
            #expect(run.errorOutput.contains("absent"))
        }

        @Test(arguments: [
            [],
            ["frobnicate"],
            ["put", "STORE", "only-a-key"],
            ["get", "STORE"],
            ["get", "STORE", "key", "extra"],
            ["scan", "STORE", "--limit", "many"],
            ["scan", "STORE", "--limit", "-1"],
            ["scan", "STORE", "--bogus"],
            ["scan", "STORE", "--limit"],
            ["scan", "STORE", "--reverse=yes"],
            ["scan", "STORE", "--table", "a", "--table", "b"],
            ["ingest", "STORE", "--writers", "0"],
        ])
        func usageErrorsExitOne(arguments: [String]) throws {
            let directory = try TemporaryDirectory(purpose: "usage")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v").status == 0)
            let run = try cairn(arguments.map { $0 == "STORE" ? store : $0 })
            #expect(run.status == 1, "\(run)")
            #expect(run.output == "")
            #expect(!run.errorOutput.isEmpty)
            // A usage error must not have written anything.
            #expect(try cairn("dump", store).lines == ["k\tv"])
        }

        @Test func aKeyOverTheLimitExitsThreeNamingTheLimit() throws {
            let directory = try TemporaryDirectory(purpose: "longkey")
            defer { directory.remove() }
            let store = directory.path + "/store"
            let key = String(repeating: "k", count: 600)
            let put = try cairn("put", store, key, "value")
            #expect(put.status == 3, "\(put)")
            #expect(put.errorOutput.contains("600 bytes"))
            #expect(put.errorOutput.contains("511 bytes"))
            let get = try cairn("get", store, key)
            #expect(get.status == 3, "\(get)")
            #expect(get.errorOutput.contains("511"))
        }

        @Test func tablesAreIndependent() throws {
            let directory = try TemporaryDirectory(purpose: "tables")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "shared", "in default").status == 0)
            #expect(try cairn("put", store, "shared", "in people", "--table", "people").status == 0)
            #expect(try cairn("put", "--table", "people", store, "only-people", "p").status == 0)
            #expect(try cairn("put", store, "shared", "in places", "--table=places").status == 0)

            #expect(try cairn("get", store, "shared").output == "in default\n")
            #expect(try cairn("get", store, "shared", "--table", "people").output == "in people\n")
            #expect(try cairn("get", store, "shared", "--table", "places").output == "in places\n")
            #expect(try cairn("get", store, "only-people").status == 2)
            #expect(try cairn("dump", store, "--table", "people").lines == ["only-people\tp", "shared\tin people"])

            #expect(try cairn("delete", store, "shared", "--table", "people").status == 0)
            #expect(try cairn("get", store, "shared", "--table", "people").status == 2)
            #expect(try cairn("get", store, "shared").output == "in default\n")
            #expect(try cairn("dump", store).lines == ["shared\tin default"])
            #expect(try cairn("scan", store, "--table", "places").lines == ["shared\tin places"])
        }

        @Test func readingAMissingStoreFailsWithoutCreatingIt() throws {
            let directory = try TemporaryDirectory(purpose: "nostore")
            defer { directory.remove() }
            let store = directory.path + "/never-made"
            let run = try cairn("get", store, "k")
            #expect(run.status == 3, "\(run)")
            #expect(run.errorOutput.contains("no Cairn store"))
            #expect(!FileManager.default.fileExists(atPath: store))
        }

        @Test func aStoreOpenInAnotherProcessIsReadBesideItAndRefusedToWriters() throws {
            let directory = try TemporaryDirectory(purpose: "locked")
            defer { directory.remove() }
            let path = directory.path + "/store"
            #expect(try cairn("put", path, "k", "v").status == 0)
            let store = try Store(directory: path)
            defer { store.close() }
            // Committed by the writer after it opened: only in its log and overlay so far.
            var batch = WriteBatch()
            batch.put("new", forKey: "n")
            try store.commit(batch)
            for arguments in [["put", path, "k", "w"], ["delete", path, "k"], ["checkpoint", path]] {
                let run = try cairn(arguments)
                #expect(run.status == 3, "\(run)")
                #expect(run.errorOutput.contains("locked by pid \(getpid())"), "\(run)")
            }
            let get = try cairn("get", path, "n")
            #expect(get.status == 0 && get.output == "new\n", "\(get)")
            let scan = try cairn("scan", path)
            #expect(scan.lines == ["k\tv", "n\tnew"], "\(scan)")
            let check = try cairn("check", path)
            #expect(check.status == 0, "\(check)")
            #expect(check.output.contains("beside writer pid \(getpid())") && check.output.contains("not verified"), "\(check)")
            let stats = try cairn("stats", path, "--json")
            #expect(stats.status == 0 && stats.output.contains("\"readOnly\" : true"), "\(stats)")
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            #expect(try snapshot.get("k")?.value == Array("v".utf8))
        }

        /// A version-keyed put (`WriteBatch.putAtCommitVersion`) reaches a reader process with
        /// its final key, from the writer's log before LMDB holds it.
        @Test func aReaderProcessSeesAPutAtCommitVersionUnderItsCommitVersion() throws {
            let directory = try TemporaryDirectory(purpose: "version-key")
            defer { directory.remove() }
            let path = directory.path + "/store"
            var options = Store.Options()
            options.applyInterval = 3600
            options.applyThreshold = Int.max
            let store = try Store(directory: path, options: options)
            defer { store.close() }
            var batch = WriteBatch()
            batch.put("x", forKey: "k")
            try store.commit(batch)
            batch = WriteBatch()
            batch.putAtCommitVersion(Array("second".utf8), in: "changes", if: .absent)
            #expect(try store.commit(batch).version == 2)
            let scan = try cairn("scan", path, "--table", "changes")
            #expect(scan.status == 0 && scan.lines == [String(repeating: "\\x00", count: 7) + "\\x02\tsecond"], "\(scan)")
        }

        @Test func ingestAcknowledgesEveryLineAndCommitsIt() throws {
            let directory = try TemporaryDirectory(purpose: "ingest")
            defer { directory.remove() }
            let store = directory.path + "/store"
            let keys = (0..<200).map { "key-\($0)" }
            let input = keys.map { "\($0)\tvalue\twith tab \($0)\n" }.joined() + "\n"
            let run = try cairn(["ingest", store, "--writers", "8", "--table", "bulk"], input: input)
            #expect(run.status == 0, "\(run)")
            #expect(run.lines.sorted() == keys.map { "ok \($0)" }.sorted())
            let dump = try cairn("dump", store, "--table", "bulk")
            // A raw tab after the first belongs to the value; printed, it is the escape \t.
            #expect(dump.lines == keys.sorted().map { "\($0)\tvalue\\twith tab \($0)" })
            #expect(try cairn("dump", store).output == "")
        }

        @Test func ingestStopsAtALineWithoutATab() throws {
            let directory = try TemporaryDirectory(purpose: "badline")
            defer { directory.remove() }
            let store = directory.path + "/store"
            let run = try cairn(["ingest", store], input: "a\t1\nb\t2\nno tab here\nc\t3\n")
            #expect(run.status == 1, "\(run)")
            #expect(run.errorOutput.contains("line 3"))
            #expect(run.lines.sorted() == ["ok a", "ok b"])
            #expect(try cairn("dump", store).lines == ["a\t1", "b\t2"])
        }
    }
}
