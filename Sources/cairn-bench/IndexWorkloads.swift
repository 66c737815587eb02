import CSQLite
import Contexts
import Foundation
import Policies

/// Fetches and saves that go through an index, against SQLite with the same two indexes
/// (People.swift). Every Cairn fetch is a plain `FetchRequest` the planner serves from an
/// index; every SQLite query is a prepared statement whose plan uses the matching index.
enum IndexWorkloads {
    /// `lookups` fetches of one person by name (index `name`), names in a seeded random order.
    /// One context serves every lookup, as a request handler's would, and is `reset()` after
    /// each: the fetched object is read, checked and dropped, as SQLite's row value is.
    static func fetchIndexed(
        _ objects: ObjectStore, _ sqlite: SQLitePeer, count: Int, lookups: Int, cairnName: String = "cairn", sqliteName: String = "sqlite"
    ) -> [Contender] {
        var generator = SplitMix(state: 21)
        let picks = (0..<lookups).map { _ in Int.random(in: 0..<count, using: &generator) }
        let names = picks.map(People.name)
        let ages = picks.map(People.age)
        return [
            Contender(system: cairnName, run: { _ in
                let context = objects.newBackgroundContext()
                let seconds = try timed {
                    for position in picks.indices {
                        try context.performAndWait {
                            let found = try context.fetch(FetchRequest(
                                entityName: "Person", predicate: .compare("name", .equal, .string(names[position]))))
                            guard found.count == 1, found[0].value(forKey: "age") == .int(ages[position]) else {
                                throw BenchError(description: "cairn found \(found.count) for \(names[position])")
                            }
                            context.reset()
                        }
                    }
                }
                return Measurement(operations: lookups, seconds: seconds, extra: ["µs/fetch": seconds * 1e6 / Double(lookups)])
            }),
            Contender(system: sqliteName, run: { _ in
                let select = try sqlite.prepare("SELECT \(People.Row.columns) FROM person WHERE name = ?")
                defer { sqlite3_finalize(select) }
                let seconds = try timed {
                    for position in picks.indices {
                        sqlite3_reset(select)
                        sqlite3_bind_text(select, 1, names[position], -1, sqliteTransient)
                        let rows = try People.Row.all(select)
                        guard rows.count == 1, rows[0].age == ages[position] else {
                            throw BenchError(description: "sqlite found \(rows.count) for \(names[position])")
                        }
                    }
                }
                return Measurement(operations: lookups, seconds: seconds, extra: ["µs/fetch": seconds * 1e6 / Double(lookups)])
            }),
        ]
    }

    /// `queries` fetches of the first 20 people by name (index `name` in order, limit 20), in
    /// one context reset after each, as `fetchIndexed`'s.
    static func fetchSortedLimit(_ objects: ObjectStore, _ sqlite: SQLitePeer, count: Int, queries: Int) -> [Contender] {
        let limit = 20
        let first = People.name(0)
        return [
            Contender(system: "cairn", run: { _ in
                let context = objects.newBackgroundContext()
                let seconds = try timed {
                    for _ in 0..<queries {
                        try context.performAndWait {
                            let page = try context.fetch(FetchRequest(
                                entityName: "Person", sortDescriptors: [.ascending("name")], fetchLimit: limit))
                            guard page.count == min(limit, count), page[0].value(forKey: "name") == .string(first) else {
                                throw BenchError(description: "cairn sorted page of \(page.count)")
                            }
                            context.reset()
                        }
                    }
                }
                return Measurement(operations: queries, seconds: seconds, extra: ["µs/fetch": seconds * 1e6 / Double(queries)])
            }),
            Contender(system: "sqlite", run: { _ in
                let select = try sqlite.prepare("SELECT \(People.Row.columns) FROM person ORDER BY name LIMIT \(limit)")
                defer { sqlite3_finalize(select) }
                let seconds = try timed {
                    for _ in 0..<queries {
                        sqlite3_reset(select)
                        let rows = try People.Row.all(select)
                        guard rows.count == min(limit, count), rows[0].name == first else {
                            throw BenchError(description: "sqlite sorted page of \(rows.count)")
                        }
                    }
                }
                return Measurement(operations: queries, seconds: seconds, extra: ["µs/fetch": seconds * 1e6 / Double(queries)])
            }),
        ]
    }

    /// `queries` counts of the people of one city, a 0.1% selection (the leading attribute of
    /// index `(city, age)`), cities in a seeded random order.
    static func countIndexed(_ objects: ObjectStore, _ sqlite: SQLitePeer, count: Int, queries: Int) -> [Contender] {
        var generator = SplitMix(state: 31)
        let cities = (0..<queries).map { _ in People.city(Int.random(in: 0..<People.cityCount, using: &generator)) }
        let expected = count / People.cityCount
        return [
            Contender(system: "cairn", run: { _ in
                let context = objects.newBackgroundContext()
                let seconds = try timed {
                    try context.performAndWait {
                        for city in cities {
                            let found = try context.count(for: FetchRequest(
                                entityName: "Person", predicate: .compare("city", .equal, .string(city))))
                            guard found == expected else { throw BenchError(description: "cairn counted \(found) in \(city)") }
                        }
                    }
                }
                return Measurement(operations: queries, seconds: seconds, extra: ["µs/count": seconds * 1e6 / Double(queries)])
            }),
            Contender(system: "sqlite", run: { _ in
                let select = try sqlite.prepare("SELECT count(*) FROM person WHERE city = ?")
                defer { sqlite3_finalize(select) }
                let seconds = try timed {
                    for city in cities {
                        sqlite3_reset(select)
                        sqlite3_bind_text(select, 1, city, -1, sqliteTransient)
                        guard sqlite3_step(select) == SQLITE_ROW, sqlite3_column_int64(select, 0) == Int64(expected) else {
                            throw BenchError(description: "sqlite miscounted \(city)")
                        }
                    }
                }
                return Measurement(operations: queries, seconds: seconds, extra: ["µs/count": seconds * 1e6 / Double(queries)])
            }),
        ]
    }

    /// Fetch `count` people, change the age of each (an attribute of index `(city, age)`, so
    /// every save deletes and puts one entry per object), save with the version check.
    /// SQLite: the same rows and indexes, a `SELECT` of whole rows, then
    /// `UPDATE … WHERE id=? AND version=?` per row in one transaction, FULL and NORMAL.
    static func contextSave(count: Int) -> [Contender] {
        let cairn = Slot<(ObjectStore, String)>()
        var contenders = [Contender(
            system: "cairn",
            prepare: { _ in cairn.value = try People.makeObjectStore(count: count) },
            run: { _ in
                let (objects, directory) = cairn.value!
                defer { objects.close(); removeDirectory(directory) }
                return try ContextWorkloads.bumpAndSave(objects, entity: "Person", attribute: "age", count: count)
            })]
        for synchronous in ["FULL", "NORMAL"] {
            let sqlite = Slot<(SQLitePeer, String)>()
            contenders.append(Contender(
                system: "sqlite-\(synchronous.lowercased())",
                prepare: { _ in sqlite.value = try People.makeSQLite(count: count, synchronous: synchronous) },
                run: { _ in
                    let (peer, directory) = sqlite.value!
                    defer { sqlite.value = nil; removeDirectory(directory) }
                    let seconds = try timed {
                        let select = try peer.prepare("SELECT \(People.Row.columns) FROM person")
                        let rows = try People.Row.all(select)
                        sqlite3_finalize(select)
                        try ContextWorkloads.bumpAndUpdate(peer, table: "person", column: "age", rows: rows.lazy.map { ($0.id, $0.age, $0.version) })
                    }
                    return Measurement(operations: count, seconds: seconds)
                }))
        }
        return contenders
    }

    /// The growth result: how much longer a fetch-indexed lookup takes at the large size than
    /// at the small one, per system, from the rates of `fetchIndexed` run at both sizes.
    static func growth(_ result: WorkloadResult, large: Int, small: Int) -> WorkloadResult {
        var result = result
        result.ratios = [:]  // cairn/this across sizes means nothing; the factors below do
        for system in ["cairn", "sqlite"] {
            guard let largeIndex = result.systems.firstIndex(where: { $0.system == "\(system)-\(large)" }),
                  let smallRun = result.systems.first(where: { $0.system == "\(system)-\(small)" }),
                  result.systems[largeIndex].median > 0 else { continue }
            let factor = smallRun.median / result.systems[largeIndex].median
            result.systems[largeIndex].extra["time-vs-\(small)"] = factor
            result.notes.append(String(format: "%@: a lookup at %d objects takes %.2f× its time at %d%@", system, large, factor, small,
                                       system == "cairn" ? " (target ≤ 2×: \(factor <= 2 ? "met" : "missed"))" : ""))
        }
        return result
    }
}
