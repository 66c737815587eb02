import CSQLite
import Contexts
import Foundation
import Policies

/// Relationships through the context layer, against SQLite with a foreign key (and an index on
/// it, as its own docs advise) doing the same: departments and their employees, the employees'
/// `department` a to-one whose to-many inverse is `employees`.
enum RelationshipWorkloads {
    static func schema(cascade: Bool) -> Schema {
        try! Schema([
            EntityDescription("Department", attributes: [AttributeDescription("name", .string)], relationships: [
                RelationshipDescription("employees", destination: "Person", inverse: "department", isToMany: true,
                                        deleteRule: cascade ? .cascade : .nullify),
            ]),
            EntityDescription("Person", attributes: [AttributeDescription("name", .string)], relationships: [
                RelationshipDescription("department", destination: "Department", inverse: "employees"),
            ]),
        ])
    }

    /// A store of `departments` departments with `members` employees each (the first
    /// department's IDs first), committed by one context; its directory.
    static func makeObjectStore(departments: Int, members: Int, cascade: Bool = false) throws -> (ObjectStore, String, [ObjectID]) {
        let directory = scratchDirectory("cairn-relationships")
        var options = ContextWorkloads.objectStoreOptions()
        options.saveDurability = .normal  // the build only: the store is reopened with the measured options
        let building = try ObjectStore(directory: directory, schema: schema(cascade: cascade), options: options)
        let context = building.newBackgroundContext()
        let ids = try context.performAndWait {
            var ids: [ObjectID] = []
            for index in 0..<departments {
                let department = context.insert(entity: "Department")
                department["name"] = .string("department \(index)")
                for member in 0..<members {
                    let person = context.insert(entity: "Person")
                    person["name"] = .string("person \(index)-\(member)")
                    person.setDestination(department, of: "department")
                }
                try context.save()
                ids.append(department.objectID)
                context.reset()
            }
            return ids
        }
        building.close()
        let objects = try ObjectStore(directory: directory, schema: schema(cascade: cascade), options: ContextWorkloads.objectStoreOptions())
        return (objects, directory, ids)
    }

    /// The SQLite peer: the same rows, `person.department_id` a foreign key with an index.
    static func makeSQLite(departments: Int, members: Int) throws -> (SQLitePeer, String) {
        let directory = scratchDirectory("sqlite-relationships")
        let peer = try SQLitePeer(path: directory + "/bench.db", synchronous: "FULL")
        try peer.execute("PRAGMA foreign_keys=ON")
        try peer.execute("CREATE TABLE department (id INTEGER PRIMARY KEY, version INTEGER NOT NULL, name TEXT NOT NULL)")
        try peer.execute("""
            CREATE TABLE person (id INTEGER PRIMARY KEY, version INTEGER NOT NULL, name TEXT NOT NULL,
                department_id INTEGER REFERENCES department(id) ON DELETE CASCADE)
            """)
        try peer.execute("CREATE INDEX person_department ON person(department_id)")
        try peer.execute("BEGIN")
        let department = try peer.prepare("INSERT INTO department (id, version, name) VALUES (?, 1, ?)")
        let person = try peer.prepare("INSERT INTO person (version, name, department_id) VALUES (1, ?, ?)")
        for index in 0..<departments {
            sqlite3_reset(department)
            sqlite3_bind_int64(department, 1, Int64(index + 1))
            sqlite3_bind_text(department, 2, "department \(index)", -1, sqliteTransient)
            guard sqlite3_step(department) == SQLITE_DONE else { throw BenchError(description: "sqlite department insert") }
            for member in 0..<members {
                sqlite3_reset(person)
                sqlite3_bind_text(person, 1, "person \(index)-\(member)", -1, sqliteTransient)
                sqlite3_bind_int64(person, 2, Int64(index + 1))
                guard sqlite3_step(person) == SQLITE_DONE else { throw BenchError(description: "sqlite person insert") }
            }
        }
        sqlite3_finalize(department)
        sqlite3_finalize(person)
        try peer.execute("COMMIT")
        return (peer, directory)
    }

    // MARK: - add-member

    /// `saves` durable saves, each adding one new person to a department of `members`; prints
    /// the records each save writes (the person, and the department's version: O(1)).
    static func addMember(sizes: [Int], saves: Int) -> [Contender] {
        var contenders: [Contender] = []
        for members in sizes {
            let cairn = Slot<(ObjectStore, String, ObjectID)>()
            contenders.append(Contender(
                system: "cairn-\(members)",
                prepare: { _ in
                    let (objects, directory, ids) = try makeObjectStore(departments: 1, members: members)
                    cairn.value = (objects, directory, ids[0])
                },
                run: { _ in
                    let (objects, directory, department) = cairn.value!
                    defer { objects.close(); removeDirectory(directory) }
                    let context = objects.newBackgroundContext()
                    var records = 0
                    let seconds = try timed {
                        try context.performAndWait {
                            for index in 0..<saves {
                                let person = context.insert(entity: "Person")
                                person["name"] = .string("new \(index)")
                                try context.existingObject(with: department).addMember(person, to: "employees")
                                try context.save()
                                let report = try context.lastSaveReport.unwrap("no save report")
                                records = max(records, report.insertedObjectIDs.count + report.updatedObjectIDs.count + report.deletedObjectIDs.count)
                                context.reset()
                            }
                        }
                    }
                    let count = try context.performAndWait { try context.existingObject(with: department).memberCount(of: "employees") }
                    guard count == members + saves else { throw BenchError(description: "cairn: \(count) members") }
                    return Measurement(operations: saves, seconds: seconds, extra: ["records/save": Double(records)])
                }))
            let sqlite = Slot<(SQLitePeer, String)>()
            contenders.append(Contender(
                system: "sqlite-\(members)",
                prepare: { _ in sqlite.value = try makeSQLite(departments: 1, members: members) },
                run: { _ in
                    let (peer, directory) = sqlite.value!
                    defer { sqlite.value = nil; removeDirectory(directory) }
                    let insert = try peer.prepare("INSERT INTO person (version, name, department_id) VALUES (1, ?, 1)")
                    let bump = try peer.prepare("UPDATE department SET version = version + 1 WHERE id = 1")
                    defer { sqlite3_finalize(insert); sqlite3_finalize(bump) }
                    let seconds = try timed {
                        for index in 0..<saves {
                            try peer.execute("BEGIN")
                            sqlite3_reset(insert)
                            sqlite3_bind_text(insert, 1, "new \(index)", -1, sqliteTransient)
                            sqlite3_reset(bump)
                            guard sqlite3_step(insert) == SQLITE_DONE, sqlite3_step(bump) == SQLITE_DONE else {
                                throw BenchError(description: "sqlite add member")
                            }
                            try peer.execute("COMMIT")
                        }
                    }
                    return Measurement(operations: saves, seconds: seconds, extra: ["records/save": 2])
                }))
        }
        return contenders
    }

    // MARK: - traverse

    /// Fetch every department with its employees prefetched and read every employee's name;
    /// SQLite: the join.
    static func traverse(_ objects: ObjectStore, _ sqlite: SQLitePeer, departments: Int, members: Int) -> [Contender] {
        let total = departments * members
        return [
            Contender(system: "cairn", run: { _ in
                let context = objects.newBackgroundContext()
                var names = 0
                let seconds = try timed {
                    try context.performAndWait {
                        var request = FetchRequest(entityName: "Department")
                        request.relationshipKeyPathsForPrefetching = ["employees"]
                        for department in try context.fetch(request) {
                            for person in try department.members(of: "employees") {
                                if case .string = person["name"] { names += 1 }
                            }
                        }
                        context.reset()
                    }
                }
                guard names == total else { throw BenchError(description: "cairn read \(names) names") }
                return Measurement(operations: total, seconds: seconds)
            }),
            Contender(system: "sqlite", run: { _ in
                let select = try sqlite.prepare("""
                    SELECT d.id, d.name, p.id, p.name FROM department d JOIN person p ON p.department_id = d.id
                    """)
                defer { sqlite3_finalize(select) }
                var names = 0
                let seconds = timed {
                    sqlite3_reset(select)
                    var rows: [(Int64, String, Int64, String)] = []
                    while sqlite3_step(select) == SQLITE_ROW {
                        guard let department = sqlite3_column_text(select, 1), let person = sqlite3_column_text(select, 3) else { continue }
                        rows.append((sqlite3_column_int64(select, 0), String(cString: department), sqlite3_column_int64(select, 2),
                                     String(cString: person)))
                    }
                    names = rows.count
                }
                guard names == total else { throw BenchError(description: "sqlite read \(names) names") }
                return Measurement(operations: total, seconds: seconds)
            }),
        ]
    }

    // MARK: - cascade-delete

    /// Delete one department whose `dependents` employees cascade, and save (durably); SQLite:
    /// DELETE with ON DELETE CASCADE.
    static func cascadeDelete(dependents: Int) -> [Contender] {
        let cairn = Slot<(ObjectStore, String, ObjectID)>()
        let sqlite = Slot<(SQLitePeer, String)>()
        return [
            Contender(
                system: "cairn",
                prepare: { _ in
                    let (objects, directory, ids) = try makeObjectStore(departments: 1, members: dependents, cascade: true)
                    cairn.value = (objects, directory, ids[0])
                },
                run: { _ in
                    let (objects, directory, department) = cairn.value!
                    defer { objects.close(); removeDirectory(directory) }
                    let context = objects.newBackgroundContext()
                    var deleted = 0
                    let seconds = try timed {
                        try context.performAndWait {
                            context.delete(try context.existingObject(with: department))
                            deleted = context.deletedObjects.count
                            try context.save()
                        }
                    }
                    guard deleted == dependents + 1 else { throw BenchError(description: "cairn deleted \(deleted)") }
                    return Measurement(operations: dependents, seconds: seconds)
                }),
            Contender(
                system: "sqlite",
                prepare: { _ in sqlite.value = try makeSQLite(departments: 1, members: dependents) },
                run: { _ in
                    let (peer, directory) = sqlite.value!
                    defer { sqlite.value = nil; removeDirectory(directory) }
                    let seconds = try timed { try peer.execute("DELETE FROM department WHERE id = 1") }
                    let count = try peer.prepare("SELECT count(*) FROM person")
                    defer { sqlite3_finalize(count) }
                    guard sqlite3_step(count) == SQLITE_ROW, sqlite3_column_int64(count, 0) == 0 else {
                        throw BenchError(description: "sqlite cascade left people")
                    }
                    return Measurement(operations: dependents, seconds: seconds)
                }),
        ]
    }
}

extension Optional {
    /// The value, or a BenchError saying `what`.
    func unwrap(_ what: String) throws -> Wrapped {
        guard let self else { throw BenchError(description: what) }
        return self
    }
}
