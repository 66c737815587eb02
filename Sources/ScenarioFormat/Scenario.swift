import Contexts
import Foundation
import Policies

// A merge scenario: a few contexts scripted against one fresh store, so that the same conflict
// can be run under every merge policy. The file format is the shared scenario-format spec, restated in Docs/MergePolicies.md;
// this file reads it into checked values. Everything that can be checked before running is
// checked here (unknown keys and ops, refs, attribute names and types, policy names, the
// length of `expect.saves`), so a run never stops half-way on a mistake in the file.

/// A scenario file, read and checked.
public struct Scenario: Sendable {
    /// What the scenario is called (`name`).
    public let name: String
    /// What it shows (`description`), if given.
    public let summary: String?
    /// The entities of `entities`, attributes in file order.
    public let schema: Schema
    /// Every object the scenario names: the `store` refs first, then the `insert` refs in
    /// step order.
    public let refs: [ScenarioRef]
    /// The steps, in file order.
    public let steps: [ScenarioStep]
    /// `expect`, by policy name, in file order.
    public let expectations: [(policy: String, expectation: ScenarioExpectation)]

    /// The indices of the `save` steps, in order: what `expect.saves` lists.
    public var saveStepIndices: [Int] {
        steps.filter { if case .save = $0.action { true } else { false } }.map(\.index)
    }

    /// The ref called `name`, if the scenario has one.
    public func ref(named name: String) -> ScenarioRef? {
        refs.first { $0.name == name }
    }

    /// The expectation for the run under `policy`, if `expect` has one.
    public func expectation(for policy: String) -> ScenarioExpectation? {
        expectations.first { $0.policy == policy }?.expectation
    }
}

/// An object a scenario names: the same object in every context.
public struct ScenarioRef: Sendable {
    /// The ref as written in the file.
    public let name: String
    /// The object's entity.
    public let entity: EntityDescription
    /// The values committed before the first step; nil for an object an `insert` step creates.
    public let storeValues: PropertyValues?
    /// The index of the step that inserts it; nil for a `store` object.
    public let insertedByStep: Int?
}

/// One step of a scenario.
public struct ScenarioStep: Sendable {
    /// Its position in `steps`, from 0 (the index the output and error messages use).
    public let index: Int
    /// The context it runs in (`in`).
    public let context: String
    /// What it does (`do` and that op's fields).
    public let action: Action
    /// The policy the context uses from this step on (`policy`), if given.
    public let policy: String?

    /// What a step does (`do`).
    public enum Action: Sendable {
        case fetch(ref: String)
        case set(ref: String, values: PropertyValues)
        case insert(ref: String, entity: String, values: PropertyValues)
        case delete(ref: String)
        case save
        case detectConflicts(ref: String)
        case refresh(ref: String, merge: Bool)
        case rollback
        case reset
        case merge(from: String)
        case child(parent: String)
        case pin(to: String)
        case autoMerge(on: Bool)
        /// Adds and removes members of a to-many without replacing the set.
        case relate(ref: String, relationship: String, add: [String], remove: [String])

        /// The op's name as written in `do`.
        public var name: String {
            switch self {
            case .fetch: "fetch"
            case .set: "set"
            case .insert: "insert"
            case .delete: "delete"
            case .save: "save"
            case .detectConflicts: "detectConflicts"
            case .refresh: "refresh"
            case .rollback: "rollback"
            case .reset: "reset"
            case .merge: "merge"
            case .child: "child"
            case .pin: "pin"
            case .autoMerge: "autoMerge"
            case .relate: "relate"
            }
        }
    }
}

/// What a run under one policy must end with (`expect.POLICY`).
public struct ScenarioExpectation: Sendable {
    /// The outcome of each `save` step, in order.
    public var saves: [SaveOutcomeWord]?
    /// The committed state of each listed ref: its values, or nil for "no record".
    public var store: [(ref: String, values: PropertyValues?)]?
    /// Per listed context, the in-memory state of each listed ref.
    public var contexts: [(context: String, refs: [(ref: String, state: ExpectedInMemoryState)])]?
}

/// The three outcomes of a save, as written in `expect.saves` and printed.
public enum SaveOutcomeWord: String, CaseIterable, Sendable {
    case ok, conflict, error
}

/// A context's expected hold on a ref: `null` (not registered), `"deleted"`, or values.
public enum ExpectedInMemoryState: Sendable {
    case notRegistered
    case deleted
    case values(PropertyValues)
}

/// A mistake in a scenario file: exits 1 with the message, which names where it is.
public struct ScenarioFileError: Error, CustomStringConvertible {
    /// What is wrong, naming the step index or key path.
    public let message: String
    /// An error with `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The ops a file may use and the keys each takes besides `in`, `do` and `policy`.
private let stepKeys: [String: [String]] = [
    "fetch": ["ref"],
    "set": ["ref", "values"],
    "insert": ["ref", "entity", "values"],
    "delete": ["ref"],
    "save": [],
    "detectConflicts": ["ref"],
    "refresh": ["ref", "merge"],
    "rollback": [],
    "reset": [],
    "merge": ["from"],
    "child": ["parent"],
    "pin": ["to"],
    "autoMerge": ["on"],
    "relate": ["ref", "relationship"],
]

/// The ops in the order the help and error messages list them.
private let stepOrder = [
    "fetch", "set", "insert", "delete", "save", "detectConflicts", "refresh", "rollback", "reset",
    "merge", "child", "pin", "autoMerge", "relate",
]

extension Scenario {
    /// Reads the scenario in `text`.
    ///
    /// Throws `ScenarioFileError` naming the step index or the key path of the first problem.
    public static func parse(_ text: String) throws(ScenarioFileError) -> Scenario {
        let root: JSONValue
        do {
            root = try JSONValue.parse(text)
        } catch {
            throw ScenarioFileError("not valid JSON: \(error)")
        }
        var reader = ScenarioReader()
        return try reader.read(root)
    }

    /// Reads the scenario in the bytes of a scenario file, which must be UTF-8 text: what
    /// `cairn scenario FILE` does with the file's contents.
    ///
    /// Throws `ScenarioFileError` for bytes that are not UTF-8, and as `parse(_:)` does.
    public static func parse(fileContents data: Data) throws(ScenarioFileError) -> Scenario {
        guard let text = String(data: data, encoding: .utf8) else {
            throw ScenarioFileError("the file is not UTF-8 text")
        }
        return try parse(text)
    }

    /// The built-in policy called `name`, or an explanation of why there is none.
    public static func policy(named name: String) -> Result<any MergePolicy, ScenarioFileError> {
        if let policy = BuiltInPolicies.named(name) { return .success(policy) }
        if BuiltInPolicies.exampleNames.contains(name) {
            return .failure(ScenarioFileError(
                "policy \"\(name)\" needs parameters and cannot be chosen by name; "
                    + "the policies a scenario can name are \(BuiltInPolicies.names.joined(separator: ", "))"))
        }
        return .failure(ScenarioFileError(
            "unknown policy \"\(name)\"; the policies are \(BuiltInPolicies.names.joined(separator: ", "))"))
    }
}

/// Reads the JSON tree of a scenario file, keeping track of what it has seen.
private struct ScenarioReader {
    var entities: [EntityDescription] = []
    var refs: [ScenarioRef] = []
    /// Contexts made by the steps read so far, in order.
    var namedContexts: [String] = []
    /// The entities' schema, once read.
    var readSchema: Schema? = nil

    mutating func read(_ root: JSONValue) throws(ScenarioFileError) -> Scenario {
        let top = try members(
            of: root, at: "the file", allowed: ["name", "description", "entities", "store", "steps", "expect"],
            required: ["name", "entities", "steps"])
        let name = try string(top["name"]!, at: "name")
        var summary: String?
        if let description = top["description"] { summary = try string(description, at: "description") }

        let schema = try readEntities(top["entities"]!)
        readSchema = schema
        if let store = top["store"] { try readStore(store) }

        guard case .array(let stepValues) = top["steps"]! else {
            throw ScenarioFileError("steps: expected an array of steps, found \(top["steps"]!.kindDescription)")
        }
        var steps: [ScenarioStep] = []
        for (index, value) in stepValues.enumerated() {
            steps.append(try readStep(value, index: index))
        }
        let saveCount = steps.filter { if case .save = $0.action { true } else { false } }.count
        let contexts = Set(namedContexts)
        var expectations: [(policy: String, expectation: ScenarioExpectation)] = []
        if let expect = top["expect"] {
            expectations = try readExpectations(expect, saveCount: saveCount, contexts: contexts)
        }
        return Scenario(
            name: name, summary: summary, schema: schema, refs: refs, steps: steps, expectations: expectations)
    }

    // MARK: - Entities and store

    mutating func readEntities(_ value: JSONValue) throws(ScenarioFileError) -> Schema {
        guard case .object(let entityMembers) = value, !entityMembers.isEmpty else {
            throw ScenarioFileError("entities: expected an object of entities, such as "
                + #"{ "Person": { "name": "string", "age": "int?" } }, found \#(value.kindDescription)"#)
        }
        for (entityName, entityValue) in entityMembers {
            guard case .object(let entityFields) = entityValue else {
                throw ScenarioFileError("entities.\(entityName): expected an object of attribute types, "
                    + "found \(entityValue.kindDescription)")
            }
            // The long form has an object under "attributes"; in the short form every member is
            // an attribute whose value is its type, a string.
            var attributeMembers = entityFields
            var indexes: [[String]] = [], constraints: [[String]] = []
            var relationships: [RelationshipDescription] = []
            var attributesPath = "entities.\(entityName)"
            if let long = entityFields.first(where: { $0.key == "attributes" }), case .object(let members) = long.value {
                let path = "entities.\(entityName)"
                let fields = try self.members(
                    of: entityValue, at: path, allowed: ["attributes", "relationships", "indexes", "uniquenessConstraints"],
                    required: ["attributes"])
                if let value = fields["relationships"] { relationships = try readRelationships(value, at: "\(path).relationships") }
                attributeMembers = members
                attributesPath = "\(path).attributes"
                if let value = fields["indexes"] { indexes = try attributeLists(value, at: "\(path).indexes") }
                if let value = fields["uniquenessConstraints"] {
                    constraints = try attributeLists(value, at: "\(path).uniquenessConstraints")
                }
            }
            var attributes: [AttributeDescription] = []
            for (attributeName, typeValue) in attributeMembers {
                let path = "\(attributesPath).\(attributeName)"
                let typeText = try string(typeValue, at: path)
                let isOptional = typeText.hasSuffix("?")
                let baseName = isOptional ? String(typeText.dropLast()) : typeText
                guard let type = AttributeType(rawValue: baseName) else {
                    throw ScenarioFileError("\(path): unknown attribute type \"\(typeText)\"; the types are "
                        + AttributeType.allCases.map(\.rawValue).joined(separator: ", ")
                        + " (a trailing ? makes one optional)")
                }
                attributes.append(AttributeDescription(attributeName, type, isOptional: isOptional))
            }
            entities.append(EntityDescription(
                entityName, attributes: attributes, relationships: relationships, indexes: indexes, uniquenessConstraints: constraints))
        }
        do {
            return try Schema(entities)
        } catch {
            throw ScenarioFileError("entities: \(error)")
        }
    }

    /// `{ "employees": { "toMany": "Person", "inverse": "department", "deleteRule": "cascade" } }`
    /// (the schema checks destinations and inverses).
    func readRelationships(_ value: JSONValue, at path: String) throws(ScenarioFileError) -> [RelationshipDescription] {
        guard case .object(let members) = value else {
            throw ScenarioFileError("\(path): expected an object of relationships, such as "
                + #"{ "department": { "toOne": "Department", "inverse": "employees" } }, found \#(value.kindDescription)"#)
        }
        var relationships: [RelationshipDescription] = []
        for (name, relationshipValue) in members {
            let at = "\(path).\(name)"
            let fields = try self.members(of: relationshipValue, at: at, allowed: ["toOne", "toMany", "inverse", "deleteRule", "ordered"],
                                          required: ["inverse"])
            let destination: String, isToMany: Bool
            switch (fields["toOne"], fields["toMany"]) {
            case (let one?, nil): (destination, isToMany) = (try string(one, at: "\(at).toOne"), false)
            case (nil, let many?): (destination, isToMany) = (try string(many, at: "\(at).toMany"), true)
            default: throw ScenarioFileError("\(at): give exactly one of \"toOne\" and \"toMany\" (the destination entity)")
            }
            var rule = RelationshipDescription.DeleteRule.nullify
            if let ruleValue = fields["deleteRule"] {
                let text = try string(ruleValue, at: "\(at).deleteRule")
                guard let named = RelationshipDescription.DeleteRule(rawValue: text) else {
                    throw ScenarioFileError("\(at).deleteRule: unknown rule \"\(text)\"; the rules are "
                        + RelationshipDescription.DeleteRule.allCases.map(\.rawValue).joined(separator: ", "))
                }
                rule = named
            }
            var ordered = false
            if let orderedValue = fields["ordered"] {
                guard case .bool(let flag) = orderedValue, !flag || isToMany else {
                    throw ScenarioFileError("\(at).ordered: true or false, and true only for a to-many")
                }
                ordered = flag
            }
            relationships.append(RelationshipDescription(
                name, destination: destination, inverse: try string(fields["inverse"]!, at: "\(at).inverse"), isToMany: isToMany,
                deleteRule: rule, isOrdered: ordered))
        }
        return relationships
    }

    /// `[["a"], ["b", "c"]]`: lists of attribute names (the schema checks the names).
    func attributeLists(_ value: JSONValue, at path: String) throws(ScenarioFileError) -> [[String]] {
        guard case .array(let lists) = value else {
            throw ScenarioFileError("\(path): expected a list of attribute lists, such as [[\"email\"]], found \(value.kindDescription)")
        }
        var result: [[String]] = []
        for (index, list) in lists.enumerated() {
            guard case .array(let names) = list else {
                throw ScenarioFileError("\(path)[\(index)]: expected a list of attribute names, found \(list.kindDescription)")
            }
            var attributes: [String] = []
            for (position, name) in names.enumerated() { attributes.append(try string(name, at: "\(path)[\(index)][\(position)]")) }
            result.append(attributes)
        }
        return result
    }

    mutating func readStore(_ value: JSONValue) throws(ScenarioFileError) {
        guard case .object(let objects) = value else {
            throw ScenarioFileError("store: expected an object of refs, found \(value.kindDescription)")
        }
        for (ref, objectValue) in objects {
            let path = "store.\(ref)"
            let fields = try members(of: objectValue, at: path, allowed: ["entity", "values"], required: ["entity", "values"])
            let entity = try entity(named: try string(fields["entity"]!, at: "\(path).entity"), at: "\(path).entity")
            let values = try propertyValues(fields["values"]!, of: entity, at: "\(path).values")
            for attribute in entity.attributes where !attribute.isOptional && values.value(of: attribute.name) == .null {
                throw ScenarioFileError("\(path).values: \(entity.name).\(attribute.name) is required (its type has no ?), "
                    + "so it needs a value")
            }
            refs.append(ScenarioRef(name: ref, entity: entity, storeValues: values, insertedByStep: nil))
        }
        for ref in refs { try checkRelationshipRefs(ref.storeValues ?? [:], of: ref.entity, at: "store.\(ref.name).values") }
        try checkStoreInverses()
    }

    /// Every ref a relationship value names exists (by now) and is of the destination entity.
    func checkRelationshipRefs(_ values: PropertyValues, of entity: EntityDescription, at path: String) throws(ScenarioFileError) {
        for relationship in entity.relationships {
            for name in ScenarioValues.refs(in: values.value(of: relationship.name)) {
                guard let ref = refs.first(where: { $0.name == name }) else {
                    throw ScenarioFileError("\(path).\(relationship.name): unknown ref \"\(name)\"; a ref is defined in \"store\" "
                        + "or by an earlier `insert` step")
                }
                guard ref.entity.name == relationship.destination else {
                    throw ScenarioFileError("\(path).\(relationship.name): ref \"\(name)\" is a \(ref.entity.name), "
                        + "but the relationship points at \(relationship.destination) objects")
                }
            }
        }
    }

    /// In `store`, one end of a relationship is enough; when both are given they must agree.
    func checkStoreInverses() throws(ScenarioFileError) {
        for owner in refs {
            for relationship in owner.entity.relationships where relationship.isToMany {
                guard let ownerValues = owner.storeValues, ownerValues[relationship.name] != nil else { continue }
                let members = Set(ScenarioValues.refs(in: ownerValues.value(of: relationship.name)))
                // A many-to-many's inverse lists its owners; a one-to-many's names its one owner.
                let manyToMany = readSchema?.entity(named: relationship.destination)?.relationship(named: relationship.inverse)?.isToMany == true
                for member in refs where member.entity.name == relationship.destination {
                    guard let values = member.storeValues, let inverse = values[relationship.inverse] else { continue }
                    let named = ScenarioValues.refs(in: inverse)
                    let pointsHere = manyToMany ? named.contains(owner.name) : named == [owner.name]
                    if pointsHere != members.contains(member.name) {
                        throw ScenarioFileError("store: \(owner.name).\(relationship.name) and \(member.name).\(relationship.inverse) "
                            + "disagree: give one end, or both alike")
                    }
                }
                if manyToMany { continue }
                for other in refs where other.name != owner.name && other.entity.name == owner.entity.name {
                    guard let values = other.storeValues, values[relationship.name] != nil else { continue }
                    if let shared = members.intersection(ScenarioValues.refs(in: values.value(of: relationship.name))).sorted().first {
                        throw ScenarioFileError("store: \(shared) is listed in \(owner.name).\(relationship.name) and in "
                            + "\(other.name).\(relationship.name), but its \(relationship.inverse) is one object")
                    }
                }
            }
        }
    }

    // MARK: - Steps

    mutating func readStep(_ value: JSONValue, index: Int) throws(ScenarioFileError) -> ScenarioStep {
        let at = "step \(index)"
        guard case .object(let members) = value else {
            throw ScenarioFileError("\(at): expected an object such as "
                + #"{ "in": "A", "do": "fetch", "ref": "p" }, found \#(value.kindDescription)"#)
        }
        let fields = Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) })
        guard let opValue = fields["do"] else { throw ScenarioFileError("\(at): missing \"do\" (what the step does)") }
        let op = try string(opValue, at: "\(at): \"do\"")
        guard let opKeys = stepKeys[op] else {
            throw ScenarioFileError("\(at): unknown op \"\(op)\"; the ops are \(stepOrder.joined(separator: ", "))")
        }
        let allowed = ["in", "do", "policy"] + opKeys + (op == "relate" ? ["add", "remove"] : [])
        for member in members where !allowed.contains(member.key) {
            throw ScenarioFileError("\(at): unknown key \"\(member.key)\" for a `\(op)` step; it takes "
                + allowed.map { "\"\($0)\"" }.joined(separator: ", "))
        }
        for key in ["in"] + opKeys where fields[key] == nil {
            throw ScenarioFileError("\(at): a `\(op)` step needs \"\(key)\"")
        }
        let context = try string(fields["in"]!, at: "\(at): \"in\"")
        guard !context.isEmpty else { throw ScenarioFileError("\(at): \"in\" must name a context") }
        var policy: String?
        if let policyValue = fields["policy"] {
            let name = try string(policyValue, at: "\(at): \"policy\"")
            if case .failure(let error) = Scenario.policy(named: name) { throw ScenarioFileError("\(at): \(error)") }
            policy = name
        }

        func existingRef() throws(ScenarioFileError) -> ScenarioRef {
            let name = try string(fields["ref"]!, at: "\(at): \"ref\"")
            guard let ref = refs.first(where: { $0.name == name }) else {
                let known = refs.map(\.name)
                throw ScenarioFileError("\(at): unknown ref \"\(name)\"; a ref is defined in \"store\" or by an earlier "
                    + "`insert` step" + (known.isEmpty ? "" : " (known refs: \(known.joined(separator: ", ")))"))
            }
            return ref
        }

        let action: ScenarioStep.Action
        switch op {
        case "fetch": action = .fetch(ref: try existingRef().name)
        case "delete": action = .delete(ref: try existingRef().name)
        case "detectConflicts": action = .detectConflicts(ref: try existingRef().name)
        case "set":
            let ref = try existingRef()
            let values = try propertyValues(fields["values"]!, of: ref.entity, at: "\(at): \"values\"")
            try checkRelationshipRefs(values, of: ref.entity, at: "\(at): values")
            action = .set(ref: ref.name, values: values)
        case "refresh":
            let ref = try existingRef()
            guard case .bool(let merge) = fields["merge"]! else {
                throw ScenarioFileError("\(at): \"merge\" must be true or false, not \(fields["merge"]!.kindDescription)")
            }
            action = .refresh(ref: ref.name, merge: merge)
        case "insert":
            let name = try string(fields["ref"]!, at: "\(at): \"ref\"")
            if let existing = refs.first(where: { $0.name == name }) {
                let origin = existing.insertedByStep.map { "step \($0) inserts it" } ?? "it is an object of \"store\""
                throw ScenarioFileError("\(at): ref \"\(name)\" already names an object (\(origin)); "
                    + "an `insert` step needs a new ref")
            }
            let entity = try entity(named: try string(fields["entity"]!, at: "\(at): \"entity\""), at: "\(at): \"entity\"")
            let values = try propertyValues(fields["values"]!, of: entity, at: "\(at): \"values\"")
            refs.append(ScenarioRef(name: name, entity: entity, storeValues: nil, insertedByStep: index))
            try checkRelationshipRefs(values, of: entity, at: "\(at): values")
            action = .insert(ref: name, entity: entity.name, values: values)
        case "relate":
            let ref = try existingRef()
            let name = try string(fields["relationship"]!, at: "\(at): \"relationship\"")
            guard let relationship = ref.entity.relationship(named: name), relationship.isToMany else {
                throw ScenarioFileError("\(at): \(ref.entity.name) has no to-many relationship \"\(name)\" (its to-manys: "
                    + ref.entity.relationships.filter(\.isToMany).map(\.name).joined(separator: ", ") + ")")
            }
            var lists: [String: [String]] = [:]
            for key in ["add", "remove"] {
                guard let listValue = fields[key] else { continue }
                let value = try ScenarioValues.relationshipValue(listValue, of: relationship, at: "\(at): \"\(key)\"")
                lists[key] = ScenarioValues.refs(in: value)
                try checkRelationshipRefs([name: value], of: ref.entity, at: "\(at): \(key)")
            }
            action = .relate(ref: ref.name, relationship: name, add: lists["add"] ?? [], remove: lists["remove"] ?? [])
        case "save": action = .save
        case "rollback": action = .rollback
        case "reset": action = .reset
        case "merge": action = .merge(from: try string(fields["from"]!, at: "\(at): \"from\""))
        case "child": action = .child(parent: try string(fields["parent"]!, at: "\(at): \"parent\""))
        case "pin": action = .pin(to: try string(fields["to"]!, at: "\(at): \"to\""))
        case "autoMerge":
            guard case .bool(let on) = fields["on"]! else {
                throw ScenarioFileError("\(at): \"on\" must be true or false, not \(fields["on"]!.kindDescription)")
            }
            action = .autoMerge(on: on)
        default:
            preconditionFailure("stepKeys and the switch disagree on \(op)")
        }
        // Contexts other steps name must exist by then; a child is made by its first step.
        switch action {
        case .child(let parent):
            guard !namedContexts.contains(context) else {
                throw ScenarioFileError("\(at): a `child` step must be the first step naming \"\(context)\", "
                    + "but an earlier step already made it")
            }
            guard parent != context else { throw ScenarioFileError("\(at): context \"\(context)\" cannot be its own parent") }
            name(parent)
        case .merge(let from):
            guard namedContexts.contains(from) else {
                throw ScenarioFileError("\(at): no earlier step runs in a context named \"\(from)\" to merge from")
            }
        case .pin(let target) where target != "current" && target != "none":
            guard namedContexts.contains(target) else {
                throw ScenarioFileError("\(at): \"to\" is \"current\", \"none\" or the name of a context of an "
                    + "earlier step; no step ran in \"\(target)\"")
            }
        default:
            break
        }
        name(context)
        return ScenarioStep(index: index, context: context, action: action, policy: policy)
    }

    /// Notes that a context exists from this step on.
    mutating func name(_ context: String) {
        if !namedContexts.contains(context) { namedContexts.append(context) }
    }

    // MARK: - Expectations

    func readExpectations(
        _ value: JSONValue, saveCount: Int, contexts: Set<String>
    ) throws(ScenarioFileError) -> [(policy: String, expectation: ScenarioExpectation)] {
        guard case .object(let byPolicy) = value else {
            throw ScenarioFileError("expect: expected an object keyed by policy name, found \(value.kindDescription)")
        }
        var expectations: [(policy: String, expectation: ScenarioExpectation)] = []
        for (policy, policyValue) in byPolicy {
            let at = "expect.\(policy)"
            if case .failure(let error) = Scenario.policy(named: policy) { throw ScenarioFileError("\(at): \(error)") }
            let fields = try members(of: policyValue, at: at, allowed: ["saves", "store", "contexts"], required: [])
            var expectation = ScenarioExpectation()
            if let saves = fields["saves"] {
                guard case .array(let words) = saves else {
                    throw ScenarioFileError("\(at).saves: expected an array such as [\"ok\", \"conflict\"], "
                        + "found \(saves.kindDescription)")
                }
                expectation.saves = []
                for (position, word) in words.enumerated() {
                    let text = try string(word, at: "\(at).saves[\(position)]")
                    guard let outcome = SaveOutcomeWord(rawValue: text) else {
                        throw ScenarioFileError("\(at).saves[\(position)]: unknown outcome \"\(text)\"; "
                            + "the outcomes are ok, conflict, error")
                    }
                    expectation.saves!.append(outcome)
                }
                guard words.count == saveCount else {
                    throw ScenarioFileError("\(at).saves lists \(words.count) outcome\(words.count == 1 ? "" : "s") "
                        + "but the scenario has \(saveCount) save step\(saveCount == 1 ? "" : "s")")
                }
            }
            if let store = fields["store"] {
                guard case .object(let byRef) = store else {
                    throw ScenarioFileError("\(at).store: expected an object keyed by ref, found \(store.kindDescription)")
                }
                expectation.store = []
                for (refName, refValue) in byRef {
                    let path = "\(at).store.\(refName)"
                    let ref = try knownRef(refName, at: path)
                    let values: PropertyValues? = refValue == .null
                        ? nil : try propertyValues(refValue, of: ref.entity, at: path)
                    expectation.store!.append((ref: refName, values: values))
                }
            }
            if let contextsValue = fields["contexts"] {
                guard case .object(let byContext) = contextsValue else {
                    throw ScenarioFileError("\(at).contexts: expected an object keyed by context name, "
                        + "found \(contextsValue.kindDescription)")
                }
                expectation.contexts = []
                for (contextName, refsValue) in byContext {
                    let path = "\(at).contexts.\(contextName)"
                    guard contexts.contains(contextName) else {
                        throw ScenarioFileError("\(path): no step runs in a context named \"\(contextName)\"")
                    }
                    guard case .object(let byRef) = refsValue else {
                        throw ScenarioFileError("\(path): expected an object keyed by ref, found \(refsValue.kindDescription)")
                    }
                    var states: [(ref: String, state: ExpectedInMemoryState)] = []
                    for (refName, stateValue) in byRef {
                        let refPath = "\(path).\(refName)"
                        let ref = try knownRef(refName, at: refPath)
                        let state: ExpectedInMemoryState
                        switch stateValue {
                        case .null: state = .notRegistered
                        case .string("deleted"): state = .deleted
                        default: state = .values(try propertyValues(stateValue, of: ref.entity, at: refPath))
                        }
                        states.append((ref: refName, state: state))
                    }
                    expectation.contexts!.append((context: contextName, refs: states))
                }
            }
            expectations.append((policy: policy, expectation: expectation))
        }
        return expectations
    }

    func knownRef(_ name: String, at path: String) throws(ScenarioFileError) -> ScenarioRef {
        guard let ref = refs.first(where: { $0.name == name }) else {
            throw ScenarioFileError("\(path): unknown ref \"\(name)\"; the refs are "
                + (refs.isEmpty ? "(none)" : refs.map(\.name).joined(separator: ", ")))
        }
        return ref
    }

    // MARK: - Values

    func entity(named name: String, at path: String) throws(ScenarioFileError) -> EntityDescription {
        guard let entity = entities.first(where: { $0.name == name }) else {
            throw ScenarioFileError("\(path): unknown entity \"\(name)\"; the entities are "
                + entities.map(\.name).joined(separator: ", "))
        }
        return entity
    }

    /// An object of attribute values for `entity`, each converted to its attribute's type.
    func propertyValues(_ value: JSONValue, of entity: EntityDescription, at path: String) throws(ScenarioFileError) -> PropertyValues {
        guard case .object(let members) = value else {
            throw ScenarioFileError("\(path): expected an object of \(entity.name) values, found \(value.kindDescription)")
        }
        var values = PropertyValues()
        for (name, json) in members {
            if let relationship = entity.relationship(named: name) {
                values[name] = try ScenarioValues.relationshipValue(json, of: relationship, at: "\(path).\(name)")
                continue
            }
            guard let attribute = entity.attribute(named: name) else {
                throw ScenarioFileError("\(path): \(entity.name) has no attribute \"\(name)\" (its attributes: "
                    + entity.attributes.map(\.name).joined(separator: ", ")
                    + (entity.relationships.isEmpty ? "" : "; relationships: " + entity.relationships.map(\.name).joined(separator: ", "))
                    + ")")
            }
            values[name] = try ScenarioValues.attributeValue(json, type: attribute.type, at: "\(path).\(name)")
        }
        return values
    }

    // MARK: - JSON shapes

    /// The members of an object, after checking its keys.
    func members(
        of value: JSONValue, at path: String, allowed: [String], required: [String]
    ) throws(ScenarioFileError) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            throw ScenarioFileError("\(path): expected an object, found \(value.kindDescription)")
        }
        for member in members where !allowed.contains(member.key) {
            throw ScenarioFileError("\(path): unknown key \"\(member.key)\"; the keys are "
                + allowed.map { "\"\($0)\"" }.joined(separator: ", "))
        }
        let fields = Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) })
        for key in required where fields[key] == nil {
            throw ScenarioFileError("\(path): missing \"\(key)\"")
        }
        return fields
    }

    func string(_ value: JSONValue, at path: String) throws(ScenarioFileError) -> String {
        guard case .string(let text) = value else {
            throw ScenarioFileError("\(path): expected a string, found \(value.kindDescription)")
        }
        return text
    }
}
