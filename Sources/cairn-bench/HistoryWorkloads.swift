import Contexts
import Foundation
import KVEngine

/// Remote change notifications: how long after a save returns another object store's
/// `remoteChanges` stream yields its transaction.
///
/// Two ObjectStores on one engine store in this process, the writer tracking history and the
/// observer watching for remote changes: a second process cannot open the store while the
/// writer holds it (the process lock) until read-only stores exist. The observer's watcher
/// runs the same path it would in another process (inotify on the log directory, then the
/// newest commit version, then a range read of the history).
enum HistoryWorkloads {
    static func notificationLatency(saves: Int, log: (String) -> Void) throws -> WorkloadResult {
        var systems: [WorkloadResult.SystemResult] = []
        for (system, durability) in [("cairn-full", SaveDurability.full), ("cairn-normal", SaveDurability.normal)] {
            log("  \(system): \(saves) saves")
            let latencies = try measure(saves: saves, durability: durability).sorted()
            let microseconds = latencies.map { $0 * 1e6 }
            systems.append(WorkloadResult.SystemResult(
                system: system, median: median(microseconds), minimum: microseconds.first ?? 0,
                maximum: microseconds.last ?? 0, extra: ["p99-us": percentile(microseconds, 0.99)]))
        }
        return WorkloadResult(
            name: "notification-latency", unit: "µs", rounds: saves, systems: systems, ratios: [:],
            peakRSSMegabytes: peakRSSMegabytes(), overlay: nil,
            notes: ["\(saves) one-object saves, one at a time: from save() returning in one ObjectStore to the transaction "
                + "arriving from remoteChanges() of another ObjectStore on the same engine store (in one process: a second "
                + "process cannot open a store its writer holds yet); median, min, max and p99 in microseconds"])
    }

    /// Seconds from each save's return to its arrival on the observer's stream.
    private static func measure(saves: Int, durability: SaveDurability) throws -> [Double] {
        let directory = scratchDirectory("cairn-notify")
        defer { removeDirectory(directory) }
        let store = try Store(directory: directory, options: cairnOptions())
        let schema = try Schema([EntityDescription("Note", attributes: [AttributeDescription("number", .int)])])
        var options = ObjectStore.Options()
        options.saveDurability = durability
        options.tracksHistory = true
        let writer = try ObjectStore(store: store, schema: schema, options: options)
        options.tracksHistory = false
        options.observesRemoteChanges = true
        let observer = try ObjectStore(store: store, schema: schema, options: options)
        defer { observer.close(); writer.close() }

        let arrivals = Arrivals()
        let stream = observer.remoteChanges()
        let consumer = Task.detached {
            for await transaction in stream { arrivals.add(transaction.commitVersion, at: now()) }
        }
        defer { consumer.cancel() }
        let context = writer.newBackgroundContext(name: "writer")
        var latencies: [Double] = []
        latencies.reserveCapacity(saves)
        for number in 0..<saves {
            let (version, returned) = try context.performAndWait {
                context.insert(entity: "Note")["number"] = .int(Int64(number))
                try context.save()
                return (context.lastDidSaveNotification!.commitVersion!, now())
            }
            guard let arrived = arrivals.wait(for: version, timeout: 5) else {
                throw BenchError(description: "no remote change for commit \(version) within 5 s")
            }
            latencies.append(arrived - returned)
        }
        return latencies
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }

    /// Arrival times by commit version, handed from the consuming task to the writer.
    ///
    /// `@unchecked Sendable`: `times` is only touched under `condition`.
    final class Arrivals: @unchecked Sendable {
        private let condition = NSCondition()
        private var times: [UInt64: Double] = [:]

        func add(_ version: UInt64, at time: Double) {
            condition.lock()
            times[version] = time
            condition.broadcast()
            condition.unlock()
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
