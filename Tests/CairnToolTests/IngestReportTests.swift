import Foundation
import Testing

extension CairnToolTests {
    /// What `ingest` says about its run on standard error, and how it writes its `ok` lines.
    @Suite struct IngestReportTests {
        static func lines(_ count: Int) -> String {
            (0..<count).map { "key\($0)\tvalue\($0)\n" }.joined()
        }

        @Test func ingestEndsWithASummaryOnStandardErrorAndNoProgressWhenItIsNotATerminal() throws {
            let directory = try TemporaryDirectory(purpose: "ingest-summary")
            defer { directory.remove() }
            let run = try cairn(["ingest", directory.path + "/store", "--writers", "4"], input: Self.lines(300) + "\n")
            #expect(run.status == 0, "\(run)")
            #expect(run.lines.count == 300)
            // One line, nothing redrawn: standard error is a file here.
            #expect(run.errorOutput.wholeMatch(
                of: /cairn ingest: 301 lines, 300 commits in [0-9.]+ s \([0-9]+ commits\/s\)\n/) != nil, "\(run)")
            #expect(!run.errorOutput.contains("\r"))
        }

        @Test func ingestDrawsProgressWhenStandardErrorIsATerminal() throws {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
                Issue.record("util-linux's script(1) is needed to give ingest a terminal")
                return
            }
            let directory = try TemporaryDirectory(purpose: "ingest-tty")
            defer { directory.remove() }
            let input = directory.path + "/input", output = directory.path + "/acks"
            try Self.lines(4000).write(toFile: input, atomically: true, encoding: .utf8)
            // script(1) runs the command on a pseudo-terminal and copies what it printed there
            // to its own standard output; the acknowledgements go to a file.
            let run = try shell(
                "script -qec \"\\\"$CAIRN\\\" ingest \\\"$S\\\" --writers 2 < \\\"$IN\\\" > \\\"$OUT\\\"\" /dev/null",
                ["S": directory.path + "/store", "IN": input, "OUT": output])
            #expect(run.status == 0, "\(run)")
            let acknowledgements = try String(contentsOfFile: output, encoding: .utf8)
            #expect(acknowledgements.split(separator: "\n").count == 4000)
            // Each redraw starts with a carriage return; the summary comes last, on its own line.
            #expect(run.output.contains("\rcairn ingest: "), "\(run)")
            #expect(run.output.contains("4000 lines, 4000 commits in"), "\(run)")
        }

        @Test func acknowledgementsOfCommitsThatFinishTogetherShareWrites() throws {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
                Issue.record("strace is needed to count ingest's write calls")
                return
            }
            let directory = try TemporaryDirectory(purpose: "ingest-writes")
            defer { directory.remove() }
            let input = directory.path + "/input", trace = directory.path + "/trace"
            try Self.lines(2000).write(toFile: input, atomically: true, encoding: .utf8)
            let run = try shell(
                "strace -f -qq -e trace=write -e signal=none -o \"$TRACE\" \"$CAIRN\" ingest \"$S\" --writers 8 < \"$IN\"",
                ["S": directory.path + "/store", "IN": input, "TRACE": trace], timeout: 300)
            #expect(run.status == 0, "\(run)")
            #expect(run.lines.count == 2000)
            #expect(Set(run.lines).count == 2000)
            #expect(run.lines.allSatisfy { $0.hasPrefix("ok key") })
            let writes = try String(contentsOfFile: trace, encoding: .utf8)
                .split(separator: "\n").filter { $0.contains("write(1, ") }.count
            // One write per acknowledgement would be 2000; eight writers woken by one
            // fdatasync hand over their lines together.
            #expect(writes < 2000, "\(writes) writes for 2000 acknowledgements")
        }
    }
}
