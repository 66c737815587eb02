import Foundation
import KVEngine
import Synchronization

// Readers in other processes than the writer's (`Store.Options.readOnly`):
// - reader-process: point reads per second of a reader process beside a busy writer,
//   against raw LMDB's reader in a second process beside LMDB's busy writer; both writers
//   commit at the same paced rate, so that both readers follow the same write load;
// - writer-readers: the writer's commits per second alone and with three reader processes
//   beside it (paced readers: a view of 10 reads, then 1 ms of sleep, as monitors poll).

enum ReaderWorkloads {
    /// The busy writer's pace in reader-process, the same for both systems: the reader's cost
    /// grows with the commits it follows, and unpaced, Cairn's writer committed about twice as
    /// often as LMDB's (10.6k/s against 5.1k/s), so Cairn's reader followed twice LMDB's write
    /// load. Both writers sustain this rate on the benchmark's host, loaded or not.
    static let busyWriterCommitsPerSecond = 1_000.0

    /// A writer thread that updates random records with durable one-record commits, at most
    /// `commitsPerSecond` (nil: as fast as it can), until stopped: the "busy writer" the
    /// reader runs beside.
    final class BusyWriter: Sendable {
        private let stopped = Atomic<Bool>(false)
        private let done = DispatchSemaphore(value: 0)
        let commits = Atomic<Int>(0)

        init(records: Int, commitsPerSecond: Double?,
             commit: @escaping @Sendable (_ key: [UInt8], _ value: [UInt8]) throws -> Void) {
            let thread = Thread { [self] in
                var index = 0
                var due = now()
                while !stopped.load(ordering: .relaxed) {
                    if let commitsPerSecond {
                        // A commit every 1/rate seconds; one that fell behind goes at once,
                        // without a burst to catch up.
                        let wait = due - now()
                        if wait > 0 { usleep(UInt32(wait * 1e6)) }
                        due = max(due, now() - 1 / commitsPerSecond) + 1 / commitsPerSecond
                    }
                    index &+= 7919
                    try! commit(Dataset.key(index % records), Dataset.value(index))
                    commits.add(1, ordering: .relaxed)
                }
                done.signal()
            }
            thread.start()
        }

        func stop() {
            stopped.store(true, ordering: .relaxed)
            done.wait()
        }
    }

    /// A store of `records` records applied to LMDB, and the same records in raw LMDB.
    static func loadedStores(records: Int) throws -> (cairn: Store, cairnDirectory: String, lmdb: RawLMDB, lmdbDirectory: String) {
        let cairnDirectory = scratchDirectory("cairn-readers")
        let store = try Store(directory: cairnDirectory, options: cairnOptions())
        var batch = WriteBatch()
        for index in 0..<records { batch.put(Dataset.value(index), forKey: Dataset.key(index)) }
        try store.commit(batch)
        try store.flush()
        let lmdbDirectory = scratchDirectory("lmdb-readers")
        let lmdb = try RawLMDB(directory: lmdbDirectory)
        try lmdb.putAll((0..<records).lazy.map { (Dataset.key($0), Dataset.value($0)) })
        return (store, cairnDirectory, lmdb, lmdbDirectory)
    }

    static func readerProcess(records: Int, reads: Int, batch: Int) throws -> (contenders: [Contender], close: () -> Void) {
        let stores = try loadedStores(records: records)
        func contender(_ system: String, directory: String,
                       commit: @escaping @Sendable ([UInt8], [UInt8]) throws -> Void) -> Contender {
            Contender(system: system, run: { _ in
                let writer = BusyWriter(records: records, commitsPerSecond: busyWriterCommitsPerSecond, commit: commit)
                defer { writer.stop() }
                let started = now()
                let seconds = try ReaderChild.finish(try ReaderChild.start(
                    system: system, directory: directory, records: records, reads: reads, batch: batch))
                let commitsPerSecond = Double(writer.commits.load(ordering: .relaxed)) / (now() - started)
                return Measurement(operations: reads, seconds: seconds, extra: ["writer-commits/s": commitsPerSecond])
            })
        }
        let store = stores.cairn, lmdb = stores.lmdb
        let contenders = [
            contender("cairn", directory: stores.cairnDirectory) { key, value in
                var batch = WriteBatch()
                batch.put(value, forKey: key)
                try store.commit(batch)
            },
            contender("lmdb", directory: stores.lmdbDirectory) { key, value in try lmdb.putAll([(key, value)]) },
        ]
        return (contenders, {
            store.close()
            removeDirectory(stores.cairnDirectory)
            removeDirectory(stores.lmdbDirectory)
        })
    }

    /// Durable one-record commits from `writers` threads, alone (`cairn`) and with three paced
    /// reader processes beside the store (`with-3-readers`).
    static func writerWithReaders(records: Int, writers: Int, commits: Int) throws -> (contenders: [Contender], close: () -> Void) {
        let stores = try loadedStores(records: records)
        let store = stores.cairn
        let perWriter = max(1, commits / writers)
        let readers = Slot<[(process: Process, output: Pipe)]>([])
        func run() -> Measurement {
            let seconds = timed {
                onThreads(writers) { writer in
                    for index in 0..<perWriter {
                        var batch = WriteBatch()
                        batch.put(Dataset.value(index), forKey: Dataset.key((writer * perWriter + index) % records))
                        try! store.commit(batch)
                    }
                }
            }
            return Measurement(operations: perWriter * writers, seconds: seconds)
        }
        let contenders = [
            Contender(system: "cairn", run: { _ in run() }),
            Contender(system: "with-3-readers", prepare: { _ in
                readers.value = try (0..<3).map { _ in
                    try ReaderChild.start(system: "cairn", directory: stores.cairnDirectory, records: records,
                                          reads: Int.max / 2, batch: 10, pauseMicroseconds: 1_000)
                }
                // The writer is timed once each has opened the store and begun reading.
                for reader in readers.value ?? [] { try ReaderChild.waitUntilReady(reader) }
            }, run: { _ in
                defer {
                    for reader in readers.value ?? [] {
                        reader.process.terminate()
                        reader.process.waitUntilExit()
                    }
                    readers.value = []
                }
                let measurement = run()
                for reader in readers.value ?? [] where !reader.process.isRunning {
                    throw BenchError(description: "a reader process exited \(reader.process.terminationStatus) during the run")
                }
                return measurement
            }),
        ]
        return (contenders, {
            store.close()
            removeDirectory(stores.cairnDirectory)
            removeDirectory(stores.lmdbDirectory)
        })
    }
}
