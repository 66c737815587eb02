import Contexts
import Foundation
import Policies
import Testing

// `cairn dump` of an object table and `cairn fetch`: both read the schema the store recorded.

extension CairnToolTests {
    @Suite struct ObjectCommandTests {
        static func peopleSchema() throws -> Schema {
            try Schema([EntityDescription("Person", attributes: [
                AttributeDescription("name", .string),
                AttributeDescription("age", .int),
                AttributeDescription("score", .double, isOptional: true),
                AttributeDescription("avatar", .bytes, isOptional: true),
            ], indexes: [["age"]])])
        }

        /// A store holding three people, one with bytes that are not UTF-8 and a quote in a name.
        static func peopleStore(_ directory: TemporaryDirectory) throws -> String {
            let path = directory.path + "/store"
            let objects = try ObjectStore(directory: path, schema: peopleSchema())
            defer { objects.close() }
            let context = objects.newBackgroundContext()
            try context.performAndWait {
                for (name, age, avatar) in [("Ann", 30, [0xFF, 0x00] as [UInt8]?), ("Bo \"B\"", 4, nil), ("Cy", 52, nil)] {
                    let person = context.insert(entity: "Person")
                    person["name"] = .string(name)
                    person["age"] = .int(Int64(age))
                    if let avatar { person["avatar"] = .bytes(avatar) }
                    if age == 4 { person["score"] = .double(9.5) }
                }
                try context.save()
            }
            return path
        }

        @Test func fetchAndDumpReadAnObjectStoreBesideTheProcessWritingIt() throws {
            let directory = try TemporaryDirectory(purpose: "fetch-beside")
            defer { directory.remove() }
            let path = try Self.peopleStore(directory)
            let objects = try ObjectStore(directory: path, schema: Self.peopleSchema())
            defer { objects.close() }
            let context = objects.newBackgroundContext()
            try context.performAndWait {
                let dee = context.insert(entity: "Person")
                dee["name"] = .string("Dee")
                dee["age"] = .int(7)
                try context.save()
            }
            let fetch = try cairn("fetch", path, "Person", "age > 5")
            #expect(fetch.status == 0, "\(fetch)")
            #expect(fetch.lines.dropFirst().map { $0.split(separator: "\t")[1] } == ["Ann", "Cy", "Dee"], "\(fetch)")
            let dump = try cairn("dump", path, "--table", "entity:Person")
            #expect(dump.status == 0 && dump.lines.count == 4 && dump.lines[3].contains("\"Dee\""), "\(dump)")
        }

        @Test func aReadOnlyObjectStoreFetchesAndRefusesSavesWritingNothing() throws {
            let directory = try TemporaryDirectory(purpose: "read-only-objects")
            defer { directory.remove() }
            let path = try Self.peopleStore(directory)
            var options = ObjectStore.Options()
            options.readOnly = true
            let reader = try ObjectStore(directory: path, schema: Self.peopleSchema(), options: options)
            let context = reader.newBackgroundContext()
            let (count, failure) = try context.performAndWait { () throws -> (Int, ContextError?) in
                let count = try context.count(for: FetchRequest(entityName: "Person"))
                let eve = context.insert(entity: "Person")
                eve["name"] = .string("Eve")
                eve["age"] = .int(1)
                do {
                    try context.save()
                    return (count, nil)
                } catch let error as ContextError {
                    return (count, error)
                }
            }
            #expect(count == 3)
            guard case .storage(let storage)? = failure else {
                Issue.record("the save of a read-only store did not fail with a storage error: \(String(describing: failure))")
                return
            }
            #expect(storage.code == .readOnly, "\(storage)")
            reader.close()
            let fetch = try cairn("fetch", path, "Person")
            #expect(fetch.status == 0 && fetch.lines.count == 4, "\(fetch)")
        }

        @Test func dumpOfAnObjectTablePrintsJSONObjects() throws {
            let directory = try TemporaryDirectory(purpose: "dump-json")
            defer { directory.remove() }
            let path = try Self.peopleStore(directory)
            let run = try cairn("dump", path, "--table", "entity:Person")
            #expect(run.status == 0, "\(run)")
            #expect(run.lines == [
                #"{"_id":"cairn://Person/p1","name":"Ann","age":30,"score":null,"avatar":"/wA="}"#,
                #"{"_id":"cairn://Person/p2","name":"Bo \"B\"","age":4,"score":9.5,"avatar":null}"#,
                #"{"_id":"cairn://Person/p3","name":"Cy","age":52,"score":null,"avatar":null}"#,
            ])
            // Every line is JSON a standard parser reads.
            for line in run.lines {
                #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any])
            }
            // Tables that are not object tables still print raw records.
            let raw = try cairn("dump", path, "--table", "meta:sequences")
            #expect(raw.status == 0 && raw.lines.count == 1 && raw.lines[0].hasPrefix("Person\t"), "\(raw)")
        }

        @Test func fetchFiltersWithAPredicate() throws {
            let directory = try TemporaryDirectory(purpose: "fetch")
            defer { directory.remove() }
            let path = try Self.peopleStore(directory)
            let json = try cairn("fetch", path, "Person", #"age > 3 AND NOT (name == "Cy")"#, "--json")
            #expect(json.status == 0, "\(json)")
            #expect(json.lines.map { $0.prefix(30) } == [#"{"_id":"cairn://Person/p1","na"#, #"{"_id":"cairn://Person/p2","na"#])
            let table = try cairn("fetch", path, "Person", #"score >= 9 OR name IN {"Cy"}"#)
            #expect(table.status == 0, "\(table)")
            #expect(table.lines == [
                "_id\tname\tage\tscore\tavatar",
                "cairn://Person/p2\tBo \"B\"\t4\t9.5\tnull",
                "cairn://Person/p3\tCy\t52\tnull\tnull",
            ])
            let all = try cairn("fetch", path, "Person")
            #expect(all.status == 0 && all.lines.count == 4, "\(all)")
        }

        @Test func fetchReportsBadPredicatesAndEntitiesAsUsageErrors() throws {
            let directory = try TemporaryDirectory(purpose: "fetch-bad")
            defer { directory.remove() }
            let path = try Self.peopleStore(directory)
            let unknownAttribute = try cairn("fetch", path, "Person", "height > 3")
            #expect(unknownAttribute.status == 1 && unknownAttribute.errorOutput.contains("no attribute \"height\""), "\(unknownAttribute)")
            let syntax = try cairn("fetch", path, "Person", "age >")
            #expect(syntax.status == 1 && syntax.errorOutput.contains("expected a constant"), "\(syntax)")
            let entity = try cairn("fetch", path, "Pet")
            #expect(entity.status == 1 && entity.errorOutput.contains("its entities are Person"), "\(entity)")
            let noSchema = try cairn("fetch", directory.path + "/missing", "Person")
            #expect(noSchema.status == 3, "\(noSchema)")
        }
        @Test func migrateAppliesASchemaFileWithProgressAndRefusesTypeChanges() throws {
            let directory = try TemporaryDirectory(purpose: "migrate")
            defer { directory.remove() }
            let path = try Self.peopleStore(directory)
            let printed = try cairn("schema", path)
            #expect(printed.status == 0 && printed.output.contains("\"versionHash\""), "\(printed)")

            // Rename name to fullName and add an optional city, in the file format 'schema' prints.
            let file = directory.path + "/v2.json"
            try Data(#"""
                {"format": 1, "entities": [{"name": "Person", "indexes": [["age"]], "uniquenessConstraints": [],
                  "attributes": [
                    {"name": "fullName", "type": "string", "optional": false, "renamingIdentifier": "name"},
                    {"name": "age", "type": "int", "optional": false},
                    {"name": "city", "type": "string", "optional": true}]}]}
                """#.utf8).write(to: URL(fileURLWithPath: file))
            let migrated = try cairn("migrate", path, file)
            #expect(migrated.status == 0 && migrated.errorOutput.contains("cairn: migration Person: migrated, 3 records"), "\(migrated)")
            let fetched = try cairn("fetch", path, "Person", #"fullName == "Cy""#, "--json")
            #expect(fetched.lines == [#"{"_id":"cairn://Person/p3","fullName":"Cy","age":52,"city":null}"#], "\(fetched)")

            // A type change needs a closure: refused, listed, nothing written.
            let typeChange = directory.path + "/v3.json"
            try Data(#"""
                {"format": 1, "entities": [{"name": "Person", "indexes": [], "uniquenessConstraints": [],
                  "attributes": [{"name": "fullName", "type": "string", "optional": false},
                                 {"name": "age", "type": "string", "optional": false}]}]}
                """#.utf8).write(to: URL(fileURLWithPath: typeChange))
            let refused = try cairn("migrate", path, typeChange)
            #expect(refused.status == 3 && refused.errorOutput.contains("Person.age: type changed from int to string"), "\(refused)")
            #expect(try cairn("fetch", path, "Person", "age == 52").lines.count == 2)
        }
    }
}
