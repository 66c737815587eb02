import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// A User entity with one uniqueness constraint (email, optional so nulls can be tested), for
/// the constraint tests.
enum UniqueModel {
    static func schema(constraints: [[String]] = [["email"]], indexes: [[String]] = []) -> Schema {
        do {
            return try Schema([
                EntityDescription("User", attributes: [
                    AttributeDescription("email", .string, isOptional: true),
                    AttributeDescription("name", .string),
                    AttributeDescription("city", .string, isOptional: true),
                    AttributeDescription("age", .int, isOptional: true),
                ], indexes: indexes, uniquenessConstraints: constraints),
            ])
        } catch {
            fatalError("unique schema: \(error)")
        }
    }

    /// Inserts a User with these values into `context` (not saved).
    @discardableResult
    static func insert(_ values: PropertyValues, in context: ObjectContext) -> StoredObject {
        let user = context.insert(entity: "User")
        for (name, value) in values { user[name] = value }
        return user
    }

    /// Commits a User with `values` through a throwaway context; returns its ID.
    static func seed(_ values: PropertyValues, in objects: ObjectStore) throws -> ObjectID {
        let context = objects.newBackgroundContext(name: "seed")
        return try context.performAndWait {
            let user = insert(values, in: context)
            try context.save()
            return user.objectID
        }
    }

    /// Every stored User's values, sorted by name.
    static func storedUsers(in objects: ObjectStore) throws -> [PropertyValues] {
        let context = objects.newBackgroundContext(name: "reader")
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "User")).map(\.values).sorted {
                "\($0.value(of: "name"))" < "\($1.value(of: "name"))"
            }
        }
    }
}

/// A policy that records what it is asked and answers with another policy.
final class RecordingPolicy: MergePolicy, @unchecked Sendable {
    // @unchecked: `seen` is only touched under `lock`.
    private let lock = NSLock()
    private var seen: [MergeConflict] = []
    let answer: any MergePolicy

    init(answering answer: any MergePolicy) { self.answer = answer }

    var name: String { "recording" }

    var conflicts: [MergeConflict] { lock.withLock { seen } }

    func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution] {
        lock.withLock { seen.append(contentsOf: conflicts) }
        return try answer.resolve(conflicts)
    }
}
