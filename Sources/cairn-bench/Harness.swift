import Foundation
import KVEngine

/// One timed run of one system: how many operations, how long, and extra figures.
struct Measurement {
    var operations: Int
    var seconds: Double
    var extra: [String: Double] = [:]
    /// Cairn's overlay during the run (nil for peers).
    var overlay: OverlayFigures? = nil

    var operationsPerSecond: Double { seconds > 0 ? Double(operations) / seconds : 0 }
}

/// A system under test in one workload: `prepare` runs untimed before each round,
/// `run` is timed by itself and returns how many operations it did.
struct Contender {
    let system: String
    var prepare: (Int) throws -> Void = { _ in }
    let run: (Int) throws -> Measurement
    var finish: () -> Void = {}
}

/// A workload's result across rounds, per system.
struct WorkloadResult: Codable {
    var name: String
    var unit: String
    var rounds: Int
    var systems: [SystemResult]
    var ratios: [String: Double]
    var peakRSSMegabytes: Double
    /// Cairn's overlay over every round: the most it held against its bound.
    var overlay: OverlayFigures?
    var notes: [String]

    struct SystemResult: Codable {
        var system: String
        var median: Double
        var minimum: Double
        var maximum: Double
        var extra: [String: Double]
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Times `body` and returns seconds.
func timed(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return now() - start
}

/// How full Cairn's overlay got (committed, not yet applied to LMDB) against its bound,
/// from `Store.stats()` at the end of a run.
struct OverlayFigures: Codable {
    var peakBytes: Int
    var largestGroupBytes: Int
    var limitBytes: Int
    /// Commits wait at `limitBytes`; a group already past that check may add its own bytes.
    var withinBound: Bool

    init(_ store: Store) throws {
        let stats = try store.stats()
        self.init(peakBytes: stats.overlayPeakBytes, largestGroupBytes: stats.overlayLargestGroupBytes,
                  limitBytes: stats.overlayLimit)
    }

    init(peakBytes: Int, largestGroupBytes: Int, limitBytes: Int) {
        self.peakBytes = peakBytes
        self.largestGroupBytes = largestGroupBytes
        self.limitBytes = limitBytes
        withinBound = peakBytes <= limitBytes + largestGroupBytes
    }

    /// Both runs' figures: any run over its bound makes the whole over it.
    func merged(with other: OverlayFigures?) -> OverlayFigures {
        guard let other else { return self }
        var merged = OverlayFigures(peakBytes: max(peakBytes, other.peakBytes),
                                    largestGroupBytes: max(largestGroupBytes, other.largestGroupBytes),
                                    limitBytes: max(limitBytes, other.limitBytes))
        merged.withinBound = withinBound && other.withinBound
        return merged
    }

    var summary: String {
        let size = { (bytes: Int) -> String in
            if bytes < 1 << 20 { return "\((bytes + 1023) >> 10) KiB" }
            return String(format: bytes < 10 << 20 ? "%.1f MiB" : "%.0f MiB", Double(bytes) / Double(1 << 20))
        }
        return "overlay peak \(size(peakBytes)) of \(size(limitBytes))" + (withinBound ? "" : ", OVER ITS BOUND")
    }
}

/// Peak resident memory since the last reset, in MiB (Linux's VmHWM).
func peakRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let digits = line.split(separator: " ").compactMap { Double($0) }
        return (digits.first ?? 0) / 1024
    }
    return 0
}

/// Resets the peak so each workload reports its own (Linux 4.0+: write 5 to clear_refs).
func resetPeakRSS() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

/// Runs the contenders interleaved (A B C A B C …) for `rounds` rounds; reports medians
/// and the ratio of Cairn's median to each peer's.
func runWorkload(name: String, unit: String, rounds: Int, contenders: [Contender], notes: [String] = [],
                 log: (String) -> Void) throws -> WorkloadResult {
    resetPeakRSS()
    var samples: [String: [Measurement]] = [:]
    for round in 0..<rounds {
        for contender in contenders {
            try contender.prepare(round)
            let measurement = try contender.run(round)
            samples[contender.system, default: []].append(measurement)
            log(String(format: "  %@ round %d %@: %.0f %@", name, round + 1, contender.system,
                       measurement.operationsPerSecond, unit))
        }
    }
    for contender in contenders { contender.finish() }
    var systems: [WorkloadResult.SystemResult] = []
    for contender in contenders {
        let runs = samples[contender.system] ?? []
        let rates = runs.map(\.operationsPerSecond)
        var extra: [String: Double] = [:]
        for key in Set(runs.flatMap { $0.extra.keys }) {
            extra[key] = median(runs.compactMap { $0.extra[key] })
        }
        systems.append(.init(system: contender.system, median: median(rates), minimum: rates.min() ?? 0,
                             maximum: rates.max() ?? 0, extra: extra))
    }
    var overlay: OverlayFigures? = nil
    for measurement in samples.values.joined() {
        if let figures = measurement.overlay { overlay = figures.merged(with: overlay) }
    }
    var ratios: [String: Double] = [:]
    if let cairn = systems.first(where: { $0.system.hasPrefix("cairn") }) {
        for peer in systems where !peer.system.hasPrefix("cairn") && peer.median > 0 {
            ratios[peer.system] = cairn.median / peer.median
        }
    }
    return WorkloadResult(name: name, unit: unit, rounds: rounds, systems: systems, ratios: ratios,
                          peakRSSMegabytes: peakRSSMegabytes(), overlay: overlay, notes: notes)
}

func render(_ result: WorkloadResult) -> String {
    let overlay = result.overlay.map { "; " + $0.summary } ?? ""
    var lines = ["\(result.name) (\(result.unit), median of \(result.rounds) interleaved rounds; peak RSS \(String(format: "%.0f", result.peakRSSMegabytes)) MiB\(overlay))"]
    for system in result.systems {
        let name = system.system.padding(toLength: 14, withPad: " ", startingAt: 0)
        var line = "  " + name + String(format: "%12.0f   (min %.0f, max %.0f)", system.median, system.minimum, system.maximum)
        if let ratio = result.ratios[system.system] { line += String(format: "   cairn/this = %.2fx", ratio) }
        for (key, value) in system.extra.sorted(by: { $0.key < $1.key }) {
            line += String(format: "   %@ %.3f", key, value)
        }
        lines.append(line)
    }
    lines += result.notes.map { "  note: \($0)" }
    return lines.joined(separator: "\n")
}
