import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Running the built `cairn` binary from tests: finding it, running it, scratch directories.

/// Every suite of this target runs inside this one, one test at a time: the tests spawn
/// processes, and a pipe descriptor inherited by a sibling test's child would keep a pipe
/// open past the death of the process a test killed.
@Suite(.serialized) enum CairnToolTests {}

/// The `cairn` executable of the build that made this test bundle.
enum CairnBinary {
    /// Its path, or nil when it cannot be found.
    static let path: String? = locate()

    /// The path, or a test failure saying where it was looked for.
    static func require(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(path, "cannot find the cairn executable next to the test bundle (\(executablePath)); build it with 'swift build' or set CAIRN_BINARY", sourceLocation: sourceLocation)
    }

    /// The test bundle's own executable, found through /proc/self/exe.
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/proc/self/exe"
    }

    /// CAIRN_BINARY if set; otherwise `cairn` in the directory of the test bundle's
    /// executable or one of the directories above it (the bundle may be a directory
    /// inside the build directory, as on Darwin).
    private static func locate() -> String? {
        if let explicit = ProcessInfo.processInfo.environment["CAIRN_BINARY"] { return explicit }
        var directory = URL(fileURLWithPath: executablePath).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("cairn").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }
}

/// What a finished `cairn` run left behind.
struct ToolRun: CustomStringConvertible {
    let arguments: [String]
    let status: Int32
    /// Standard output's bytes.
    let outputBytes: [UInt8]
    let errorOutput: String
    /// Whether the run was killed for outliving its time limit (then `status` is 137).
    var timedOut = false

    /// Standard output as UTF-8 (invalid bytes as U+FFFD).
    var output: String { String(decoding: outputBytes, as: UTF8.self) }

    /// Standard output split into lines, without the final empty one.
    var lines: [String] {
        output.split(separator: "\n", omittingEmptySubsequences: false).dropLast(output.hasSuffix("\n") ? 1 : 0).map(String.init)
    }

    var description: String {
        "cairn \(arguments.joined(separator: " ")) exited \(status)\(timedOut ? " (killed: timed out)" : "")\n"
            + "stdout: \(output.prefix(2000))\nstderr: \(errorOutput.prefix(2000))"
    }
}

/// Runs `cairn arguments...` to completion, with `input` on standard input.
func cairn(_ arguments: String..., input: String = "") throws -> ToolRun {
    try cairn(arguments, input: Array(input.utf8))
}

/// Runs `cairn` with `arguments` to completion, with `input` on standard input.
func cairn(_ arguments: [String], input: String = "") throws -> ToolRun {
    try cairn(arguments, input: Array(input.utf8))
}

/// Runs `cairn` with `arguments` and the bytes `input` on standard input; kills it (SIGKILL)
/// when it runs longer than `timeout` seconds, so a hang fails the test instead of the run.
func cairn(_ arguments: [String], input: [UInt8], timeout: Double = 120) throws -> ToolRun {
    try run(executable: try CairnBinary.require(), arguments, input: input, environment: nil, timeout: timeout)
}

/// Runs `/bin/sh -c script` (redirections such as `>&-` close descriptors in the child for
/// real), with `$CAIRN` the binary under test and `variables` in the environment.
func shell(_ script: String, _ variables: [String: String] = [:], timeout: Double = 120) throws -> ToolRun {
    var environment = ProcessInfo.processInfo.environment
    environment["CAIRN"] = try CairnBinary.require()
    for (name, value) in variables { environment[name] = value }
    return try run(executable: "/bin/sh", ["-c", script], input: [], environment: environment, timeout: timeout)
}

private func run(executable: String, _ arguments: [String], input: [UInt8], environment: [String: String]?,
                 timeout: Double) throws -> ToolRun {
    let scratch = try TemporaryDirectory(purpose: "run")
    defer { scratch.remove() }
    let outputPath = scratch.path + "/stdout", errorPath = scratch.path + "/stderr", inputPath = scratch.path + "/stdin"
    try Data(input).write(to: URL(fileURLWithPath: inputPath))
    try Data().write(to: URL(fileURLWithPath: outputPath))
    try Data().write(to: URL(fileURLWithPath: errorPath))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    // Files rather than pipes: nothing to drain while the process runs.
    let inputHandle = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
    let outputHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
    let errorHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
    defer {
        try? inputHandle.close()
        try? outputHandle.close()
        try? errorHandle.close()
    }
    process.standardInput = inputHandle
    process.standardOutput = outputHandle
    process.standardError = errorHandle
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    var timedOut = false
    while process.isRunning {
        if Date() > deadline {
            kill(process.processIdentifier, SIGKILL)
            timedOut = true
            break
        }
        usleep(2_000)
    }
    process.waitUntilExit()
    let status = process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    return ToolRun(arguments: arguments, status: status,
                   outputBytes: Array(try Data(contentsOf: URL(fileURLWithPath: outputPath))),
                   errorOutput: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errorPath)), as: UTF8.self),
                   timedOut: timedOut)
}

/// A fresh directory under the system's temporary directory.
struct TemporaryDirectory {
    let path: String

    /// Creates `cairn-tool-tests-PURPOSE-XXXXXX` (unique) under the temporary directory.
    init(purpose: String) throws {
        let template = FileManager.default.temporaryDirectory.path + "/cairn-tool-tests-\(purpose)-XXXXXX"
        var bytes = Array(template.utf8CString)
        let made = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = try #require(made.map { String(cString: $0) }, "mkdtemp(\(template)) failed: errno \(errno)")
    }

    /// Deletes the directory and everything in it.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// SplitMix64: a small seeded generator, so a failing run can be repeated from its seed.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

extension SeededRandom {
    /// The generator of a randomised test and its seed: `variable` from the environment when
    /// set, a random seed otherwise; prints the seed with how to rerun it.
    static func announced(_ variable: String, by suite: String) -> (random: SeededRandom, seed: UInt64) {
        let seed = ProcessInfo.processInfo.environment[variable].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        print("\(suite) seed \(seed) (rerun with \(variable)=\(seed))")
        return (SeededRandom(seed: seed), seed)
    }
}
