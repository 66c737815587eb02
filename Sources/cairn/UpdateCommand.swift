import Contexts
import EtcdStorage
import Foundation
import Policies

/// `cairn update STORE ENTITY ID ATTRIBUTE=VALUE`: change one attribute of one object and save
/// under a merge policy, optionally many times, reporting the conflicts the policy resolved.
enum UpdateCommand {
    static let command = Command(
        name: "update",
        summary: "Set one attribute of one object and save it under a merge policy.",
        arguments: ["STORE", "ENTITY", "ID", "ATTRIBUTE=VALUE"],
        options: [
            .value("policy", "NAME", "The save's merge policy (default error)."),
            .value("repeat", "N", "Save N times in one context, {i} in VALUE becoming 1...N (default 1)."),
            .value("pause", "MS", "Wait MS milliseconds between saves (default 0)."),
            .value("attempts", "N", "Conditional commits one save may try, resolving conflicts in between (default 8)."),
        ],
        discussion: """
            STORE is a directory or etcd://HOST:PORT[,HOST:PORT...]/PREFIX; the schema is the one
            the store recorded. ID is the object's primary key. VALUE is read by the
            attribute's type (string as is, int, double, true/false, null when optional).
            One context does every save, so a save that another process overtook conflicts and
            the policy resolves it. Prints the number of saves and of conflicts resolved.
            """,
        run: run
    )

    @Sendable private static func run(_ arguments: Arguments) throws -> ExitStatus {
        let path = arguments.positionals[0], entityName = arguments.positionals[1]
        guard let primaryKey = UInt64(arguments.positionals[2]), primaryKey > 0 else {
            throw CommandError.usage("ID: not a primary key: \(abbreviated(arguments.positionals[2]))")
        }
        let assignment = arguments.positionals[3]
        guard let equals = assignment.firstIndex(of: "=") else { throw CommandError.usage("ATTRIBUTE=VALUE: no '='") }
        let attributeName = String(assignment[..<equals]), template = String(assignment[assignment.index(after: equals)...])
        let policyName = arguments.value("policy") ?? "error"
        guard let policy = BuiltInPolicies.named(policyName) else {
            throw CommandError.usage("--policy: unknown policy \"\(abbreviated(policyName))\"; one of \(BuiltInPolicies.names.joined(separator: ", "))")
        }
        let repeats = try arguments.value("repeat").map { text throws(CommandError) -> Int in
            guard let count = Int(text), (1...1_000_000).contains(count) else { throw CommandError.usage("--repeat: not a count: \(abbreviated(text))") }
            return count
        } ?? 1
        let pause = try arguments.value("pause").map { text throws(CommandError) -> UInt32 in
            guard let milliseconds = UInt32(text), milliseconds <= 60_000 else { throw CommandError.usage("--pause: not a duration in ms: \(abbreviated(text))") }
            return milliseconds
        } ?? 0
        var options = ObjectCommands.progressOptions()
        if let text = arguments.value("attempts") {
            guard let attempts = Int(text), (1...10_000).contains(attempts) else { throw CommandError.usage("--attempts: not a count: \(abbreviated(text))") }
            options.maxSaveAttempts = attempts
        }
        let schema = try ObjectCommands.recordedSchema(path)
        guard let entity = schema.entity(named: entityName) else {
            throw CommandError.usage("the store has no entity \"\(abbreviated(entityName))\"")
        }
        guard let attribute = entity.attributes.first(where: { $0.name == attributeName }) else {
            throw CommandError.usage("\(entityName) has no attribute \"\(abbreviated(attributeName))\"")
        }
        let objects: ObjectStore
        do {
            objects = try ObjectStore(location: path, schema: schema, options: options)
        } catch {
            throw CommandError.failed("cannot open \(StoreAccess.shown(path)): \(error)")
        }
        defer { objects.close() }
        let context = objects.newBackgroundContext(name: "cairn update", mergePolicy: policy)
        let id = ObjectID(entityName: entityName, primaryKey: primaryKey)
        var conflicts = 0
        for round in 1...repeats {
            if round > 1 && pause > 0 { usleep(pause * 1000) }
            let value = try parse(template.replacingOccurrences(of: "{i}", with: String(round)), as: attribute)
            do {
                try context.performAndWait {
                    try context.existingObject(with: id)[attributeName] = value
                    try context.save()
                    conflicts += context.lastSaveConflicts.count
                }
            } catch ContextError.objectNotFound {
                throw CommandError.notFound("no \(entityName) with ID \(primaryKey)")
            } catch {
                throw CommandError.failed("save \(round) of \(repeats): \(error)")
            }
        }
        StandardStream.output.write("saved \(repeats) time\(repeats == 1 ? "" : "s"); \(conflicts) conflict\(conflicts == 1 ? "" : "s") resolved by \(policy.name)\n")
        return .success
    }

    private static func parse(_ text: String, as attribute: AttributeDescription) throws(CommandError) -> AttributeValue {
        if text == "null" && attribute.isOptional { return .null }
        let value: AttributeValue?
        switch attribute.type {
        case .string: value = .string(text)
        case .int: value = Int64(text).map(AttributeValue.int)
        case .double: value = Double(text).map(AttributeValue.double)
        case .bool: value = text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
        default: value = nil
        }
        guard let value else { throw CommandError.usage("VALUE: \"\(abbreviated(text))\" is not a \(attribute.type) for \(attribute.name)") }
        return value
    }
}
