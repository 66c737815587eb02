import Foundation

// cairn-bench: Cairn against raw LMDB and SQLite, side by side in one run.
// Every workload runs the same data through each system in the same process, interleaved
// (A B C … A B C …), and reports medians and Cairn's ratio to each peer.

let usage = """
usage: cairn-bench [--quick] [--only NAME[,NAME…]] [--rounds N] [--json FILE] [--svg FILE]

  --quick       small sizes: a smoke run of every workload in a few seconds
  --only        run only these workloads: \(WorkloadCatalog.names.joined(separator: ", "))
  --rounds N    interleaved rounds per workload (default 3, and 9 for the context workloads,
                whose rounds take milliseconds; at least 3 for medians)
  --json FILE   also write the results as JSON
  --svg FILE    also measure commits/s for 1, 2, 4, 8, 16, 32 writers and draw them
"""

// A reader process of the reader workloads (ReaderChild.swift), not a benchmark run.
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == ReaderChild.flag {
    ReaderChild.main(Array(CommandLine.arguments.dropFirst(2)))
}
// The observer process of notification-latency (HistoryWorkloads.swift).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == HistoryWorkloads.observerFlag {
    HistoryWorkloads.observerMain(Array(CommandLine.arguments.dropFirst(2)))
}

var sizes = Sizes.full
var only: Set<String>? = nil
var jsonPath: String? = nil
var svgPath: String? = nil
var explicitRounds: Int? = nil
var arguments = Array(CommandLine.arguments.dropFirst())
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--quick": sizes = .quick
    case "--only": only = Set((arguments.first ?? "").split(separator: ",").map(String.init)); arguments = Array(arguments.dropFirst())
    case "--rounds": explicitRounds = max(1, Int(arguments.first ?? "") ?? 3); arguments = Array(arguments.dropFirst())
    case "--json": jsonPath = arguments.first; arguments = Array(arguments.dropFirst())
    case "--svg": svgPath = arguments.first; arguments = Array(arguments.dropFirst())
    case "-h", "--help": print(usage); exit(0)
    default:
        FileHandle.standardError.write(Data("cairn-bench: unknown argument \(argument)\n\(usage)\n".utf8))
        exit(1)
    }
}
if let explicitRounds {
    sizes.rounds = explicitRounds
    sizes.shortRounds = explicitRounds
}
if let only, !only.isSubset(of: Set(WorkloadCatalog.names)) {
    FileHandle.standardError.write(Data("cairn-bench: unknown workload in --only; known: \(WorkloadCatalog.names.joined(separator: ", "))\n".utf8))
    exit(1)
}

func log(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

// Workloads remove their own stores; this removes the root they were made in, on every exit.
atexit { removeDirectory(scratchRoot) }

let machine = MachineDescription.current()
print("cairn-bench \(sizes.records == Sizes.quick.records ? "(quick) " : "")on \(machine.summary)")
print("")
var results: [WorkloadResult] = []
do {
    for workload in WorkloadCatalog.all(sizes) where only?.contains(workload.name) ?? true {
        log("running \(workload.name)")
        let result = try workload.run(log)
        results.append(result)
        print(render(result))
        print("")
    }
    if let svgPath {
        let writers = [1, 2, 4, 8, 16, 32]
        var series: [String: [Double]] = [:]
        for count in writers {
            log("chart: \(count) writers")
            let result = try runWorkload(name: "commit-\(count)", unit: "commits/s", rounds: sizes.rounds,
                                         contenders: KeyValueWorkloads.commits(writers: count, total: sizes.sweepCommits), log: log)
            for system in result.systems { series[system.system, default: []].append(system.median) }
        }
        let order = ["cairn", "lmdb", "sqlite-full", "sqlite-normal"]
        let labels = ["sqlite-normal": "sqlite-normal (no sync)"]
        let svg = Chart.svg(title: "One-record commits per second (\(machine.cores) cores)", writers: writers,
                            series: order.compactMap { name in series[name].map { (labels[name] ?? name, $0) } })
        try svg.write(toFile: svgPath, atomically: true, encoding: .utf8)
        print("chart: \(svgPath)")
    }
    if let jsonPath {
        let report = BenchReport(date: ISO8601DateFormatter().string(from: Date()), machine: machine.summary, results: results)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(report).write(to: URL(fileURLWithPath: jsonPath))
        print("json: \(jsonPath)")
    }
} catch {
    FileHandle.standardError.write(Data("cairn-bench: \(error)\n".utf8))
    exit(3)
}
// The overlay's bound is part of what the benchmark shows: a run that broke it fails.
let overBound = results.filter { $0.overlay?.withinBound == false }.map(\.name)
if !overBound.isEmpty {
    FileHandle.standardError.write(Data("cairn-bench: the overlay went over its bound in \(overBound.joined(separator: ", "))\n".utf8))
    exit(4)
}

struct BenchReport: Codable {
    var date: String
    var machine: String
    var results: [WorkloadResult]
}

struct MachineDescription {
    var cores: Int
    var summary: String

    static func current() -> MachineDescription {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let memory = ProcessInfo.processInfo.physicalMemory >> 30
        return MachineDescription(cores: cores, summary: "\(cores) cores (\(cpu)), \(memory) GiB, Linux")
    }
}
