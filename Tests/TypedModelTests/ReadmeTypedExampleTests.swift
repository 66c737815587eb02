import CairnTestSupport
import Contexts
import Foundation
import Testing

/// The README's typed example, so it cannot drift from the code (only the directory and the
/// type's name differ).
@Suite("README typed example")
struct ReadmeTypedExampleTests {
    struct Adult: CairnModel {
        var name: String
        var age: Int

        static let entity = ModelEntity<Adult>("Person", [.attribute(\.name, "name"), .attribute(\.age, "age")], indexes: [[\.age]])
    }

    @Test("the typed example inserts, saves and fetches with #Predicate and SortDescriptor")
    func typedExample() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let people = try ObjectStore(directory: directory.path, schema: try Schema(models: [Adult.self]))
        defer { people.close() }
        let context = people.newBackgroundContext(name: "people")
        let (annID, adults) = try context.performAndWait {
            let ann = try context.insert(Adult(name: "Ann", age: 41))
            try context.save()
            let adults = try context.fetchValues(FetchDescriptor<Adult>(predicate: #Predicate { $0.age >= 18 }, sortBy: [SortDescriptor(\.name)]))
            return (ann.objectID, adults.map(\.name))
        }
        #expect(!annID.isTemporaryID)
        #expect(adults == ["Ann"])
    }
}
