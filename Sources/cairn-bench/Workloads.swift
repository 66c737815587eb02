/// Every workload, by name, in the order they run.
struct Workload {
    let name: String
    let run: (_ log: (String) -> Void) throws -> WorkloadResult
}

enum WorkloadCatalog {
    static let names = ["commit-1", "commit-8", "commit-32", "load", "read-random", "scan", "recover",
                        "context-save", "context-fetch", "conflict-save"]

    static func all(_ sizes: Sizes) -> [Workload] {
        var workloads: [Workload] = []
        for writers in [1, 8, 32] {
            workloads.append(Workload(name: "commit-\(writers)") { log in
                try runWorkload(name: "commit-\(writers)", unit: "commits/s", rounds: sizes.rounds,
                                contenders: KeyValueWorkloads.commits(writers: writers, total: sizes.commits),
                                notes: ["\(sizes.commits) durable one-record commits from \(writers) writer(s); sqlite in WAL mode"],
                                log: log)
            })
        }
        workloads.append(Workload(name: "load") { log in
            try runWorkload(name: "load", unit: "records/s", rounds: sizes.rounds,
                            contenders: KeyValueWorkloads.load(records: sizes.records),
                            notes: ["\(sizes.records) records in one batch/transaction; cairn timed until applied to LMDB (durable-after-s: until the commit was durable)"],
                            log: log)
        })
        workloads.append(Workload(name: "read-random") { log in
            let loaded = try KeyValueWorkloads.Loaded(records: sizes.records)
            defer { loaded.close() }
            return try runWorkload(name: "read-random", unit: "reads/s", rounds: sizes.rounds,
                                   contenders: KeyValueWorkloads.readRandom(loaded, records: sizes.records, reads: sizes.reads),
                                   notes: ["\(sizes.reads) random point reads of \(sizes.records) records from one snapshot / read transaction"],
                                   log: log)
        })
        workloads.append(Workload(name: "scan") { log in
            let loaded = try KeyValueWorkloads.Loaded(records: sizes.records)
            defer { loaded.close() }
            return try runWorkload(name: "scan", unit: "records/s", rounds: sizes.rounds,
                                   contenders: KeyValueWorkloads.scan(loaded, records: sizes.records),
                                   notes: ["ordered scan of \(sizes.records) records"], log: log)
        })
        workloads.append(Workload(name: "recover") { log in
            try runWorkload(name: "recover", unit: "MiB/s replayed", rounds: sizes.rounds,
                            contenders: KeyValueWorkloads.recover(megabytes: sizes.recoverMegabytes),
                            notes: ["open a store with \(sizes.recoverMegabytes) MiB of unapplied log"], log: log)
        })
        workloads.append(Workload(name: "context-save") { log in
            try runWorkload(name: "context-save", unit: "objects/s", rounds: sizes.shortRounds,
                            contenders: ContextWorkloads.contextSave(count: sizes.contextSaveObjects),
                            notes: ["fetch \(sizes.contextSaveObjects) objects, change one attribute each, save with the version check; sqlite: SELECT of whole rows into row values, then UPDATE … WHERE id=? AND version=? in one transaction"],
                            log: log)
        })
        workloads.append(Workload(name: "context-fetch") { log in
            let (objects, directory) = try ContextWorkloads.makeObjectStore(count: sizes.contextFetchObjects)
            let (sqlite, sqliteDirectory) = try ContextWorkloads.makeSQLite(count: sizes.contextFetchObjects, synchronous: "NORMAL")
            defer { objects.close(); removeDirectory(directory); removeDirectory(sqliteDirectory) }
            return try runWorkload(name: "context-fetch", unit: "objects/s", rounds: sizes.shortRounds,
                                   contenders: ContextWorkloads.contextFetch(objects, sqlite, count: sizes.contextFetchObjects),
                                   notes: ["fetch \(sizes.contextFetchObjects) objects of one entity into a new context and read one attribute of each; sqlite: SELECT of whole rows into row values"],
                                   log: log)
        })
        workloads.append(Workload(name: "conflict-save") { log in
            try runWorkload(name: "conflict-save", unit: "objects/s", rounds: sizes.shortRounds,
                            contenders: ContextWorkloads.conflictSave(count: sizes.conflictObjects),
                            notes: ["\(sizes.conflictObjects) objects whose store records another context changed first, saved under each built-in policy (error: the failed save), against the same save with no conflict; ratio = no-conflict / policy"],
                            log: log)
        })
        return workloads
    }
}
