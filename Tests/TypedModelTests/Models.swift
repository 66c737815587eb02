import CairnTestSupport
import Contexts
import Foundation
import Policies

/// A person, the typed way: the struct is the entity.
struct Person: CairnModel, Equatable, Sendable {
    var name: String
    var age: Int
    var city: String?
    var score: Double = 0
    var active: Bool = true
    var born: Date? = nil
    var kind: Kind = .person

    static let entity = ModelEntity<Person>("Person", [
        .attribute(\.name, "name"),
        .attribute(\.age, "age"),
        .attribute(\.city, "city"),
        .attribute(\.score, "score"),
        .attribute(\.active, "active", defaultValue: true),
        .attribute(\.born, "born"),
        .attribute(\.kind, "kind"),
    ], indexes: [[\.age], [\.city, \.age], [\.name]])
}

/// Stored as its raw value; compared on the objects (its own `==` decides).
enum Kind: String, Codable, Sendable, ModelAttributeValue {
    case person, company
}

/// An imported line item, owned by a person (by URI: IDs are values).
struct Item: CairnModel, Equatable, Sendable {
    var title: String
    var ownerURI: String
    var quantity: Int

    static let entity = ModelEntity<Item>("Item", [
        .attribute(\.title, "title"),
        .attribute(\.ownerURI, "ownerURI"),
        .attribute(\.quantity, "quantity"),
    ], uniquenessConstraints: [[\.title]])
}

/// A model whose declaration names a key path with another property's coding key.
struct Swapped: CairnModel {
    var first: String
    var second: String

    static let entity = ModelEntity<Swapped>("Swapped", [
        .attribute(\.first, "second"),
        .attribute(\.second, "first"),
    ])
}

/// A model that encodes a property its entity does not declare.
struct Undeclared: CairnModel {
    var declared: Int
    var extra: Int

    static let entity = ModelEntity<Undeclared>("Undeclared", [.attribute(\.declared, "declared")])
}

let typedSchema: Schema = {
    do {
        return try Schema(models: [Person.self, Item.self, Swapped.self, Undeclared.self])
    } catch {
        fatalError("typed schema: \(error)")
    }
}()

/// An object store of `typedSchema` in a fresh temporary directory, removed by `close()`.
final class TypedStore: Sendable {
    let directory: TemporaryDirectory
    let objects: ObjectStore

    init() throws {
        directory = try TemporaryDirectory(prefix: "cairn-typed")
        var options = ObjectStore.Options()
        options.saveDurability = .normal  // no power-loss durability needed: fsync-free commits keep it fast
        objects = try ObjectStore(directory: directory.path, schema: typedSchema, options: options)
    }

    func close() {
        objects.close()
        directory.remove()
    }
}

func withTypedStore<Result>(_ body: (TypedStore) throws -> Result) throws -> Result {
    let store = try TypedStore()
    defer { store.close() }
    return try body(store)
}

func withTypedStore<Result>(_ body: (TypedStore) async throws -> Result) async throws -> Result {
    let store = try TypedStore()
    defer { store.close() }
    return try await body(store)
}

/// Whether `body` throws `ContextError.objectNotFound(id)`.
func throwsNotFound(_ id: ObjectID, _ body: () throws -> Void) -> Bool {
    do {
        try body()
        return false
    } catch ContextError.objectNotFound(let missing) {
        return missing == id
    } catch {
        return false
    }
}
