import Contexts
import Foundation
import KVEngine

/// Remote change notifications across processes: how long after a save begins in this process
/// (the writer) a read-only `ObjectStore` in another process (`cairn-bench --history-observer`,
/// started through `ReaderChild.spawnSelf`) has the save's transaction from `remoteChanges()`.
///
/// Both processes read CLOCK_MONOTONIC, one clock for the whole machine. The time runs from
/// the moment `save()` is called, not from its return: the engine publishes a commit to other
/// processes before the save returns, so an observer can hold the transaction before the
/// writer reads its clock again, and a time from the return can be negative. The figure so
/// includes the save itself (for `.full`, its fdatasync); the save's own median is beside it.
enum HistoryWorkloads {
    static let observerFlag = "--history-observer"

    static func notificationLatency(saves: Int, log: (String) -> Void) throws -> WorkloadResult {
        var systems: [WorkloadResult.SystemResult] = []
        for (system, durability) in [("cairn-full", SaveDurability.full), ("cairn-normal", SaveDurability.normal)] {
            log("  \(system): \(saves) saves, observed from another process")
            let (latencies, saveTimes) = try measure(saves: saves, durability: durability)
            let microseconds = latencies.map { $0 * 1e6 }.sorted()
            systems.append(WorkloadResult.SystemResult(
                system: system, median: median(microseconds), minimum: microseconds.first ?? 0,
                maximum: microseconds.last ?? 0,
                extra: ["p99-us": percentile(microseconds, 0.99), "save-us": median(saveTimes.map { $0 * 1e6 })]))
        }
        return WorkloadResult(
            name: "notification-latency", unit: "µs", rounds: saves, systems: systems, ratios: [:],
            peakRSSMegabytes: peakRSSMegabytes(), overlay: nil,
            notes: ["\(saves) one-object saves, one at a time, by an ObjectStore tracking history: from save() being called in "
                + "this process to the transaction arriving from remoteChanges() of a read-only ObjectStore in another process "
                + "(the engine publishes a commit before save() returns, so the time includes the save: save-us is its median); "
                + "median, min, max and p99 in microseconds"])
    }

    static let schema: Schema = {
        do {
            return try Schema([EntityDescription("Note", attributes: [AttributeDescription("number", .int)])])
        } catch {
            fatalError("the notification schema is invalid: \(error)")
        }
    }()

    /// Seconds from each save's call to its arrival in the observer process, and each save's
    /// own seconds.
    private static func measure(saves: Int, durability: SaveDurability) throws -> (latencies: [Double], saves: [Double]) {
        let directory = scratchDirectory("cairn-notify")
        defer { removeDirectory(directory) }
        var options = ObjectStore.Options()
        options.storeOptions = cairnOptions()
        options.saveDurability = durability
        options.tracksHistory = true
        let writer = try ObjectStore(directory: directory, schema: schema, options: options)
        defer { writer.close() }

        // The observer opens the store the writer made, beside it; its lines arrive on a pipe.
        let input = Pipe()
        let child = try ReaderChild.spawnSelf([observerFlag, directory], input: input)
        let arrivals = Arrivals()
        child.output.fileHandleForReading.readabilityHandler = { handle in arrivals.take(handle.availableData) }
        defer {
            // End of input tells the observer to exit.
            try? input.fileHandleForWriting.close()
            child.process.waitUntilExit()
            child.output.fileHandleForReading.readabilityHandler = nil
        }
        guard arrivals.wait(for: 0, timeout: 30) != nil else {
            throw BenchError(description: "the observer process did not start within 30 s")
        }
        let context = writer.newBackgroundContext(name: "writer")
        var latencies: [Double] = [], saveTimes: [Double] = []
        latencies.reserveCapacity(saves)
        saveTimes.reserveCapacity(saves)
        for number in 0..<saves {
            let (version, called, returned) = try context.performAndWait {
                context.insert(entity: "Note")["number"] = .int(Int64(number))
                let called = now()
                try context.save()
                return (context.lastDidSaveNotification!.commitVersion!, called, now())
            }
            guard let arrived = arrivals.wait(for: version, timeout: 5) else {
                throw BenchError(description: "no remote change for commit \(version) in the observer process within 5 s")
            }
            latencies.append(arrived - called)
            saveTimes.append(returned - called)
        }
        return (latencies, saveTimes)
    }

    /// The observer's side: opens `arguments[0]` read-only, prints `0 TIME` once its stream is
    /// listening and `VERSION TIME` for each transaction it is told of, and exits at the end of
    /// its input.
    static func observerMain(_ arguments: [String]) -> Never {
        guard arguments.count == 1 else {
            FileHandle.standardError.write(Data("cairn-bench: bad \(observerFlag) arguments \(arguments)\n".utf8))
            exit(1)
        }
        var options = ObjectStore.Options()
        options.storeOptions = cairnOptions()
        options.readOnly = true
        options.observesRemoteChanges = true
        do {
            let objects = try ObjectStore(directory: arguments[0], schema: schema, options: options)
            let stream = objects.remoteChanges()
            Task.detached {
                for await transaction in stream {
                    let arrived = now()
                    FileHandle.standardOutput.write(Data("\(transaction.commitVersion) \(arrived)\n".utf8))
                }
            }
            FileHandle.standardOutput.write(Data("0 \(now())\n".utf8))
            _ = FileHandle.standardInput.readDataToEndOfFile()
            objects.close()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("cairn-bench observer: \(error)\n".utf8))
            exit(3)
        }
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }

    /// Arrival times by commit version, read from the observer's lines and handed to the writer.
    ///
    /// `@unchecked Sendable`: `times` and `pending` are only touched under `condition`.
    final class Arrivals: @unchecked Sendable {
        private let condition = NSCondition()
        private var times: [UInt64: Double] = [:]
        /// Bytes of a line not ended yet.
        private var pending: [UInt8] = []

        /// Takes bytes from the observer's output; each whole `VERSION TIME` line is an arrival.
        func take(_ data: Data) {
            condition.lock()
            defer { condition.unlock() }
            pending += data
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let fields = String(decoding: pending[..<end], as: UTF8.self).split(separator: " ")
                pending.removeSubrange(...end)
                if fields.count == 2, let version = UInt64(fields[0]), let time = Double(fields[1]) {
                    times[version] = time
                }
            }
            condition.broadcast()
        }

        func wait(for version: UInt64, timeout: Double) -> Double? {
            let deadline = Date(timeIntervalSinceNow: timeout)
            condition.lock()
            defer { condition.unlock() }
            while times[version] == nil, condition.wait(until: deadline) {}
            return times.removeValue(forKey: version)
        }
    }
}
