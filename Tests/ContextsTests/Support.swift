import CairnTestSupport
import Contexts
import Foundation
import KVEngine
import Policies
import Testing

/// The schema every test uses.
let testSchema: Schema = {
    do {
        return try Schema([
            EntityDescription("Person", attributes: [
                AttributeDescription("name", .string),
                AttributeDescription("age", .int),
                AttributeDescription("city", .string, isOptional: true),
                AttributeDescription("note", .string, isOptional: true),
                AttributeDescription("modifiedAt", .date, isOptional: true),
            ]),
            EntityDescription("Account", attributes: [
                AttributeDescription("owner", .string),
                AttributeDescription("balance", .int),
            ]),
            EntityDescription("Counter", attributes: [
                AttributeDescription("count", .int, defaultValue: .int(0)),
                AttributeDescription("label", .string, isOptional: true),
            ]),
            EntityDescription("Sample", attributes: [
                AttributeDescription("label", .string),
                AttributeDescription("number", .int, isOptional: true),
                AttributeDescription("ratio", .double, isOptional: true),
                AttributeDescription("flag", .bool, isOptional: true),
                AttributeDescription("blob", .bytes, isOptional: true),
                AttributeDescription("when", .date, isOptional: true),
            ]),
            EntityDescription("Profile", attributes: [
                AttributeDescription("name", .string),
                AttributeDescription("age", .int),
                AttributeDescription("city", .string, isOptional: true),
                AttributeDescription("score", .double),
                AttributeDescription("active", .bool, defaultValue: .bool(true)),
                AttributeDescription("avatar", .bytes),
                AttributeDescription("born", .date),
                AttributeDescription("tags", .string),
                AttributeDescription("kind", .string),
                AttributeDescription("homepage", .string, isOptional: true),
            ]),
        ])
    } catch {
        fatalError("test schema: \(error)")
    }
}()

/// An object store in a fresh temporary directory (under `parent`); `close()` closes it and
/// removes the directory.
final class TestStore: Sendable {
    let directory: TemporaryDirectory
    let objects: ObjectStore

    init(in parent: String = "/tmp", schema: Schema = testSchema, configure: (inout ObjectStore.Options) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory(prefix: "cairn-contexts", in: parent)
        var options = ObjectStore.Options()
        // Tests need no power-loss durability; fsync-free commits keep the suite fast.
        options.saveDurability = .normal
        options.storeOptions.durability = .normal
        options.storeOptions.mapSize = 256 << 20
        configure(&options)
        objects = try TestBackend.current.open(directory: directory.path, schema: schema, options: options)
    }

    func close() {
        objects.close()
        directory.remove()
    }

    /// A new private-queue context.
    func context(_ name: String, policy: any MergePolicy = .error) -> ObjectContext {
        objects.newBackgroundContext(name: name, mergePolicy: policy)
    }

    /// Commits one object through a throwaway context; returns its permanent ID.
    @discardableResult
    func seed(_ entity: String, _ values: PropertyValues) throws -> ObjectID {
        let context = self.context("seed")
        return try context.performAndWait {
            let object = context.insert(entity: entity)
            for (key, value) in values { object[key] = value }
            try context.save()
            return object.objectID
        }
    }

    /// The committed values and version of `id`, nil when absent.
    func committed(_ id: ObjectID) throws -> (values: PropertyValues, version: UInt64)? {
        try objects.committedState(of: id)
    }

    /// How many records of `entity` the store holds.
    func storedCount(_ entity: String) throws -> Int {
        let context = self.context("counter")
        return try context.performAndWait { try context.count(for: FetchRequest(entityName: entity)) }
    }
}

/// Runs `body` with a fresh test store, closing it afterwards. An exit test passes a `parent`
/// directory that the test itself removes, since its child process stops before `close()`.
func withTestStore<Result>(
    in parent: String = "/tmp",
    configure: (inout ObjectStore.Options) -> Void = { _ in }, _ body: (TestStore) throws -> Result
) throws -> Result {
    let store = try TestStore(in: parent, configure: configure)
    defer { store.close() }
    return try body(store)
}

/// The async twin of `withTestStore`.
func withTestStore<Result>(_ body: (TestStore) async throws -> Result) async throws -> Result {
    let store = try TestStore()
    defer { store.close() }
    return try await body(store)
}

func person(_ name: String, _ age: Int64, _ city: String? = nil, note: String? = nil) -> PropertyValues {
    var values: PropertyValues = ["name": .string(name), "age": .int(age)]
    if let city { values["city"] = .string(city) }
    if let note { values["note"] = .string(note) }
    return values
}

/// The five built-in policies by the names the contract's tables use as column headers, made
/// from their types directly.
let policiesByName: [String: any MergePolicy] = [
    "error": ErrorMergePolicy(),
    "storeTrump": MergeByPropertyStoreTrumpPolicy(),
    "objectTrump": MergeByPropertyObjectTrumpPolicy(),
    "overwrite": OverwriteMergePolicy(),
    "rollback": RollbackMergePolicy(),
]

let policyNames = ["error", "storeTrump", "objectTrump", "overwrite", "rollback"]

/// `count` people saved through one context; their IDs in order.
func seedPeople(_ store: TestStore, _ count: Int) throws -> [ObjectID] {
    let context = store.context("seeder")
    return try context.performAndWait {
        let people = (0..<count).map { index -> StoredObject in
            let person = context.insert(entity: "Person")
            person["name"] = .string("p\(index)")
            person["age"] = .int(Int64(index))
            return person
        }
        try context.save()
        return people.map(\.objectID)
    }
}
