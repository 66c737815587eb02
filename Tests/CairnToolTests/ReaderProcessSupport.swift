import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Processes for the reader tests: a `cairn ingest` writer fed without end, and `cairn`
// readers that run beside it, each killable with SIGKILL.

/// A running `cairn ingest --writers 1`, fed `key-ROUND-I<TAB>value-ROUND-I` lines without
/// end (`IngestCrashTests.feed`): one writer thread, so its `ok` lines come in commit order.
final class FedIngest {
    let process = Process()
    let round: Int
    private let input = Pipe(), output = Pipe()
    private let stop = StopFlag()
    private let fed = DispatchSemaphore(value: 0)
    private var reader: AcknowledgementReader

    /// `linesPerSecond`: the feed's pace (nil: as fast as the writer takes lines).
    init(store: String, round: Int, linesPerSecond: Int? = nil) throws {
        self.round = round
        process.executableURL = URL(fileURLWithPath: try CairnBinary.require())
        process.arguments = ["ingest", store, "--writers", "1"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        reader = AcknowledgementReader(descriptor: output.fileHandleForReading.fileDescriptor)
        try process.run()
        let descriptor = input.fileHandleForWriting.fileDescriptor
        let stop = self.stop, fed = self.fed
        Thread {
            CairnToolTests.IngestCrashTests.feed(descriptor, round: round, until: stop, linesPerSecond: linesPerSecond)
            fed.signal()
        }.start()
    }

    /// How many lines the writer has acknowledged so far (reading what its pipe holds).
    var acknowledged: Int {
        while reader.readAvailable(waitingMilliseconds: 0, stopWhenIdle: true) {}
        return reader.lines.count
    }

    /// Waits until at least `count` lines are acknowledged (at most `seconds`).
    func waitForAcknowledgements(_ count: Int, seconds: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while reader.lines.count < count && Date() < deadline {
            if !reader.readAvailable(waitingMilliseconds: 20) { break }
        }
        return reader.lines.count >= count
    }

    /// SIGKILLs the writer and returns every line it acknowledged before it died.
    func kill9() -> Int {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let count = acknowledged
        stop.set()
        fed.wait()
        try? input.fileHandleForWriting.close()
        try? output.fileHandleForReading.close()
        return count
    }
}

/// A `cairn` reader started now, its output collected into a file, killable.
final class ReaderRun {
    let process = Process()
    private let scratch: TemporaryDirectory
    private let outputPath: String

    init(_ arguments: [String]) throws {
        scratch = try TemporaryDirectory(purpose: "reader")
        outputPath = scratch.path + "/stdout"
        try Data().write(to: URL(fileURLWithPath: outputPath))
        process.executableURL = URL(fileURLWithPath: try CairnBinary.require())
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit { scratch.remove() }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Waits for the exit; returns the status and standard output's lines.
    func finish() throws -> (status: Int32, lines: [String]) {
        process.waitUntilExit()
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: outputPath)), as: UTF8.self)
        return (process.terminationStatus, text.split(separator: "\n").map(String.init))
    }
}

/// What a scan of `key-ROUND-I<TAB>value-ROUND-I` records shows: per round, how many of its
/// first lines are there, or a description of what breaks the prefix rule.
func prefixesPerRound(_ lines: [String]) -> (counts: [Int: Int], problems: [String]) {
    var indexes: [Int: Set<Int>] = [:]
    var problems: [String] = []
    for line in lines {
        let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
        let fields = parts[0].split(separator: "-")
        guard parts.count == 2, fields.count == 3, fields[0] == "key", let round = Int(fields[1]), let index = Int(fields[2]),
              parts[1] == "value-\(round)-\(index)" else {
            problems.append("a record no writer wrote: \(line)")
            continue
        }
        indexes[round, default: []].insert(index)
    }
    var counts: [Int: Int] = [:]
    for (round, seen) in indexes {
        counts[round] = seen.count
        if seen.max()! != seen.count - 1 {
            problems.append("round \(round): \(seen.count) records but index \(seen.max()!) among them: not a prefix of the commits")
        }
    }
    return (counts, problems)
}
