/// Every workload, by name, in the order they run.
struct Workload {
    let name: String
    let run: (_ log: (String) -> Void) throws -> WorkloadResult
}

enum WorkloadCatalog {
    static let names = ["commit-1", "commit-8", "commit-32", "load", "read-random", "scan", "recover",
                        "context-save", "context-fetch", "conflict-save",
                        "fetch-indexed", "fetch-sorted-limit", "count-indexed", "growth", "context-save-indexed",
                        "reader-process", "writer-readers", "notification-latency",
                        "relationship-add-member", "relationship-traverse", "relationship-cascade", "etcd-save-1", "etcd-save-3"]

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
        workloads += indexWorkloads(sizes)
        workloads.append(Workload(name: "reader-process") { log in
            let (contenders, close) = try ReaderWorkloads.readerProcess(records: sizes.readerRecords, reads: sizes.reads, batch: 100)
            defer { close() }
            return try runWorkload(name: "reader-process", unit: "reads/s", rounds: sizes.rounds, contenders: contenders,
                                   notes: ["a second process makes \(sizes.reads) random point reads of \(sizes.readerRecords) records, a fresh view (Cairn: a read-only store's snapshot; LMDB: a renewed read transaction) every 100 reads, while this process's writer makes durable one-record updates, \(Int(ReaderWorkloads.busyWriterCommitsPerSecond)) a second for both systems; writer-commits/s: the writer's rate meanwhile"],
                                   log: log)
        })
        workloads.append(Workload(name: "writer-readers") { log in
            // Five times the commit workloads' count: 20,000 commits took 0.3 s, and the writer's
            // rate alone moved by ±10% between rounds, as much as the effect measured.
            let commits = sizes.commits * 5
            let (contenders, close) = try ReaderWorkloads.writerWithReaders(records: sizes.readerRecords, writers: 8, commits: commits)
            defer { close() }
            return try runWorkload(name: "writer-readers", unit: "commits/s", rounds: sizes.rounds, contenders: contenders,
                                   notes: ["\(commits) durable one-record commits from 8 writers, alone and with three reader processes beside them (each: a snapshot, 10 point reads, 1 ms of sleep, again); ratio = alone / with readers"],
                                   log: log)
        })
        workloads.append(Workload(name: "notification-latency") { log in
            try HistoryWorkloads.notificationLatency(saves: sizes.notificationSaves, log: log)
        })
        workloads += relationshipWorkloads(sizes)
        for members in [1, 3] {
            workloads.append(Workload(name: "etcd-save-\(members)") { log in
                let cluster = try EtcdWorkloads.startCluster(members: members)
                defer { cluster?.stop() }
                return try runWorkload(name: "etcd-save-\(members)", unit: "saves/s", rounds: sizes.rounds,
                                       contenders: try EtcdWorkloads.saves(cluster?.endpoints ?? EtcdWorkloads.profiledEndpoints,
                                                                           count: sizes.etcdSaves),
                                       notes: ["\(sizes.etcdSaves) one-object saves (change one attribute, save with the version check) on a \(members)-member loopback etcd cluster; etcd-gateway: the same conditional txns from a minimal client"],
                                       log: log)
            })
        }
        return workloads
    }

    /// The relationship workloads (RelationshipWorkloads.swift), SQLite with a foreign key as the peer.
    static func relationshipWorkloads(_ sizes: Sizes) -> [Workload] {
        let large = sizes.relationshipMembers, saves = sizes.relationshipSaves
        let departments = sizes.traverseDepartments
        return [
            Workload(name: "relationship-add-member") { log in
                try runWorkload(name: "relationship-add-member", unit: "saves/s", rounds: sizes.shortRounds,
                                contenders: RelationshipWorkloads.addMember(sizes: [large, 10], saves: saves),
                                notes: ["\(saves) durable saves, each adding a new person to a to-many of \(large) or 10 members (records/save: the records a save writes, the new person and the department's version); sqlite: INSERT with the foreign key and UPDATE of the department's version per transaction (FULL)"],
                                log: log)
            },
            Workload(name: "relationship-traverse") { log in
                let (objects, directory, _) = try RelationshipWorkloads.makeObjectStore(departments: departments, members: 10)
                let (sqlite, sqliteDirectory) = try RelationshipWorkloads.makeSQLite(departments: departments, members: 10)
                defer { objects.close(); removeDirectory(directory); removeDirectory(sqliteDirectory) }
                return try runWorkload(name: "relationship-traverse", unit: "employees/s", rounds: sizes.shortRounds,
                                       contenders: RelationshipWorkloads.traverse(objects, sqlite, departments: departments, members: 10),
                                       notes: ["fetch \(departments) departments with their employees prefetched and read the 10 employees' names of each; sqlite: SELECT … JOIN on the indexed foreign key into row values"],
                                       log: log)
            },
            Workload(name: "relationship-cascade") { log in
                try runWorkload(name: "relationship-cascade", unit: "dependents/s", rounds: sizes.shortRounds,
                                contenders: RelationshipWorkloads.cascadeDelete(dependents: sizes.cascadeDependents),
                                notes: ["delete a department whose \(sizes.cascadeDependents) employees cascade, and save durably; sqlite: DELETE with ON DELETE CASCADE (FULL)"],
                                log: log)
            },
        ]
    }

    /// The workloads of indexed fetches and saves. The first four read the same people stores,
    /// built once (PeopleStores) and closed when the workloads are released.
    static func indexWorkloads(_ sizes: Sizes) -> [Workload] {
        let stores = PeopleStores()
        let large = sizes.indexedObjects, small = sizes.growthSmallObjects
        let sqliteNote = "sqlite: the same rows and indexes (name; city, age), prepared statements, one database (WAL, NORMAL)"
        return [
            Workload(name: "fetch-indexed") { log in
                try runWorkload(name: "fetch-indexed", unit: "fetches/s", rounds: sizes.shortRounds,
                                contenders: IndexWorkloads.fetchIndexed(try stores.cairn(large, log: log), try stores.sqlite(large, log: log),
                                                                        count: large, lookups: sizes.indexedLookups),
                                notes: ["\(sizes.indexedLookups) fetches of one person by name (index name) of \(large), one context reset after each; \(sqliteNote)"],
                                log: log)
            },
            Workload(name: "fetch-sorted-limit") { log in
                try runWorkload(name: "fetch-sorted-limit", unit: "fetches/s", rounds: sizes.shortRounds,
                                contenders: IndexWorkloads.fetchSortedLimit(try stores.cairn(large, log: log), try stores.sqlite(large, log: log),
                                                                            count: large, queries: sizes.indexedQueries),
                                notes: ["\(sizes.indexedQueries) fetches of the first 20 of \(large) people sorted by name (index name), one context reset after each; \(sqliteNote)"],
                                log: log)
            },
            Workload(name: "count-indexed") { log in
                try runWorkload(name: "count-indexed", unit: "counts/s", rounds: sizes.shortRounds,
                                contenders: IndexWorkloads.countIndexed(try stores.cairn(large, log: log), try stores.sqlite(large, log: log),
                                                                        count: large, queries: sizes.indexedQueries),
                                notes: ["\(sizes.indexedQueries) counts of one city's people (0.1% of \(large), index city, age); \(sqliteNote)"],
                                log: log)
            },
            Workload(name: "growth") { log in
                var contenders: [Contender] = []
                for count in [large, small] {
                    contenders += IndexWorkloads.fetchIndexed(
                        try stores.cairn(count, log: log), try stores.sqlite(count, log: log), count: count,
                        lookups: sizes.indexedLookups, cairnName: "cairn-\(count)", sqliteName: "sqlite-\(count)")
                }
                let result = try runWorkload(name: "growth", unit: "fetches/s", rounds: sizes.shortRounds, contenders: contenders,
                                             notes: ["fetch-indexed at \(large) and at \(small) people"], log: log)
                return IndexWorkloads.growth(result, large: large, small: small)
            },
            Workload(name: "context-save-indexed") { log in
                try runWorkload(name: "context-save-indexed", unit: "objects/s", rounds: sizes.shortRounds,
                                contenders: IndexWorkloads.contextSave(count: sizes.contextSaveObjects),
                                notes: ["context-save on people with two indexes (name; city, age): fetch \(sizes.contextSaveObjects), change each age (one index entry moved per object), save; sqlite: the same indexes, SELECT then UPDATE … WHERE id=? AND version=? in one transaction"],
                                log: log)
            },
        ]
    }
}
