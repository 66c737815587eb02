import Contexts
import Foundation
import Policies
import Testing

@Suite("Schema and validation")
struct SchemaValidationTests {
    @Test("invalid schemas are typed errors", arguments: [
        ([EntityDescription("9lives", attributes: [])], SchemaError.invalidEntityName("9lives")),
        ([EntityDescription("", attributes: [])], .invalidEntityName("")),
        ([EntityDescription("A-B", attributes: [])], .invalidEntityName("A-B")),
        ([EntityDescription(String(repeating: "E", count: 101), attributes: [])], .invalidEntityName(String(repeating: "E", count: 101))),
        ([EntityDescription("A", attributes: []), EntityDescription("A", attributes: [])], .duplicateEntity("A")),
        ([EntityDescription("A", attributes: [AttributeDescription("first name", .string)])], .invalidAttributeName(entity: "A", attribute: "first name")),
        ([EntityDescription("A", attributes: [AttributeDescription("x", .int), AttributeDescription("x", .string)])], .duplicateAttribute(entity: "A", attribute: "x")),
        ([EntityDescription("A", attributes: [AttributeDescription("x", .int, defaultValue: .string("1"))])],
         .defaultValueOfWrongType(entity: "A", attribute: "x", expected: .int, found: .string("1"))),
    ])
    func invalidSchema(entities: [EntityDescription], expected: SchemaError) {
        #expect(throws: expected) { try Schema(entities) }
    }

    @Test("a new object starts with the attributes' default values")
    func defaults() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait {
                let counter = context.insert(entity: "Counter")
                #expect(counter["count"] == .int(0))
                #expect(counter["label"] == .null)
                #expect(counter.changedValues() == ["count": .int(0)])
                try context.save()
                #expect(try store.committed(counter.objectID)?.values == ["count": .int(0)])
            }
        }
    }

    /// Each invalid value and the error it must produce.
    static let invalidCases: [(String, PropertyValues, String, ValidationError.Problem)] = [
        ("wrong type", ["name": .string("Ann"), "age": .string("thirty")], "age", .wrongType(expected: .int, found: .string("thirty"))),
        ("int for double is wrong too", ["label": .string("x"), "ratio": .int(1)], "ratio", .wrongType(expected: .double, found: .int(1))),
        ("missing required", ["name": .string("Ann")], "age", .missingValue),
        ("required set to null", ["name": .null, "age": .int(3)], "name", .missingValue),
    ]

    @Test("invalid values fail the save with a typed error naming entity and attribute; nothing is written", arguments: invalidCases)
    func invalidValues(label: String, values: PropertyValues, attribute: String, problem: ValidationError.Problem) throws {
        try withTestStore { store in
            let existing = try store.seed("Person", person("Bob", 25))
            let entity = values["label"] != nil ? "Sample" : "Person"
            let context = store.context("A")
            try context.performAndWait { () throws -> Void in
                try context.existingObject(with: existing)["age"] = .int(26)   // a valid change in the same save
                let clean = context.insert(entity: "Counter")
                clean["count"] = .int(1)
                let object = context.insert(entity: entity)
                for (key, value) in values { object[key] = value }
                let error = try #require(throws: ValidationError.self) { try context.save() }
                #expect(error.entityName == entity, "\(label)")
                #expect(error.attributeName == attribute, "\(label)")
                #expect(error.problem == problem, "\(label)")
                #expect(error.objectID == object.objectID)
                #expect("\(error)".contains("\(entity).\(attribute)"))
                #expect(context.hasChanges)
                #expect(context.lastSaveReport?.attempts == 0)
            }
            #expect(try store.committed(existing)?.version == 1)
            #expect(try store.storedCount("Counter") == 0)
            #expect(try store.storedCount(values["label"] != nil ? "Sample" : "Person") == (values["label"] != nil ? 0 : 1))
        }
    }

    @Test("an updated object is validated too")
    func updatedObjectValidated() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let context = store.context("A")
            try context.performAndWait { () throws -> Void in
                try context.existingObject(with: id)["age"] = .double(30.5)
                let error = try #require(throws: ValidationError.self) { try context.save() }
                #expect(error.attributeName == "age")
            }
            #expect(try store.committed(id)?.values == person("Ann", 30))
        }
    }

    @Test("an object made outside a context can be filled and inserted")
    func unattachedInsert() throws {
        try withTestStore { store in
            let context = store.context("A")
            let entity = try #require(store.objects.schema.entity(named: "Person"))
            try context.performAndWait {
                let object = StoredObject(entity: entity)
                object["name"] = .string("Ann")
                object["age", as: Int.self] = 30
                #expect(object.context == nil)
                context.insert(object)
                #expect(object.context === context)
                #expect(object.isInserted)
                try context.save()
                #expect(try store.committed(object.objectID)?.values == person("Ann", 30))
            }
        }
    }

    @Test("typed accessors")
    func typedAccessors() throws {
        try withTestStore { store in
            let context = store.context("A")
            context.performAndWait {
                let sample = context.insert(entity: "Sample")
                sample["label", as: String.self] = "x"
                sample["number", as: Int64.self] = 5
                sample["ratio", as: Double.self] = 0.25
                sample["flag", as: Bool.self] = true
                sample["blob", as: Data.self] = Data([1, 2])
                sample["when", as: Date.self] = Date(timeIntervalSince1970: 5)
                #expect(sample.values == [
                    "label": .string("x"), "number": .int(5), "ratio": .double(0.25), "flag": .bool(true),
                    "blob": .bytes([1, 2]), "when": .date(Date(timeIntervalSince1970: 5)),
                ])
                #expect(sample["number", as: Int.self] == 5)
                #expect(sample["number", as: String.self] == nil, "another type reads as nil")
                #expect(sample["blob", as: [UInt8].self] == [1, 2])
                sample["flag", as: Bool.self] = nil
                #expect(sample["flag"] == .null)
                sample.setValue(.int(6), forKey: "number")
                #expect(sample.value(forKey: "number") == .int(6))
            }
        }
    }
}
