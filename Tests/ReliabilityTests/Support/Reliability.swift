import CairnTestSupport
import Foundation
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Sizes, seeds and reports shared by the reliability suites. Docs/Testing.md explains how to
// run them, what each proves and how to replay a failing case.

/// How big the suites run and where their seeds come from.
///
/// `make test` runs the short sizes; `make torture` sets `CAIRN_TORTURE=1` for the full ones.
/// Every size can be overridden with `CAIRN_<NAME>`, every base seed with `CAIRN_<NAME>_SEED`,
/// and one case replayed with `CAIRN_<NAME>_CASE` (each suite prints the exact line).
enum Reliability {
    /// Whether the full-size (torture) versions run.
    static let isTorture: Bool = getenvString("CAIRN_TORTURE") == "1"

    /// `CAIRN_<name>` when set, else the torture or the short size.
    static func size(_ name: String, short: Int, torture: Int) -> Int {
        if let text = getenvString("CAIRN_" + name), let value = Int(text) { return value }
        return isTorture ? torture : short
    }

    /// The base seed of a suite: `CAIRN_<name>_SEED` when set (to replay a run), else fresh.
    static func seed(_ name: String) -> UInt64 {
        SeededRandom.seed(fromEnvironment: "CAIRN_\(name)_SEED")
    }

    /// The one case to replay, from `CAIRN_<name>_CASE`, if set.
    static func replayCase(_ name: String) -> String? {
        getenvString("CAIRN_\(name)_CASE")
    }

    /// The seed of case `index` of a run whose base seed is `base`.
    static func caseSeed(_ base: UInt64, _ index: Int) -> UInt64 {
        var random = SeededRandom(seed: base ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
        return random.next()
    }

    /// Prints one line of a suite's report, and appends it to `CAIRN_RELIABILITY_LOG` when
    /// set (`make torture` collects the counts there for Docs/Testing.md).
    static func report(_ suite: String, _ line: String) {
        let text = "[\(suite)] \(line)"
        print(text)
        guard let path = getenvString("CAIRN_RELIABILITY_LOG") else { return }
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array((text + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

/// Counts of named outcomes, printed sorted.
struct OutcomeCounts: CustomStringConvertible {
    private(set) var counts: [String: Int] = [:]

    mutating func add(_ name: String, _ count: Int = 1) { counts[name, default: 0] += count }

    subscript(_ name: String) -> Int { counts[name, default: 0] }

    var total: Int { counts.values.reduce(0, +) }

    var description: String {
        counts.isEmpty ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}

/// Turns a hang into a loud failure: while a guarded step runs past its limit, the process
/// is stopped with a message naming the step (a hang must never look like a slow pass).
///
/// `Sendable`: its state is behind the package's lock.
final class Watchdog: Sendable {
    private let state = ConditionLock<(label: String, deadline: Double)?>(nil)

    init() {
        let thread = Thread { [self] in
            while true {
                usleep(100_000)
                let expired = self.state.withLock { state -> String? in
                    guard let current = state, monotonicNow() > current.deadline else { return nil }
                    return current.label
                }
                if let expired {
                    writeStandardError("watchdog: \(expired) did not finish in time; stopping the process\n")
                    abort()
                }
            }
        }
        thread.start()
    }

    /// Runs `body`; stops the process if it takes longer than `limit` seconds.
    func guarding<Result>(_ label: String, limit: Double = 60, _ body: () throws -> Result) rethrows -> Result {
        state.withLock { $0 = (label, monotonicNow() + limit) }
        defer { state.withLock { $0 = nil } }
        return try body()
    }

    /// One watchdog for the whole process.
    static let shared = Watchdog()
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// A random number below `bound` as an Int.
extension SeededRandom {
    mutating func int(_ bound: Int) -> Int { Int(next(upTo: UInt64(max(bound, 0)))) }

    mutating func int(in range: ClosedRange<Int>) -> Int { range.lowerBound + int(range.count) }

    mutating func chance(_ numerator: Int, in denominator: Int) -> Bool { int(denominator) < numerator }

    mutating func pick<Element>(_ elements: [Element]) -> Element { elements[int(elements.count)] }
}

/// Runs `body(index)` on `count` threads at once and waits for all of them.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            body(index)
            done.leave()
        }.start()
    }
    done.wait()
}

/// Reads a whole file from the real file system.
func readWholeFile(_ path: String) throws -> [UInt8] {
    let file = try PosixFileSystem().open(path, create: false)
    defer { file.close() }
    return try file.read(at: 0, count: try file.size())
}

/// Replaces a file on the real file system (synced when `sync`; tests that only reopen
/// in the same boot need no fsync: the page cache survives a process crash).
func writeWholeFile(_ path: String, _ bytes: [UInt8], sync: Bool = false) throws {
    let file = try PosixFileSystem().open(path, create: true)
    defer { file.close() }
    try file.truncate(to: 0)
    try bytes.withUnsafeBytes { try file.write($0, at: 0) }
    if sync { try file.sync() }
}

/// Copies every regular file of `source` into `destination` (created), recursing into
/// directories. Store directories are small and flat (data.mdb, lock.mdb, LOCK, wal/).
func copyDirectory(_ source: String, to destination: String) throws {
    try PosixFileSystem().createDirectory(destination)
    for name in try PosixFileSystem().contentsOfDirectory(source) {
        var info = stat()
        guard stat(source + "/" + name, &info) == 0 else { continue }
        if info.st_mode & S_IFMT == S_IFDIR {
            try copyDirectory(source + "/" + name, to: destination + "/" + name)
        } else {
            try writeWholeFile(destination + "/" + name, try readWholeFile(source + "/" + name))
        }
    }
}

/// A stable 64-bit hash (FNV-1a) of text, for values that checkers recompute.
func stableHash(_ text: String) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in text.utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01B3
    }
    return hash
}

/// Writes text to standard error with one `write` (no shared C stream involved).
func writeStandardError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
