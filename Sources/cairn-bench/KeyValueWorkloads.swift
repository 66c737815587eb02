import CLMDB
import CSQLite
import Foundation
import KVEngine

/// Sizes of one benchmark run.
struct Sizes {
    var commits: Int
    var records: Int
    var reads: Int
    var recoverMegabytes: Int
    var rounds: Int
    /// Rounds of the context workloads, whose rounds take milliseconds: a median of three
    /// moved with a single slow round of the shared host (a peer's median at 0.78M objects/s
    /// in one run, 1.04M–1.08M in three runs of nine rounds just after).
    var shortRounds: Int
    var sweepCommits: Int
    var contextSaveObjects: Int
    var contextFetchObjects: Int
    var conflictObjects: Int
    /// People in the store the index workloads read (fetch-indexed, fetch-sorted-limit,
    /// count-indexed, and growth's large size), and in growth's small one.
    var indexedObjects: Int
    var growthSmallObjects: Int
    /// Requests per round of the index read workloads (each takes microseconds).
    var indexedLookups: Int
    var indexedQueries: Int
    /// Records of the reader workloads' stores (reader-process, writer-readers).
    var readerRecords: Int
    /// Saves whose remote-change latency is measured (one at a time).
    var notificationSaves: Int
    /// Members of the large to-many of relationship-add-member (the small one has 10), and its saves per round.
    var relationshipMembers: Int = 100_000
    var relationshipSaves: Int = 200
    /// Departments of relationship-traverse (10 employees each), and dependents of relationship-cascade.
    var traverseDepartments: Int = 1_000
    var cascadeDependents: Int = 10_000
    /// One-object saves per round of the etcd workloads (each is a raft commit).
    var etcdSaves: Int = 1_000

    static let full = Sizes(commits: 20_000, records: 1_000_000, reads: 1_000_000, recoverMegabytes: 256, rounds: 3, shortRounds: 9,
                            sweepCommits: 4_000, contextSaveObjects: 10_000, contextFetchObjects: 100_000, conflictObjects: 1_000,
                            indexedObjects: 1_000_000, growthSmallObjects: 10_000, indexedLookups: 10_000, indexedQueries: 2_000,
                            readerRecords: 100_000, notificationSaves: 300)
    static let quick = Sizes(commits: 300, records: 20_000, reads: 50_000, recoverMegabytes: 8, rounds: 3, shortRounds: 3,
                             sweepCommits: 120, contextSaveObjects: 500, contextFetchObjects: 2_000, conflictObjects: 100,
                             indexedObjects: 20_000, growthSmallObjects: 2_000, indexedLookups: 200, indexedQueries: 50,
                             readerRecords: 2_000, notificationSaves: 20,
                             relationshipMembers: 1_000, relationshipSaves: 10, traverseDepartments: 50, cascadeDependents: 200,
                             etcdSaves: 30)
}

enum KeyValueWorkloads {
    /// Durable one-record commits from `writers` concurrent threads.
    static func commits(writers: Int, total: Int) -> [Contender] {
        let perWriter = max(1, total / writers)
        let count = perWriter * writers
        let cairn = Slot<(Store, String)>()
        let lmdb = Slot<(RawLMDB, String)>()
        var contenders: [Contender] = []
        contenders.append(Contender(
            system: "cairn",
            prepare: { _ in
                let directory = scratchDirectory("cairn-commit")
                cairn.value = (try Store(directory: directory, options: cairnOptions()), directory)
            },
            run: { _ in
                let store = cairn.value!.0
                let before = try store.stats().logSyncs
                let seconds = timed {
                    onThreads(writers) { writer in
                        for index in 0..<perWriter {
                            var batch = WriteBatch()
                            batch.put(Dataset.value(index), forKey: Dataset.key(writer * perWriter + index))
                            try! store.commit(batch)
                        }
                    }
                }
                let syncs = try store.stats().logSyncs - before
                let overlay = try OverlayFigures(store)
                store.close()
                removeDirectory(cairn.value!.1)
                return Measurement(operations: count, seconds: seconds,
                                   extra: ["fdatasync/commit": Double(syncs) / Double(count)], overlay: overlay)
            }))
        contenders.append(Contender(
            system: "lmdb",
            prepare: { _ in
                let directory = scratchDirectory("lmdb-commit")
                lmdb.value = (try RawLMDB(directory: directory), directory)
            },
            run: { _ in
                let environment = lmdb.value!.0
                let seconds = timed {
                    onThreads(writers) { writer in
                        for index in 0..<perWriter {
                            try! environment.putAll([(Dataset.key(writer * perWriter + index), Dataset.value(index))])
                        }
                    }
                }
                lmdb.value = nil
                return Measurement(operations: count, seconds: seconds)
            }))
        for synchronous in ["FULL", "NORMAL"] {
            let connections = Slot<([SQLitePeer], String)>()
            contenders.append(Contender(
                system: "sqlite-\(synchronous.lowercased())",
                prepare: { _ in
                    let directory = scratchDirectory("sqlite-commit")
                    let path = directory + "/bench.db"
                    connections.value = (try (0..<writers).map { _ in try SQLitePeer(path: path, synchronous: synchronous) }, directory)
                },
                run: { _ in
                    let peers = connections.value!.0
                    let seconds = timed {
                        onThreads(writers) { writer in
                            let peer = peers[writer]
                            let insert = try! peer.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
                            defer { sqlite3_finalize(insert) }
                            for index in 0..<perWriter {
                                _ = try! peer.step(insert, Dataset.key(writer * perWriter + index), Dataset.value(index))
                            }
                        }
                    }
                    removeDirectory(connections.value!.1)
                    connections.value = nil
                    return Measurement(operations: count, seconds: seconds)
                }))
        }
        return contenders
    }

    /// `records` records in one batch / transaction, in a random key order.
    static func load(records: Int) -> [Contender] {
        let order = Dataset.shuffled(records, seed: 7)
        var contenders: [Contender] = []
        contenders.append(Contender(system: "cairn", run: { _ in
            let directory = scratchDirectory("cairn-load")
            defer { removeDirectory(directory) }
            let store = try Store(directory: directory, options: cairnOptions())
            var commitSeconds = 0.0
            let seconds = try timed {
                var batch = WriteBatch()
                batch.reserveCapacity(order.count)
                for index in order { batch.put(Dataset.value(index), forKey: Dataset.key(index)) }
                commitSeconds = try timed { try store.commit(batch) }
                try store.flush()  // until LMDB holds it too: the same work as the peers
            }
            let overlay = try OverlayFigures(store)
            store.close()
            return Measurement(operations: records, seconds: seconds, extra: ["durable-after-s": commitSeconds],
                               overlay: overlay)
        }))
        contenders.append(Contender(system: "lmdb", run: { _ in
            let directory = scratchDirectory("lmdb-load")
            defer { removeDirectory(directory) }
            let environment = try RawLMDB(directory: directory)
            let seconds = try timed {
                try environment.putAll(order.lazy.map { (Dataset.key($0), Dataset.value($0)) })
            }
            return Measurement(operations: records, seconds: seconds)
        }))
        for synchronous in ["FULL", "NORMAL"] {
            contenders.append(Contender(system: "sqlite-\(synchronous.lowercased())", run: { _ in
                let directory = scratchDirectory("sqlite-load")
                defer { removeDirectory(directory) }
                let peer = try SQLitePeer(path: directory + "/bench.db", synchronous: synchronous)
                let seconds = try timed {
                    try peer.execute("BEGIN")
                    let insert = try peer.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
                    for index in order { _ = try peer.step(insert, Dataset.key(index), Dataset.value(index)) }
                    sqlite3_finalize(insert)
                    try peer.execute("COMMIT")
                }
                return Measurement(operations: records, seconds: seconds)
            }))
        }
        return contenders
    }

    /// Loaded stores for the read workloads, built once (untimed).
    final class Loaded: @unchecked Sendable {
        let cairn: Store
        let lmdb: RawLMDB
        let sqlite: SQLitePeer
        let directories: [String]

        init(records: Int) throws {
            let order = Dataset.shuffled(records, seed: 7)
            let cairnDirectory = scratchDirectory("cairn-read"), lmdbDirectory = scratchDirectory("lmdb-read"),
                sqliteDirectory = scratchDirectory("sqlite-read")
            directories = [cairnDirectory, lmdbDirectory, sqliteDirectory]
            cairn = try Store(directory: cairnDirectory, options: cairnOptions())
            var batch = WriteBatch()
            for index in order { batch.put(Dataset.value(index), forKey: Dataset.key(index)) }
            try cairn.commit(batch)
            try cairn.flush()
            lmdb = try RawLMDB(directory: lmdbDirectory)
            try lmdb.putAll(order.lazy.map { (Dataset.key($0), Dataset.value($0)) })
            sqlite = try SQLitePeer(path: sqliteDirectory + "/bench.db", synchronous: "NORMAL")
            try sqlite.execute("BEGIN")
            let insert = try sqlite.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
            for index in order { _ = try sqlite.step(insert, Dataset.key(index), Dataset.value(index)) }
            sqlite3_finalize(insert)
            try sqlite.execute("COMMIT")
        }

        func close() {
            cairn.close()
            directories.forEach(removeDirectory)
        }
    }

    /// Random point reads of existing keys from one snapshot / read transaction.
    static func readRandom(_ loaded: Loaded, records: Int, reads: Int) -> [Contender] {
        let keys = Dataset.shuffled(reads, seed: 11).map { Dataset.key($0 % records) }
        return [
            Contender(system: "cairn", run: { _ in
                let snapshot = try loaded.cairn.snapshot()
                defer { snapshot.close() }
                var bytes = 0
                let seconds = try timed {
                    for key in keys {
                        bytes &+= try snapshot.withValue(forKey: key) { value, _ in value.map { Int($0[0]) } ?? 0 }
                    }
                }
                guard bytes > 0 else { throw BenchError(description: "cairn read nothing") }
                return Measurement(operations: reads, seconds: seconds, overlay: try OverlayFigures(loaded.cairn))
            }),
            Contender(system: "lmdb", run: { _ in
                let dbi = loaded.lmdb.dbi
                var bytes = 0
                let seconds = try timed {
                    try loaded.lmdb.read { transaction in
                        for key in keys {
                            key.withUnsafeBytes { raw in
                                var keyValue = MDB_val(mv_size: raw.count, mv_data: UnsafeMutableRawPointer(mutating: raw.baseAddress))
                                var data = MDB_val()
                                if mdb_get(transaction, dbi, &keyValue, &data) == 0 {
                                    bytes &+= Int(data.mv_data.load(as: UInt8.self))
                                }
                            }
                        }
                    }
                }
                guard bytes > 0 else { throw BenchError(description: "lmdb read nothing") }
                return Measurement(operations: reads, seconds: seconds)
            }),
            Contender(system: "sqlite", run: { _ in
                let select = try loaded.sqlite.prepare("SELECT v FROM kv WHERE k = ?")
                defer { sqlite3_finalize(select) }
                var bytes = 0
                let seconds = try timed {
                    try loaded.sqlite.execute("BEGIN")
                    for key in keys where try loaded.sqlite.step(select, key) == SQLITE_ROW {
                        bytes &+= Int(sqlite3_column_blob(select, 0).load(as: UInt8.self))
                    }
                    try loaded.sqlite.execute("COMMIT")
                }
                guard bytes > 0 else { throw BenchError(description: "sqlite read nothing") }
                return Measurement(operations: reads, seconds: seconds)
            }),
        ]
    }

    /// An ordered scan of every record.
    static func scan(_ loaded: Loaded, records: Int) -> [Contender] {
        [
            Contender(system: "cairn", run: { _ in
                let snapshot = try loaded.cairn.snapshot()
                defer { snapshot.close() }
                var count = 0
                let seconds = try timed {
                    try snapshot.forEach { _, value, _ in
                        count += value.count > 0 ? 1 : 0
                        return true
                    }
                }
                guard count == records else { throw BenchError(description: "cairn scanned \(count)") }
                return Measurement(operations: count, seconds: seconds, overlay: try OverlayFigures(loaded.cairn))
            }),
            Contender(system: "lmdb", run: { _ in
                var count = 0
                let dbi = loaded.lmdb.dbi
                let seconds = try timed {
                    try loaded.lmdb.read { transaction in
                        var cursor: OpaquePointer?
                        mdb_cursor_open(transaction, dbi, &cursor)
                        defer { mdb_cursor_close(cursor) }
                        var key = MDB_val(), data = MDB_val()
                        var code = mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
                        while code == 0 {
                            count += data.mv_size > 0 ? 1 : 0
                            code = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
                        }
                    }
                }
                guard count == records else { throw BenchError(description: "lmdb scanned \(count)") }
                return Measurement(operations: count, seconds: seconds)
            }),
            Contender(system: "sqlite", run: { _ in
                let select = try loaded.sqlite.prepare("SELECT k, v FROM kv ORDER BY k")
                defer { sqlite3_finalize(select) }
                var count = 0
                let seconds = timed {
                    while sqlite3_step(select) == SQLITE_ROW {
                        count += sqlite3_column_bytes(select, 1) > 0 ? 1 : 0
                    }
                }
                guard count == records else { throw BenchError(description: "sqlite scanned \(count)") }
                return Measurement(operations: count, seconds: seconds)
            }),
        ]
    }

    /// Opening a store whose log holds `megabytes` MiB the applier never applied.
    static func recover(megabytes: Int) -> [Contender] {
        let prepared = Slot<String>()
        return [Contender(
            system: "cairn",
            prepare: { _ in
                let directory = scratchDirectory("cairn-recover")
                var options = cairnOptions()
                options.applyThreshold = Int.max
                options.applyInterval = 3600
                options.overlayLimit = (megabytes + 64) << 20
                options.durability = .normal
                let store = try Store(directory: directory, options: options)
                var written = 0, next = 0
                while written < megabytes << 20 {
                    var batch = WriteBatch()
                    for _ in 0..<1000 {
                        batch.put(Dataset.value(next), forKey: Dataset.key(next))
                        next += 1
                    }
                    try store.commit(batch)
                    written += 1000 * (16 + 100 + 16)
                }
                store.simulateCrash()
                prepared.value = directory
            },
            run: { _ in
                let directory = prepared.value!
                defer { removeDirectory(directory) }
                var opened: Store? = nil
                // Recovery applies the log to LMDB in large transactions, not through the
                // overlay: its figures show the overlay of the reopened store.
                let seconds = try timed { opened = try Store(directory: directory) }
                let store = opened!
                let report = store.recoveryReport
                let overlay = try OverlayFigures(store)
                store.simulateCrash()  // the open is what is measured, not a clean close
                let megabytesReplayed = Double(report.replayedBytes) / Double(1 << 20)
                return Measurement(operations: Int(megabytesReplayed.rounded()), seconds: seconds,
                                   extra: ["replayed-MiB": megabytesReplayed, "commits": Double(report.replayedCommits)],
                                   overlay: overlay)
            })]
    }
}
