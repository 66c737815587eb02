import CairnTestSupport
import Contexts
import Foundation
import KVEngine
import Policies
import Testing

/// Schema evolution, tested by reopening real stores: each kind of change either migrates on
/// open (and the records, the indexes and the recorded schema say so afterwards), or fails
/// with a typed error that lists the differences and leaves the old store openable.
@Suite struct SchemaMigrationTests {
    static let personV1 = EntityDescription("Person", attributes: [
        AttributeDescription("name", .string),
        AttributeDescription("age", .int),
    ], indexes: [["name"]])

    /// A store in a fresh directory holding `people` under `personV1`.
    static func seeded(_ people: [PropertyValues], prefix: String) throws -> (TemporaryDirectory, [ObjectID]) {
        let directory = try TemporaryDirectory(prefix: prefix)
        let objects = try ObjectStore(directory: directory.path, schema: try Schema([personV1]))
        defer { objects.close() }
        let ids = try insert(people, entity: "Person", in: objects)
        return (directory, ids)
    }

    static func insert(_ people: [PropertyValues], entity: String, in objects: ObjectStore) throws -> [ObjectID] {
        let context = objects.newBackgroundContext()
        return try context.performAndWait {
            let inserted = people.map { values in
                let object = context.insert(entity: entity)
                for (name, value) in values { object[name] = value }
                return object
            }
            try context.save()
            return inserted.map(\.objectID)
        }
    }

    /// Every stored object of `entity`, by primary key.
    static func stored(_ entity: String, in objects: ObjectStore) throws -> [UInt64: PropertyValues] {
        let context = objects.newBackgroundContext()
        return try context.performAndWait {
            var found: [UInt64: PropertyValues] = [:]
            for object in try context.fetch(FetchRequest(entityName: entity)) {
                found[object.objectID.primaryKey!] = object.values.filter { $0.value != .null }
            }
            return found
        }
    }

    static let ann: PropertyValues = ["name": .string("Ann"), "age": .int(30)]
    static let bo: PropertyValues = ["name": .string("Bo"), "age": .int(4)]

    @Test func aNewOptionalAttributeMigratesAutomaticallyAndIsRecorded() throws {
        let (directory, ids) = try Self.seeded([Self.ann, Self.bo], prefix: "cairn-migrate-optional")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Person", attributes: Self.personV1.attributes + [
            AttributeDescription("city", .string, isOptional: true),
        ], indexes: [["name"], ["city"]])])
        let objects = try ObjectStore(directory: directory.path, schema: v2)
        #expect(try Self.stored("Person", in: objects) == [ids[0].primaryKey!: Self.ann, ids[1].primaryKey!: Self.bo])
        #expect(try objects.indexProblems() == [])
        let context = objects.newBackgroundContext()
        try context.performAndWait {
            try context.existingObject(with: ids[0])["city"] = .string("Oslo")
            try context.save()
        }
        objects.close()
        // The store now records v2: reopening with v1 is a migration of its own (city removed).
        let record = try Self.recordedSchema(directory.path)
        #expect(record == v2)
    }

    @Test func aNewAttributeWithADefaultFillsStoredObjects() throws {
        let (directory, ids) = try Self.seeded([Self.ann], prefix: "cairn-migrate-default")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Person", attributes: Self.personV1.attributes + [
            AttributeDescription("active", .bool, defaultValue: .bool(true)),
        ], indexes: [["name"], ["active"]])])
        let progress = ProgressLog()
        var options = ObjectStore.Options()
        options.migrationProgress = { progress.append("\($0)") }
        let objects = try ObjectStore(directory: directory.path, schema: v2, options: options)
        defer { objects.close() }
        #expect(progress.lines == ["Person: migrated, 1 records"])
        #expect(try Self.stored("Person", in: objects)[ids[0].primaryKey!] == Self.ann.merging(["active": .bool(true)]) { $1 })
        // The index on the new attribute holds the filled value.
        #expect(try objects.indexProblems() == [])
        let context = objects.newBackgroundContext()
        let active = try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Person", predicate: .compare("active", .equal, .bool(true)))).count
        }
        #expect(active == 1)
    }

    @Test func aNewEntityMigratesAutomatically() throws {
        let (directory, ids) = try Self.seeded([Self.ann], prefix: "cairn-migrate-entity")
        defer { directory.remove() }
        let v2 = try Schema([Self.personV1, EntityDescription("Tag", attributes: [AttributeDescription("label", .string)])])
        let objects = try ObjectStore(directory: directory.path, schema: v2)
        defer { objects.close() }
        #expect(try Self.stored("Person", in: objects) == [ids[0].primaryKey!: Self.ann])
        _ = try Self.insert([["label": .string("red")]], entity: "Tag", in: objects)
        #expect(try Self.stored("Tag", in: objects).count == 1)
    }

    @Test func aRemovedAttributeIsDroppedAndDoesNotComeBack() throws {
        let (directory, ids) = try Self.seeded([Self.ann], prefix: "cairn-migrate-removed")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Person", attributes: [AttributeDescription("name", .string)], indexes: [["name"]])])
        let objects = try ObjectStore(directory: directory.path, schema: v2)
        #expect(try Self.stored("Person", in: objects) == [ids[0].primaryKey!: ["name": .string("Ann")]])
        objects.close()
        // Adding "age" back (optional now) finds no old value: the migration rewrote the record.
        let v3 = try Schema([EntityDescription("Person", attributes: [
            AttributeDescription("name", .string), AttributeDescription("age", .int, isOptional: true),
        ])])
        let again = try ObjectStore(directory: directory.path, schema: v3)
        defer { again.close() }
        #expect(try Self.stored("Person", in: again) == [ids[0].primaryKey!: ["name": .string("Ann")]])
    }

    @Test func renamingIdentifiersMoveAttributeValuesAndEntities() throws {
        let (directory, ids) = try Self.seeded([Self.ann, Self.bo], prefix: "cairn-migrate-rename")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Customer", attributes: [
            AttributeDescription("fullName", .string, renamingIdentifier: "name"),
            AttributeDescription("age", .int),
        ], indexes: [["fullName"]], uniquenessConstraints: [["fullName"]], renamingIdentifier: "Person")])
        let objects = try ObjectStore(directory: directory.path, schema: v2)
        let customers = try Self.stored("Customer", in: objects)
        #expect(customers == [
            ids[0].primaryKey!: ["fullName": .string("Ann"), "age": .int(30)],
            ids[1].primaryKey!: ["fullName": .string("Bo"), "age": .int(4)],
        ])
        #expect(try objects.indexProblems() == [])
        // The old table is empty, and new objects continue the old primary-key sequence.
        let snapshot = try objects.store.snapshot()
        var left = 0
        try snapshot.forEach(in: "entity:Person") { _, _, _ in
            left += 1
            return true
        }
        snapshot.close()
        #expect(left == 0)
        let next = try Self.insert([["fullName": .string("Cy"), "age": .int(1)]], entity: "Customer", in: objects)
        #expect(next[0].primaryKey! > ids.map { $0.primaryKey! }.max()!)
        let context = objects.newBackgroundContext()
        let found = try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Customer", predicate: .compare("fullName", .equal, .string("Bo")))).map(\.objectID)
        }
        #expect(found == [ObjectID(entityName: "Customer", primaryKey: ids[1].primaryKey!)])
        objects.close()
    }

    @Test func aTypeChangeIsATypedErrorListingTheDifferencesAndWritesNothing() throws {
        let (directory, ids) = try Self.seeded([Self.ann], prefix: "cairn-migrate-type")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Person", attributes: [
            AttributeDescription("name", .string),
            AttributeDescription("age", .string),
            AttributeDescription("city", .string, isOptional: true),
        ])])
        #expect {
            _ = try ObjectStore(directory: directory.path, schema: v2)
        } throws: { error in
            guard case ContextError.incompatibleSchema(let differences) = error else { return false }
            return Set(differences) == [
                .typeChanged(entity: "Person", attribute: "age", from: .int, to: .string),
                .attributeAdded(entity: "Person", attribute: "city"),
            ] && "\(error)".contains("Person.age: type changed from int to string (needs a migration closure)")
        }
        // Nothing written: the old schema opens without a migration, values and index intact.
        let progress = ProgressLog()
        var options = ObjectStore.Options()
        options.migrationProgress = { progress.append("\($0)") }
        let old = try ObjectStore(directory: directory.path, schema: try Schema([Self.personV1]), options: options)
        defer { old.close() }
        #expect(progress.lines.isEmpty)
        #expect(try Self.stored("Person", in: old) == [ids[0].primaryKey!: Self.ann])
        #expect(try old.indexProblems() == [])
    }

    @Test func aNewRequiredAttributeWithoutADefaultIsATypedError() throws {
        let (directory, _) = try Self.seeded([Self.ann], prefix: "cairn-migrate-required")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Person", attributes: Self.personV1.attributes + [
            AttributeDescription("email", .string),
        ])])
        #expect {
            _ = try ObjectStore(directory: directory.path, schema: v2)
        } throws: { error in
            guard case ContextError.incompatibleSchema(let differences) = error else { return false }
            return differences == [.requiredAttributeAdded(entity: "Person", attribute: "email")]
        }
        #expect(try Self.recordedSchema(directory.path) == (try Schema([Self.personV1])))
    }

    @Test func aMigrationClosureConvertsTypesAndFillsRequiredAttributes() throws {
        let (directory, ids) = try Self.seeded([Self.ann, Self.bo], prefix: "cairn-migrate-closure")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Person", attributes: [
            AttributeDescription("name", .string),
            AttributeDescription("age", .string),
            AttributeDescription("email", .string),
        ], indexes: [["age"]])])
        var options = ObjectStore.Options()
        options.migration = { record in
            guard case .int(let age) = record.storedValues["age"] ?? .null, case .string(let name) = record.values["name"] ?? .null else {
                return
            }
            #expect(record.storedSchema.entity(named: "Person")?.attribute(named: "age")?.type == .int)
            record.values["age"] = .string("\(age) years")
            record.values["email"] = .string(name.lowercased() + "@example.com")
        }
        let objects = try ObjectStore(directory: directory.path, schema: v2, options: options)
        defer { objects.close() }
        #expect(try Self.stored("Person", in: objects) == [
            ids[0].primaryKey!: ["name": .string("Ann"), "age": .string("30 years"), "email": .string("ann@example.com")],
            ids[1].primaryKey!: ["name": .string("Bo"), "age": .string("4 years"), "email": .string("bo@example.com")],
        ])
        #expect(try objects.indexProblems() == [])
    }

    @Test func aClosureThatLeavesAnInvalidValueFailsTheOpenAndWritesNothing() throws {
        let (directory, ids) = try Self.seeded([Self.ann], prefix: "cairn-migrate-closure-bad")
        defer { directory.remove() }
        let v2 = try Schema([EntityDescription("Person", attributes: [
            AttributeDescription("name", .string), AttributeDescription("age", .string),
        ])])
        var options = ObjectStore.Options()
        options.migration = { _ in }  // leaves the int in a string attribute
        #expect {
            _ = try ObjectStore(directory: directory.path, schema: v2, options: options)
        } throws: { error in
            guard case ContextError.migrationFailed(let id, let reason) = error else { return false }
            return id == ids[0] && reason.contains("Person.age is of type string")
        }
        let old = try ObjectStore(directory: directory.path, schema: try Schema([Self.personV1]))
        defer { old.close() }
        #expect(try Self.stored("Person", in: old) == [ids[0].primaryKey!: Self.ann])
    }

    @Test func aRemovedEntityLosesItsObjectsAndARequiredAttributeTakesItsDefault() throws {
        let directory = try TemporaryDirectory(prefix: "cairn-migrate-remove-entity")
        defer { directory.remove() }
        let v1 = try Schema([
            EntityDescription("Person", attributes: [AttributeDescription("name", .string), AttributeDescription("age", .int, isOptional: true)]),
            EntityDescription("Draft", attributes: [AttributeDescription("text", .string)]),
        ])
        let first = try ObjectStore(directory: directory.path, schema: v1)
        let people = try Self.insert([["name": .string("Ann")], ["name": .string("Bo"), "age": .int(4)]], entity: "Person", in: first)
        _ = try Self.insert([["text": .string("x")]], entity: "Draft", in: first)
        first.close()

        let v2 = try Schema([EntityDescription("Person", attributes: [
            AttributeDescription("name", .string), AttributeDescription("age", .int, defaultValue: .int(0)),
        ])])
        let objects = try ObjectStore(directory: directory.path, schema: v2)
        #expect(try Self.stored("Person", in: objects) == [
            people[0].primaryKey!: ["name": .string("Ann"), "age": .int(0)],
            people[1].primaryKey!: ["name": .string("Bo"), "age": .int(4)],
        ])
        objects.close()
        // Draft comes back empty: its objects were deleted with it.
        let v3 = try Schema(v2.entities + [EntityDescription("Draft", attributes: [AttributeDescription("text", .string)])])
        let again = try ObjectStore(directory: directory.path, schema: v3)
        defer { again.close() }
        #expect(try Self.stored("Draft", in: again).isEmpty)
    }

    @Test func reopeningWithTheRecordedSchemaWritesNothing() throws {
        let (directory, _) = try Self.seeded([Self.ann], prefix: "cairn-migrate-same")
        defer { directory.remove() }
        let before = try Store(directory: directory.path)
        let first = try before.snapshot()
        let version = first.version
        first.close()
        before.close()
        var options = ObjectStore.Options()
        options.migration = { _ in Issue.record("no object of an unchanged schema is migrated") }
        let objects = try ObjectStore(directory: directory.path, schema: try Schema([Self.personV1]), options: options)
        let snapshot = try objects.store.snapshot()
        #expect(snapshot.version == version)
        snapshot.close()
        objects.close()
    }

    @Test func theSchemaRecordIsFrozen() throws {
        let schema = try Schema([EntityDescription("Tag", attributes: [
            AttributeDescription("label", .string), AttributeDescription("weight", .int, isOptional: true, defaultValue: .int(1)),
        ], indexes: [["label"]])])
        let text = String(decoding: StoredSchema.encode(schema), as: UTF8.self)
        #expect(text == #"{"entities":[{"attributes":[{"name":"label","optional":false,"type":"string"},"#
            + #"{"defaultValue":{"type":"int","value":1},"name":"weight","optional":true,"type":"int"}],"#
            + #""indexes":[["label"]],"name":"Tag","uniquenessConstraints":[]}],"format":1,"#
            + #""versionHash":"\#(StoredSchema.versionHash(of: schema))"}"#)
        #expect(try StoredSchema.decode(Array(text.utf8)).schema == schema)
        #expect(StoredSchema.versionHash(of: schema).count == 16)
    }

    static func recordedSchema(_ path: String) throws -> Schema? {
        let store = try Store(directory: path)
        defer { store.close() }
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        return try snapshot.get(StoredSchema.key, in: StoredSchema.table).map { try StoredSchema.decode($0.value).schema }
    }
}
