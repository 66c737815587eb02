import CSQLite
import Contexts
import Foundation
import Policies

/// The data of the index workloads: people with a unique name, one of 1,000 cities and an age,
/// the same rows in Cairn and in SQLite, indexed alike: `name`, and `(city, age)`.
///
/// Person `i` is inserted at a seeded random position, so the name order is not the primary
/// key order and a lookup by name lands on a random record, as it would in real data.
enum People {
    /// Each city holds a thousandth of the people: a city is a 0.1% selection.
    static let cityCount = 1_000
    /// People per save (and per SQLite insert transaction) when a store is filled: big saves,
    /// so a million objects load in seconds, and one context never holds more than this.
    static let saveBatch = 100_000

    static let indexes = [["name"], ["city", "age"]]

    static let schema = try! Schema([
        EntityDescription("Person", attributes: [
            AttributeDescription("name", .string),
            AttributeDescription("city", .string),
            AttributeDescription("age", .int),
            AttributeDescription("score", .double),
        ], indexes: indexes)
    ])

    static func name(_ index: Int) -> String {
        let digits = String(index)
        return "person " + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
    }

    static func city(_ index: Int) -> String {
        let digits = String(index % cityCount)
        return "city " + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    static func age(_ index: Int) -> Int64 { Int64(18 + (index &* 7_919) % 80) }

    static func score(_ index: Int) -> Double { Double(index) / 3 }

    /// A store holding `count` people, saved in batches of `saveBatch` and applied to LMDB, so
    /// the timed reads meet LMDB as `read-random` does, not the overlay.
    static func makeObjectStore(count: Int) throws -> (ObjectStore, String) {
        let directory = scratchDirectory("cairn-people")
        let objects = try ObjectStore(directory: directory, schema: schema, options: ContextWorkloads.objectStoreOptions())
        let order = Dataset.shuffled(count, seed: 11)
        for start in stride(from: 0, to: count, by: saveBatch) {
            let context = objects.newBackgroundContext()
            try context.performAndWait {
                for index in order[start..<min(start + saveBatch, count)] {
                    let person = context.insert(entity: "Person")
                    person.setValue(.string(name(index)), forKey: "name")
                    person.setValue(.string(city(index)), forKey: "city")
                    person.setValue(.int(age(index)), forKey: "age")
                    person.setValue(.double(score(index)), forKey: "score")
                }
                try context.save()
            }
        }
        try objects.store.flush()
        return (objects, directory)
    }

    /// The same people in SQLite, in the same order (row IDs 1…count as Cairn's primary keys),
    /// with the same two indexes. They are created after the rows, which is SQLite's fast way
    /// to load; what is timed never includes the load.
    static func makeSQLite(count: Int, synchronous: String) throws -> (SQLitePeer, String) {
        let directory = scratchDirectory("sqlite-people")
        let peer = try SQLitePeer(path: directory + "/bench.db", synchronous: synchronous)
        try peer.execute("CREATE TABLE person (id INTEGER PRIMARY KEY, version INTEGER NOT NULL, name TEXT NOT NULL, city TEXT NOT NULL, age INTEGER NOT NULL, score REAL NOT NULL)")
        let insert = try peer.prepare("INSERT INTO person (id, version, name, city, age, score) VALUES (?, 1, ?, ?, ?, ?)")
        defer { sqlite3_finalize(insert) }
        let order = Dataset.shuffled(count, seed: 11)
        for start in stride(from: 0, to: count, by: saveBatch) {
            try peer.execute("BEGIN")
            for position in start..<min(start + saveBatch, count) {
                let index = order[position]
                sqlite3_reset(insert)
                sqlite3_bind_int64(insert, 1, Int64(position + 1))
                sqlite3_bind_text(insert, 2, name(index), -1, sqliteTransient)
                sqlite3_bind_text(insert, 3, city(index), -1, sqliteTransient)
                sqlite3_bind_int64(insert, 4, age(index))
                sqlite3_bind_double(insert, 5, score(index))
                guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchError(description: "sqlite insert person") }
            }
            try peer.execute("COMMIT")
        }
        try peer.execute("CREATE INDEX person_name ON person (name)")
        try peer.execute("CREATE INDEX person_city_age ON person (city, age)")
        try peer.execute("ANALYZE")
        return (peer, directory)
    }

    /// One person row read whole into a value, as a record type of an SQLite wrapper reads it:
    /// the SQLite peer of a fetched object, which holds every attribute decoded.
    struct Row {
        let id: Int64
        let version: Int64
        let name: String
        let city: String
        let age: Int64
        let score: Double

        static let columns = "id, version, name, city, age, score"

        /// The row the statement stands on.
        init(_ statement: OpaquePointer) throws {
            guard let name = sqlite3_column_text(statement, 2), let city = sqlite3_column_text(statement, 3) else {
                throw BenchError(description: "sqlite person row without a name or city")
            }
            id = sqlite3_column_int64(statement, 0)
            version = sqlite3_column_int64(statement, 1)
            self.name = String(cString: name)
            self.city = String(cString: city)
            age = sqlite3_column_int64(statement, 4)
            score = sqlite3_column_double(statement, 5)
        }

        /// Every row the statement yields.
        static func all(_ statement: OpaquePointer) throws -> [Row] {
            var rows: [Row] = []
            while sqlite3_step(statement) == SQLITE_ROW { rows.append(try Row(statement)) }
            return rows
        }
    }
}

/// The people stores the read workloads share, one Cairn store and one SQLite database per
/// size, built the first time a workload asks: loading a million people twice is most of the
/// index workloads' time, so `fetch-indexed`, `fetch-sorted-limit`, `count-indexed` and
/// `growth` read the same stores. Closed when the workloads are released.
///
/// `@unchecked Sendable`: the harness runs workloads one after another on one thread.
final class PeopleStores: @unchecked Sendable {
    private var cairn: [Int: (ObjectStore, String)] = [:]
    private var sqlite: [Int: (SQLitePeer, String)] = [:]
    func cairn(_ count: Int, log: (String) -> Void) throws -> ObjectStore {
        if let (objects, _) = cairn[count] { return objects }
        var made: (ObjectStore, String)? = nil
        let seconds = try timed { made = try People.makeObjectStore(count: count) }
        log(String(format: "  loaded %d people into cairn in %.1f s", count, seconds))
        cairn[count] = made
        return made!.0
    }

    /// One SQLite database opened with NORMAL, as the other read workloads use.
    func sqlite(_ count: Int, log: (String) -> Void) throws -> SQLitePeer {
        if let (peer, _) = sqlite[count] { return peer }
        var made: (SQLitePeer, String)? = nil
        let seconds = try timed { made = try People.makeSQLite(count: count, synchronous: "NORMAL") }
        log(String(format: "  loaded %d people into sqlite in %.1f s", count, seconds))
        sqlite[count] = made
        return made!.0
    }

    deinit {
        for (objects, directory) in cairn.values {
            objects.close()
            removeDirectory(directory)
        }
        let directories = sqlite.values.map(\.1)
        sqlite = [:]  // closes the connections before their files go
        for directory in directories { removeDirectory(directory) }
    }
}
