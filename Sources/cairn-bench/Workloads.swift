/// Every workload, by name, in the order they run.
struct Workload {
    let name: String
    let run: (_ log: (String) -> Void) throws -> WorkloadResult
}

enum WorkloadCatalog {
    static let names = ["commit-1", "commit-8", "commit-32", "load", "read-random", "scan", "recover"]

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
        return workloads
    }
}
