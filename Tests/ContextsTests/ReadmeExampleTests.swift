import CairnTestSupport
import Contexts
import Policies
import Testing

/// The README's object-layer example, so the first thing a reader runs cannot drift from the
/// code (only the directory differs).
@Suite("README example")
struct ReadmeExampleTests {
    @Test("the object-layer example saves in one context and reads in another")
    func objectLayerExample() throws {
        let directory = try TemporaryDirectory()
        let schema = try Schema([
            EntityDescription("Person", attributes: [
                AttributeDescription("name", .string),
                AttributeDescription("age", .int, isOptional: true),
            ]),
        ])
        let objects = try ObjectStore(directory: directory.path, schema: schema)
        defer { objects.close() }

        let importer = objects.newBackgroundContext(name: "import", mergePolicy: .mergeByPropertyObjectTrump)
        let id = try importer.performAndWait {
            let ann = importer.insert(entity: "Person")
            ann["name"] = .string("Ann")
            ann["age"] = .int(41)
            try importer.save()
            return ann.objectID
        }

        let reader = objects.newBackgroundContext(name: "reader")
        try reader.performAndWait {
            let adults = try reader.fetch(FetchRequest(entityName: "Person", predicate: .compare("age", .greaterThanOrEqual, .int(18))))
            #expect(adults.map { $0["name"] } == [.string("Ann")])
            #expect(try reader.existingObject(with: id)["age"] == .int(41))
        }
    }
}
