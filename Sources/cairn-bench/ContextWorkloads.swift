import CSQLite
import Contexts
import Foundation
import KVEngine
import Policies

/// Workloads through the context layer, against SQLite doing the same rows by hand.
enum ContextWorkloads {
    /// The timed part of a context-save round: fetch all `count` objects of `entity` in a new
    /// context, add 1 to each one's int `attribute`, and save.
    static func bumpAndSave(_ objects: ObjectStore, entity: String, attribute: String, count: Int) throws -> Measurement {
        let context = objects.newBackgroundContext()
        let seconds = try timed {
            try context.performAndWait {
                let fetched = try context.fetch(FetchRequest(entityName: entity))
                guard fetched.count == count else { throw BenchError(description: "fetched \(fetched.count)") }
                for object in fetched {
                    guard case .int(let value) = object.value(forKey: attribute) else { continue }
                    object.setValue(.int(value + 1), forKey: attribute)
                }
                try context.save()
            }
        }
        return Measurement(operations: count, seconds: seconds, overlay: try OverlayFigures(objects.store))
    }

    /// SQLite's side of that round, after its SELECT: in one transaction, add 1 to `column` of
    /// each row, checking and bumping its version as Cairn's save does.
    static func bumpAndUpdate(
        _ peer: SQLitePeer, table: String, column: String, rows: some Sequence<(id: Int64, value: Int64, version: Int64)>
    ) throws {
        try peer.execute("BEGIN")
        let update = try peer.prepare("UPDATE \(table) SET \(column) = ?, version = version + 1 WHERE id = ? AND version = ?")
        for row in rows {
            sqlite3_reset(update)
            sqlite3_bind_int64(update, 1, row.value + 1)
            sqlite3_bind_int64(update, 2, row.id)
            sqlite3_bind_int64(update, 3, row.version)
            guard sqlite3_step(update) == SQLITE_DONE, sqlite3_changes(peer.database) == 1 else {
                throw BenchError(description: "sqlite update lost its row")
            }
        }
        sqlite3_finalize(update)
        try peer.execute("COMMIT")
    }

    static let schema = try! Schema([
        EntityDescription("Item", attributes: [
            AttributeDescription("name", .string),
            AttributeDescription("count", .int),
            AttributeDescription("score", .double),
        ])
    ])

    static func objectStoreOptions() -> ObjectStore.Options {
        var options = ObjectStore.Options()
        options.storeOptions = cairnOptions()
        return options
    }

    /// A store holding `count` Items, made by one saved context.
    static func makeObjectStore(count: Int) throws -> (ObjectStore, String) {
        let directory = scratchDirectory("cairn-context")
        let objects = try ObjectStore(directory: directory, schema: schema, options: objectStoreOptions())
        let context = objects.newBackgroundContext()
        try context.performAndWait {
            for index in 0..<count {
                let item = context.insert(entity: "Item")
                item.setValue(.string("item \(index)"), forKey: "name")
                item.setValue(.int(Int64(index)), forKey: "count")
                item.setValue(.double(Double(index) / 3), forKey: "score")
            }
            try context.save()
        }
        try objects.store.flush()  // the applier's work for the setup stays out of the timed round
        return (objects, directory)
    }

    static func makeSQLite(count: Int, synchronous: String) throws -> (SQLitePeer, String) {
        let directory = scratchDirectory("sqlite-context")
        let peer = try SQLitePeer(path: directory + "/bench.db", synchronous: synchronous)
        try peer.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, version INTEGER NOT NULL, name TEXT NOT NULL, count INTEGER NOT NULL, score REAL NOT NULL)")
        try peer.execute("BEGIN")
        let insert = try peer.prepare("INSERT INTO item (id, version, name, count, score) VALUES (?, 1, ?, ?, ?)")
        for index in 0..<count {
            sqlite3_reset(insert)
            sqlite3_bind_int64(insert, 1, Int64(index + 1))
            sqlite3_bind_text(insert, 2, "item \(index)", -1, sqliteTransient)
            sqlite3_bind_int64(insert, 3, Int64(index))
            sqlite3_bind_double(insert, 4, Double(index) / 3)
            guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchError(description: "sqlite insert") }
        }
        sqlite3_finalize(insert)
        try peer.execute("COMMIT")
        return (peer, directory)
    }

    /// One item row read whole, as a record type of an SQLite wrapper reads it: the SQLite
    /// peer of a fetched object, which holds every attribute of its record decoded.
    struct Row {
        let id: Int64
        let version: Int64
        let name: String
        let count: Int64
        let score: Double

        static func fetchAll(_ peer: SQLitePeer) throws -> [Row] {
            var rows: [Row] = []
            let select = try peer.prepare("SELECT id, version, name, count, score FROM item")
            defer { sqlite3_finalize(select) }
            while sqlite3_step(select) == SQLITE_ROW {
                guard let name = sqlite3_column_text(select, 2) else { throw BenchError(description: "sqlite row without a name") }
                rows.append(Row(id: sqlite3_column_int64(select, 0), version: sqlite3_column_int64(select, 1),
                                name: String(cString: name), count: sqlite3_column_int64(select, 3),
                                score: sqlite3_column_double(select, 4)))
            }
            return rows
        }
    }

    /// Fetch `count` objects, change one attribute each, save with the version check.
    static func contextSave(count: Int) -> [Contender] {
        let cairn = Slot<(ObjectStore, String)>()
        var contenders = [Contender(
            system: "cairn",
            prepare: { _ in cairn.value = try makeObjectStore(count: count) },
            run: { round in
                let (objects, directory) = cairn.value!
                defer { objects.close(); removeDirectory(directory) }
                return try bumpAndSave(objects, entity: "Item", attribute: "count", count: count)
            })]
        for synchronous in ["FULL", "NORMAL"] {
            let sqlite = Slot<(SQLitePeer, String)>()
            contenders.append(Contender(
                system: "sqlite-\(synchronous.lowercased())",
                prepare: { _ in sqlite.value = try makeSQLite(count: count, synchronous: synchronous) },
                run: { _ in
                    let (peer, directory) = sqlite.value!
                    defer { sqlite.value = nil; removeDirectory(directory) }
                    let seconds = try timed {
                        let rows = try Row.fetchAll(peer)
                        try bumpAndUpdate(peer, table: "item", column: "count", rows: rows.lazy.map { ($0.id, $0.count, $0.version) })
                    }
                    return Measurement(operations: count, seconds: seconds)
                }))
        }
        return contenders
    }

    /// Fetch `count` objects of one entity and read one attribute of each.
    static func contextFetch(_ objects: ObjectStore, _ sqlite: SQLitePeer, count: Int) -> [Contender] {
        [
            Contender(system: "cairn", run: { _ in
                let context = objects.newBackgroundContext()
                var total: Int64 = 0
                let seconds = try timed {
                    try context.performAndWait {
                        for item in try context.fetch(FetchRequest(entityName: "Item")) {
                            if case .int(let value) = item.value(forKey: "count") { total &+= value }
                        }
                    }
                }
                guard total == Int64(count) * Int64(count - 1) / 2 else { throw BenchError(description: "cairn fetch sum \(total)") }
                return Measurement(operations: count, seconds: seconds, overlay: try OverlayFigures(objects.store))
            }),
            Contender(system: "sqlite", run: { _ in
                var total: Int64 = 0
                let seconds = try timed {
                    for row in try Row.fetchAll(sqlite) { total &+= row.count }
                }
                guard total == Int64(count) * Int64(count - 1) / 2 else { throw BenchError(description: "sqlite fetch sum \(total)") }
                return Measurement(operations: count, seconds: seconds)
            }),
        ]
    }

    /// `count` objects saved while another context changed every one of them first, under
    /// each built-in policy, against the same save with no conflict.
    static func conflictSave(count: Int) -> [Contender] {
        let cases: [(String, (any MergePolicy)?)] = [("no-conflict", nil)]
            + BuiltInPolicies.all.map { ($0.name, $0 as (any MergePolicy)?) }
        return cases.map { name, policy in
            let prepared = Slot<(ObjectStore, String, ObjectContext)>()
            return Contender(
                system: name == "no-conflict" ? "cairn-no-conflict" : name,
                prepare: { _ in
                    let (objects, directory) = try makeObjectStore(count: count)
                    let saver = objects.newBackgroundContext(mergePolicy: policy ?? .error)
                    try saver.performAndWait {
                        for item in try saver.fetch(FetchRequest(entityName: "Item")) {
                            item.setValue(.double(-1), forKey: "score")
                        }
                    }
                    if policy != nil {
                        let other = objects.newBackgroundContext()
                        try other.performAndWait {
                            for item in try other.fetch(FetchRequest(entityName: "Item")) {
                                item.setValue(.string("changed elsewhere"), forKey: "name")
                            }
                            try other.save()
                        }
                    }
                    prepared.value = (objects, directory, saver)
                },
                run: { _ in
                    let (objects, directory, saver) = prepared.value!
                    defer { objects.close(); removeDirectory(directory) }
                    var conflicts = 0
                    let seconds = timed {
                        saver.performAndWait {
                            do {
                                try saver.save()
                                conflicts = saver.lastSaveConflicts.count
                            } catch let error as MergeError {
                                conflicts = error.conflicts.count
                            } catch {
                                conflicts = -1
                            }
                        }
                    }
                    guard conflicts == (policy == nil ? 0 : count) else {
                        throw BenchError(description: "\(name): \(conflicts) conflicts")
                    }
                    return Measurement(operations: count, seconds: seconds, extra: ["conflicts": Double(conflicts)],
                                       overlay: try OverlayFigures(objects.store))
                })
        }
    }
}
