import Foundation
import Testing

extension CairnToolTests {
    /// Command lines that name nothing that can exist: a table never written to, an empty key;
    /// and the version.
    @Suite struct ArgumentEdgeTests {
        @Test func dumpAndScanOfATableNeverWrittenToAreErrorsThatNameIt() throws {
            let directory = try TemporaryDirectory(purpose: "no-table")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v", "--table", "people").status == 0)
            for command in ["dump", "scan"] {
                let missing = try cairn(command, store, "--table", "peple")
                #expect(missing.status == 2, "\(missing)")
                #expect(missing.output == "")
                #expect(missing.errorOutput.contains("no table peple"), "\(missing)")
                // A table that exists still dumps, and so does the default table of any store.
                #expect(try cairn(command, store, "--table", "people").lines == ["k\tv"])
                let plain = try cairn(command, store)
                #expect(plain.status == 0 && plain.output == "", "\(plain)")
            }
            // Emptied is not missing: the table exists once written to.
            #expect(try cairn("delete", store, "k", "--table", "people").status == 0)
            let emptied = try cairn("dump", store, "--table", "people")
            #expect(emptied.status == 0 && emptied.output == "", "\(emptied)")
        }

        @Test func anEmptyKeyIsAUsageError() throws {
            let directory = try TemporaryDirectory(purpose: "empty-key")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v").status == 0)
            for arguments in [["put", store, "", "v"], ["get", store, ""], ["delete", store, ""]] {
                let run = try cairn(arguments)
                #expect(run.status == 1, "\(run)")
                #expect(run.errorOutput.contains("KEY is empty"), "\(run)")
                #expect(run.errorOutput.contains("Usage: cairn \(arguments[0])"), "\(run)")
            }
        }

        @Test func versionPrintsTheVersionConstant() throws {
            let flag = try cairn("--version")
            #expect(flag.status == 0, "\(flag)")
            #expect(flag.output.wholeMatch(of: /cairn [0-9]+\.[0-9]+\.[0-9]+\n/) != nil, "\(flag)")
            let command = try cairn("version")
            #expect(command.status == 0 && command.output == flag.output, "\(command)")
            #expect(try cairn("--help").output.contains("version"))
            #expect(try cairn("--version", "extra").status == 1)
        }
    }
}
