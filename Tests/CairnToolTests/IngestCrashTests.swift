import Foundation
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Kill `cairn ingest` with SIGKILL at random moments and check that every commit it
// acknowledged survives, on one store across rounds, so each recovery runs on top of the
// previous rounds' recoveries.

extension CairnToolTests {
    @Suite struct IngestCrashTests {
        static let rounds = 24
        static let writers = 4

        @Test(.timeLimit(.minutes(3)))
        func everyAcknowledgedCommitSurvivesSIGKILL() throws {
            _ = try CairnBinary.require()
            // A write to the pipe of a killed ingest must fail with EPIPE, not kill the tests.
            signal(SIGPIPE, SIG_IGN)
            var (random, seed) = SeededRandom.announced("CAIRN_CRASH_SEED", by: "IngestCrashTests")
            let directory = try TemporaryDirectory(purpose: "crash")
            defer { directory.remove() }
            let storePath = directory.path + "/store"

            var acknowledged: [String: String] = [:]
            var tornTails = 0
            for round in 0..<Self.rounds {
                let delay = Int.random(in: 20...300, using: &random)
                // Odd rounds time the kill from the first acknowledgement, so that a slow start
                // (a sanitizer build on a loaded machine) still kills mid-ingest; even rounds
                // from the spawn, so that kills during start-up stay covered too.
                let killed = try Self.ingestAndKill(
                    storePath: storePath, round: round, afterMilliseconds: delay, fromFirstAcknowledgement: round % 2 == 1)
                #expect(killed.wasKilled, "round \(round) (seed \(seed)): ingest ended on its own; stderr: \(killed.errorOutput)")
                #expect(killed.unexpectedLines.isEmpty, "round \(round): unexpected output \(killed.unexpectedLines.prefix(5))")
                var duplicates = 0
                for key in killed.acknowledgedKeys {
                    let value = "value-" + key.dropFirst("key-".count)
                    if acknowledged.updateValue(value, forKey: key) != nil { duplicates += 1 }
                }
                #expect(duplicates == 0, "round \(round): \(duplicates) keys acknowledged twice")

                let store = try Store(directory: storePath)
                let recovery = store.recoveryReport
                if recovery.tornTail != nil { tornTails += 1 }
                let snapshot = try store.snapshot()
                var lost: [String] = []
                for (key, value) in acknowledged {
                    let record = try snapshot.get(key)
                    if record?.value != Array(value.utf8) { lost.append(key) }
                }
                var strangers: [String] = []
                var records = 0
                try snapshot.forEach { key, value, _ in
                    records += 1
                    let key = String(decoding: key, as: UTF8.self)
                    if !key.hasPrefix("key-") || String(decoding: value, as: UTF8.self) != "value-" + key.dropFirst(4) {
                        strangers.append(key)
                    }
                    return true
                }
                snapshot.close()
                store.close()
                #expect(lost.isEmpty, "round \(round) (seed \(seed)): \(lost.count) acknowledged keys lost, e.g. \(lost.sorted().prefix(5))")
                #expect(strangers.isEmpty, "round \(round) (seed \(seed)): records that were never written: \(strangers.prefix(5))")
                #expect(records >= acknowledged.count)

                let check = try Store.check(directory: storePath)
                #expect(check.isSound, "round \(round) (seed \(seed)): check found \(check.problems)")
                print("""
                    round \(round): killed after \(delay) ms; \(killed.acknowledgedKeys.count) acknowledged \
                    (\(killed.drainedAfterKill) read after the kill); replayed \(recovery.replayedCommits) commits; \
                    torn tail \(recovery.tornTail == nil ? "no" : "yes"); \(records) records, \
                    \(acknowledged.count) acknowledged so far
                    """)
            }
            print("IngestCrashTests: \(Self.rounds) rounds, \(acknowledged.count) acknowledged keys, \(tornTails) torn tails cut, seed \(seed)")
            #expect(acknowledged.count > 0, "no round acknowledged anything: the test exercised nothing")
        }

        /// What one killed `ingest` acknowledged.
        struct KilledIngest {
            var acknowledgedKeys: [String] = []
            var drainedAfterKill = 0
            var unexpectedLines: [String] = []
            var wasKilled = false
            var errorOutput = ""
        }

        /// Starts `cairn ingest`, feeds it lines without end, collects its `ok KEY` lines,
        /// SIGKILLs it after `milliseconds` (counted from its first `ok` line when
        /// `fromFirstAcknowledgement`, waiting at most 30 s for that line), and collects what it
        /// wrote before dying.
        static func ingestAndKill(
            storePath: String, round: Int, afterMilliseconds milliseconds: Int, fromFirstAcknowledgement: Bool
        ) throws -> KilledIngest {
            let errorFile = try TemporaryDirectory(purpose: "crash-stderr")
            defer { errorFile.remove() }
            let errorPath = errorFile.path + "/stderr"
            try Data().write(to: URL(fileURLWithPath: errorPath))
            let errorHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
            defer { try? errorHandle.close() }

            let input = Pipe(), output = Pipe()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try CairnBinary.require())
            process.arguments = ["ingest", storePath, "--writers", "\(writers)"]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = errorHandle
            let started = DispatchTime.now().uptimeNanoseconds
            try process.run()

            let stop = StopFlag()
            let fed = DispatchSemaphore(value: 0)
            let inputDescriptor = input.fileHandleForWriting.fileDescriptor
            Thread {
                feed(inputDescriptor, round: round, until: stop)
                fed.signal()
            }.start()

            var result = KilledIngest()
            var reader = AcknowledgementReader(descriptor: output.fileHandleForReading.fileDescriptor)
            var endedEarly = false
            var from = started
            if fromFirstAcknowledgement {
                let startLimit = started + 30_000_000_000
                while reader.lines.isEmpty {
                    let now = DispatchTime.now().uptimeNanoseconds
                    guard now < startLimit else { break }
                    if !reader.readAvailable(waitingMilliseconds: Int32((startLimit - now + 999_999) / 1_000_000)) {
                        endedEarly = true
                        break
                    }
                }
                from = DispatchTime.now().uptimeNanoseconds
            }
            let deadline = from + UInt64(milliseconds) * 1_000_000
            while !endedEarly {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { break }
                if !reader.readAvailable(waitingMilliseconds: Int32((deadline - now + 999_999) / 1_000_000)) {
                    endedEarly = true
                    break
                }
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let beforeKill = reader.lines.count
            // The process is dead: what is left in the pipe was written before it died.
            if !endedEarly { while reader.readAvailable(waitingMilliseconds: 0, stopWhenIdle: true) {} }
            stop.set()
            fed.wait()
            try? input.fileHandleForWriting.close()
            try? output.fileHandleForReading.close()

            for line in reader.lines {
                if line.hasPrefix("ok key-\(round)-") {
                    result.acknowledgedKeys.append(String(line.dropFirst(3)))
                } else {
                    result.unexpectedLines.append(line)
                }
            }
            result.drainedAfterKill = reader.lines.count - beforeKill
            result.wasKilled = process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
            try? errorHandle.synchronize()
            result.errorOutput = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            return result
        }

        /// Writes `key-ROUND-I<TAB>value-ROUND-I` lines to `descriptor` until `stop` is set or
        /// the reader is gone. Pieces stay within PIPE_BUF so a write after POLLOUT never blocks.
        /// `linesPerSecond`: at most that many lines a second (nil: as fast as ingest takes them).
        static func feed(_ descriptor: Int32, round: Int, until stop: StopFlag, linesPerSecond: Int? = nil) {
            var index = 0
            var pending: [UInt8] = []
            let started = Date()
            while !stop.isSet {
                if pending.isEmpty {
                    if let linesPerSecond {
                        let ahead = Double(index) / Double(linesPerSecond) - Date().timeIntervalSince(started)
                        if ahead > 0 { usleep(UInt32(min(ahead, 0.05) * 1e6)); continue }
                    }
                    for _ in 0..<64 {
                        pending += Array("key-\(round)-\(index)\tvalue-\(round)-\(index)\n".utf8)
                        index += 1
                    }
                }
                var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&poller, 1, 20)
                if ready == 0 || (ready < 0 && errno == EINTR) { continue }
                if ready < 0 || poller.revents & Int16(POLLERR | POLLHUP) != 0 { return }
                let written = pending.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return  // EPIPE: ingest is dead
                }
                pending.removeFirst(written)
            }
        }
    }
}

/// Collects complete lines from a pipe; a partial last line is never counted.
struct AcknowledgementReader {
    let descriptor: Int32
    private(set) var lines: [String] = []
    private var partial: [UInt8] = []

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Waits up to `waitingMilliseconds` for data and reads what is there. Returns false
    /// at the end of the stream, or, with `stopWhenIdle`, when nothing was waiting.
    mutating func readAvailable(waitingMilliseconds: Int32, stopWhenIdle: Bool = false) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, waitingMilliseconds)
        if ready < 0 { return errno == EINTR }
        if ready == 0 { return !stopWhenIdle }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 { return errno == EINTR }
        if count == 0 { return false }
        partial += buffer[..<count]
        while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: partial[..<newline], as: UTF8.self))
            partial.removeFirst(newline + 1)
        }
        return true
    }
}

/// A flag one thread sets and another polls.
///
/// `Sendable`: the flag is behind the package's lock.
final class StopFlag: Sendable {
    private let flag = ConditionLock<Bool>(false)

    var isSet: Bool { flag.withLock { $0 } }

    func set() { flag.withLock { $0 = true } }
}
