import CairnTestSupport
import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The disk-full sweep: a store is created and written on a real tmpfs of each of many sizes
/// until the disk is full, in a child process (a signal ends only the child, and is a
/// failure). At every size: the child ends with a typed disk-full error, never a signal or a
/// hang; while the disk stays full the store opens (for reading only when it must) and every
/// acknowledged commit reads; once space is back it opens normally, holds every acknowledged
/// commit, takes new ones, and `check` finds it sound. Root only (skipped, with the reason
/// printed, otherwise). Sizes: `CAIRN_DISK_FULL_SIZES` (12 / 160), from 4 KiB up.
@Suite(.serialized) struct DiskFullSweepTests {
    @Test(.timeLimit(.minutes(30)))
    func everySizeOfFullDiskEndsInATypedErrorAndLosesNothing() throws {
        if let reason = SmallDisk.unavailableReason {
            print(reason)
            return
        }
        let count = Reliability.size("DISK_FULL_SIZES", short: 12, torture: 160)
        let seed = Reliability.seed("DISK_FULL")
        var random = SeededRandom(seed: seed)
        // 4 KiB to about 1.5 MiB: below the lock file, inside LMDB's creation, inside the
        // first segment, and well into the log and the applier.
        var sizes = [4, 16, 64, 68, 72, 80, 96, 128, 160, 256, 640, 1536].map { $0 << 10 }
        while sizes.count < count { sizes.append(Int(random.next() % (1536 << 10)) + 4096) }
        sizes = Array(sizes.prefix(count))
        if let replay = Reliability.replayCase("DISK_FULL"), let size = Int(replay) { sizes = [size] }
        var outcomes = OutcomeCounts()
        var acknowledgedTotal = 0
        for size in sizes {
            let outcome = try runOne(size: size, seed: Reliability.caseSeed(seed, size))
            outcomes.add(outcome.name)
            acknowledgedTotal += outcome.acknowledged
        }
        Reliability.report("disk-full", "\(sizes.count) disk sizes (seed \(seed)): \(outcomes); \(acknowledgedTotal) acknowledged commits checked")
    }

    private func runOne(size: Int, seed: UInt64) throws -> (name: String, acknowledged: Int) {
        let replay = "CAIRN_DISK_FULL_CASE=\(size)"
        guard let disk = try SmallDisk(bytes: size) else { return ("skipped", 0) }
        defer { disk.remove() }
        let scratch = try TemporaryDirectory(prefix: "cairn-disk-full-sweep")
        defer { scratch.remove() }
        let store = disk.path + "/store"
        let results = scratch.path + "/results"
        let output = scratch.path + "/output"
        let process = try ChildProcess.start(role: DiskFullWorker.role,
                                             arguments: ["STORE": store, "RESULTS": results, "SEED": "\(seed)"],
                                             outputPath: output)
        let (ending, timedOut) = ChildProcess.wait(process, timeout: 60)
        let lines = ChildProcess.completeLines(results)
        let acknowledged = lines.filter { $0.hasPrefix("ok ") }.compactMap { Int($0.dropFirst(3)) }
        let last = lines.last ?? "nothing"
        #expect(!timedOut, "\(replay): the worker hung")
        #expect(ending == .exited(0), "\(replay): the worker \(ending); last line: \(last); \(String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self).suffix(1500))")
        if let report = ChildProcess.sanitizerReport(output) { Issue.record("\(replay): \(report)") }
        let name = last.hasPrefix("full ") ? String(last.dropFirst(5).prefix { $0 != " " }) : "unfinished"

        // Still full: the store opens (for reading only, when it must) and reads every
        // acknowledged commit; or, when nothing was ever committed, a typed error.
        do {
            let reading = try Store(directory: store)
            let snapshot = try reading.snapshot()
            for index in acknowledged where try snapshot.get("k\(index)")?.value != Array(DiskFullWorker.value(index).utf8) {
                Issue.record("\(replay): k\(index) unreadable while the disk is full")
            }
            snapshot.close()
            reading.close()
        } catch {
            #expect(error.isDiskFull, "\(replay): reopening a full disk: \(error)")
        }
        // Space is back.
        try disk.resize(bytes: 32 << 20)
        let reopened = try Store(directory: store)
        let snapshot = try reopened.snapshot()
        for index in acknowledged where try snapshot.get("k\(index)")?.value != Array(DiskFullWorker.value(index).utf8) {
            Issue.record("\(replay): acknowledged k\(index) lost after space came back")
        }
        snapshot.close()
        var batch = WriteBatch()
        batch.put("after", forKey: "after")
        try reopened.commit(batch)
        reopened.close()
        let check = try Store.check(directory: store)
        #expect(check.isSound, "\(replay): \(check.problems)")
        return (name, acknowledged.count)
    }
}

/// The sweep's worker: creates the store and commits until the disk is full. Logs each
/// acknowledged key, then `full <case> <error>`; exits 1 on any error but a full disk.
enum DiskFullWorker {
    static let role = "disk-full-worker"

    /// The value of key `k<index>`: up to 600 bytes, so that commits cross pages and segments.
    static func value(_ index: Int) -> String {
        String(repeating: "x", count: index * 37 % 600) + "\(index)"
    }

    static func main() -> Int32 {
        let results = LineWriter(path: ChildProcess.argument("RESULTS"))
        var random = SeededRandom(seed: UInt64(ChildProcess.argument("SEED")) ?? 1)
        _ = random.next()
        var options = Store.Options()
        options.segmentSize = Int(random.next() % 4 + 1) << 16
        options.applyInterval = 0.002
        options.durability = random.next() % 2 == 0 ? .full : .normal
        let store: Store
        do {
            store = try Store(directory: ChildProcess.argument("STORE"), options: options)
        } catch {
            results.line("full open \(error)")
            return error.isDiskFull ? 0 : 1
        }
        defer { store.close() }
        for index in 0..<100_000 {
            var batch = WriteBatch()
            batch.put(value(index), forKey: "k\(index)")
            do {
                try store.commit(batch)
                results.line("ok \(index)")
                if index % 50 == 0 { try store.flush() }
            } catch {
                let stage = error.description.contains("mdb_") ? "lmdb" : "log"
                results.line("full \(stage) \(error)")
                return error.isDiskFull ? 0 : 1
            }
        }
        results.line("never full")
        return 1
    }
}
