import CairnTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Child processes for the suites that must survive a SIGKILL or a crash inside LMDB: this
// test bundle runs itself again with only `ChildProcessEntry` selected and CAIRN_CHILD_ROLE
// naming the job. One binary, no helper executable to build: `make test`, `make torture`,
// `make tsan` and `make asan` all get workers built the same way as the tests.

/// The entry point of every child process; a no-op in a normal test run.
@Suite struct ChildProcessEntry {
    /// Not a test of its own: runs the role a parent asked for, then exits with its status.
    @Test func childEntry() {
        guard let role = getenvString("CAIRN_CHILD_ROLE") else { return }
        let status: Int32
        switch role {
        case KillWorker.role: status = KillWorker.main()
        case ReaderHolder.role: status = ReaderHolder.main()
        case LMDBCorruptionChild.role: status = LMDBCorruptionChild.main()
        case OpenAndReadChild.role: status = OpenAndReadChild.main()
        case MigrationPauseChild.role: status = MigrationPauseChild.main()
        case DiskFullWorker.role: status = DiskFullWorker.main()
        case HistorySaverChild.role: status = HistorySaverChild.main()
        default:
            writeStandardError("unknown CAIRN_CHILD_ROLE \(role)\n")
            status = 2
        }
        exit(status)
    }
}

/// Starting, killing and reaping child processes.
enum ChildProcess {
    /// The test bundle's executable.
    static let bundlePath: String = {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/proc/self/exe"
    }()

    /// An argument the parent passed, from `CAIRN_CHILD_<name>`.
    static func argument(_ name: String) -> String {
        guard let value = getenvString("CAIRN_CHILD_" + name) else {
            writeStandardError("child: missing CAIRN_CHILD_\(name)\n")
            exit(2)
        }
        return value
    }

    /// Starts this bundle as a child running `role`; `arguments` reach it as
    /// `CAIRN_CHILD_<key>`. Standard output and error go to `outputPath`.
    static func start(role: String, arguments: [String: String], outputPath: String) throws -> Process {
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bundlePath)
        process.arguments = ["--testing-library", "swift-testing", "--filter", "ChildProcessEntry"]
        var environment = ProcessInfo.processInfo.environment
        environment["CAIRN_CHILD_ROLE"] = role
        // A child that crashes (LMDB on a damaged file) should die at once, not wait for
        // Swift's backtracer, which can take seconds and outlive it.
        environment["SWIFT_BACKTRACE"] = environment["SWIFT_BACKTRACE"] ?? "enable=no"
        for (key, value) in arguments { environment["CAIRN_CHILD_" + key] = value }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return process
    }

    /// How a child ended.
    enum Ending: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        var description: String {
            switch self {
            case .exited(let status): return "exited with status \(status)"
            case .signaled(let signal): return "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    /// Waits for `process`; SIGKILLs it first when it has not ended within `timeout` seconds.
    /// Returns how it ended and whether the timeout fired.
    static func wait(_ process: Process, timeout: Double) -> (ending: Ending, timedOut: Bool) {
        let deadline = monotonicNow() + timeout
        var timedOut = false
        while process.isRunning {
            if monotonicNow() > deadline {
                kill(process.processIdentifier, SIGKILL)
                timedOut = true
                break
            }
            usleep(2_000)
        }
        process.waitUntilExit()
        let ending: Ending = process.terminationReason == .uncaughtSignal
            ? .signaled(process.terminationStatus) : .exited(process.terminationStatus)
        return (ending, timedOut)
    }

    /// SIGKILLs `process` and reaps it.
    static func kill9(_ process: Process) -> Ending {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal
            ? .signaled(process.terminationStatus) : .exited(process.terminationStatus)
    }

    /// Lines of a file that end with a newline (a line torn by a kill is left out).
    static func completeLines(_ path: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        var lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // after the last newline: empty, or a torn line
        return lines.map(String.init)
    }

    /// A sanitizer's report in a child's output (the child is built like the tests).
    /// With `ignoringDeadlySignals`, ASan's reports of a SEGV, BUS or ABRT are left out: the
    /// LMDB corruption sweep counts those crashes itself.
    static func sanitizerReport(_ outputPath: String, ignoringDeadlySignals: Bool = false) -> String? {
        guard let data = FileManager.default.contents(atPath: outputPath) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        for marker in ["WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "runtime error:"] {
            var searchFrom = text.startIndex
            while let found = text.range(of: marker, range: searchFrom..<text.endIndex) {
                let report = String(text[found.lowerBound...].prefix(2000))
                searchFrom = found.upperBound
                let firstLine = report.prefix { $0 != "\n" }
                if ignoringDeadlySignals && ["SEGV", "BUS", "ABRT", "deadly signal"].contains(where: { firstLine.contains($0) }) {
                    continue
                }
                return report
            }
        }
        return nil
    }

    /// The deadly signal a sanitizer caught in a child, named from its report (under ASan a
    /// SEGV ends the child with status 1, not by the signal).
    static func sanitizerCaughtSignal(_ outputPath: String) -> String? {
        guard let data = FileManager.default.contents(atPath: outputPath) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        for signal in ["SEGV", "BUS", "ABRT"] where text.contains("Sanitizer: \(signal)") || text.contains("Sanitizer:DEADLYSIGNAL") && text.contains(signal) {
            return "SIG\(signal) (caught by the sanitizer)"
        }
        return nil
    }
}

/// Appends whole lines to a file with one `write` each, so a SIGKILL can tear at most the
/// line being written, and a line is in the file as soon as `line` returns (the page cache
/// survives a process crash: no fsync needed).
///
/// `@unchecked Sendable`: the descriptor is immutable; O_APPEND writes are atomic.
final class LineWriter: @unchecked Sendable {
    private let descriptor: Int32

    init(path: String) {
        descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        precondition(descriptor >= 0, "cannot open \(path): errno \(errno)")
    }

    func line(_ text: String) {
        let bytes = Array((text + "\n").utf8)
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + done, $0.count - done) }
            if wrote < 0 {
                if errno == EINTR { continue }
                return
            }
            done += wrote
        }
    }
}
