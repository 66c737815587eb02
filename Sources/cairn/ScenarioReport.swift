import Contexts
import Policies
import ScenarioFormat

// What `cairn scenario` prints: the `--json` document of the spec, the comparison table, and
// the differences between a run and its `expect` block.

enum ScenarioReport {
    // MARK: - JSON

    /// `{ "scenario": NAME, "results": [...] }`, one result per run, in run order.
    static func json(_ scenario: Scenario, _ results: [ScenarioResult]) -> JSONValue {
        .object([
            (key: "scenario", value: .string(scenario.name)),
            (key: "results", value: .array(results.map { json(scenario, $0) })),
        ])
    }

    /// One run: every save step and every step that did not succeed; every ref's committed
    /// state; every ref registered in each context.
    static func json(_ scenario: Scenario, _ result: ScenarioResult) -> JSONValue {
        var steps: [JSONValue] = []
        for record in result.records {
            let isSave = if case .save = record.step.action { true } else { false }
            guard isSave || record.outcome != .ok else { continue }
            var members: [(key: String, value: JSONValue)] = [
                (key: "index", value: .integer(Int64(record.step.index))),
                (key: "in", value: .string(record.step.context)),
                (key: "do", value: .string(record.step.action.name)),
                (key: "outcome", value: .string(record.outcome.word.rawValue)),
            ]
            if !record.conflicts.isEmpty {
                members.append((key: "conflicts", value: .array(record.conflicts.map { conflict in
                    var fields: [(key: String, value: JSONValue)] = [
                        (key: "ref", value: .string(conflict.ref)),
                        (key: "kind", value: .string(conflict.kind.rawValue)),
                    ]
                    if let storedRef = conflict.storedRef { fields.append((key: "storedRef", value: .string(storedRef))) }
                    if let constraint = conflict.constraint {
                        fields.append((key: "constraint", value: .array(constraint.map { .string($0) })))
                    }
                    fields.append((key: "ancestorVersion", value: .integer(Int64(conflict.ancestorVersion))))
                    fields.append((key: "storeVersion", value: .integer(Int64(conflict.storeVersion))))
                    return .object(fields)
                })))
            }
            if case .error(let message) = record.outcome {
                members.append((key: "message", value: .string(message)))
            }
            steps.append(.object(members))
        }
        let store: [(key: String, value: JSONValue)] = result.store.map { entry in
            let entity = scenario.ref(named: entry.ref)!.entity
            return (key: entry.ref, value: entry.values.map { ScenarioValues.json($0, of: entity) } ?? .null)
        }
        let contexts: [(key: String, value: JSONValue)] = result.contexts.map { context in
            (key: context.context, value: .object(context.refs.map { held in
                let entity = scenario.ref(named: held.ref)!.entity
                switch held.state {
                case .deleted: return (key: held.ref, value: .string("deleted"))
                case .values(let values): return (key: held.ref, value: ScenarioValues.json(values, of: entity))
                }
            }))
        }
        return .object([
            (key: "policy", value: .string(result.policy)),
            (key: "steps", value: .array(steps)),
            (key: "store", value: .object(store)),
            (key: "contexts", value: .object(contexts)),
        ])
    }

    // MARK: - Table

    /// One column per run; a row per save step (and per other step that failed in some run),
    /// then a row per property of each ref with its final committed value.
    static func table(_ scenario: Scenario, _ results: [ScenarioResult]) -> ComparisonTable {
        var table = ComparisonTable(labelHeaders: [""], columns: results.map(\.policy))
        for step in scenario.steps {
            let outcomes = results.map { $0.record(at: step.index)!.outcome }
            let isSave = if case .save = step.action { true } else { false }
            guard isSave || outcomes.contains(where: { $0 != .ok }) else { continue }
            table.append(labels: [label(of: step)], cells: outcomes.map(\.word.rawValue))
        }
        for ref in scenario.refs {
            for property in ScenarioValues.propertyNames(of: ref.entity) {
                table.append(labels: ["\(ref.name).\(property)"], cells: results.map { result in
                    guard let values = result.storeValues(of: ref.name) else { return absence(of: ref.name, in: result) }
                    return ScenarioValues.text(values.value(of: property), property: property, of: ref.entity)
                })
            }
        }
        return table
    }

    /// `step 5: A save`, `step 4: A set p`.
    static func label(of step: ScenarioStep) -> String {
        var text = "step \(step.index): \(step.context) \(step.action.name)"
        switch step.action {
        case .fetch(let ref), .set(let ref, _), .insert(let ref, _, _), .delete(let ref), .detectConflicts(let ref),
             .relate(let ref, _, _, _):
            text += " \(ref)"
        case .refresh(let ref, let merge):
            text += " \(ref)\(merge ? " (merge)" : "")"
        default:
            break
        }
        return text
    }

    /// How a ref without a record reads in a table cell.
    static func absence(of ref: String, in result: ScenarioResult) -> String {
        result.savedRefs.contains(ref) ? "deleted" : "not saved"
    }

    /// The messages of failed steps, for under the table: one line per step and message, naming
    /// the policies unless every run failed alike.
    static func errorNotes(_ results: [ScenarioResult]) -> [String] {
        guard let first = results.first else { return [] }
        var notes: [String] = []
        for step in first.records.map(\.step) {
            var policiesByMessage: [(message: String, policies: [String])] = []
            for result in results {
                guard case .error(let message) = result.record(at: step.index)?.outcome else { continue }
                if let position = policiesByMessage.firstIndex(where: { $0.message == message }) {
                    policiesByMessage[position].policies.append(result.policy)
                } else {
                    policiesByMessage.append((message: message, policies: [result.policy]))
                }
            }
            for (message, policies) in policiesByMessage {
                let runs = policies.count == results.count && results.count > 1
                    ? "every run" : policies.joined(separator: ", ")
                notes.append("\(label(of: step)) (\(runs)): \(message)")
            }
        }
        return notes
    }

    // MARK: - Expectations

    /// What differs between `result` and the file's expectation for its policy; empty when
    /// they agree or there is none.
    static func differences(_ scenario: Scenario, _ result: ScenarioResult) -> [String] {
        guard let expectation = scenario.expectation(for: result.policy) else { return [] }
        var differences: [String] = []
        if let saves = expectation.saves {
            for (position, (index, expected)) in zip(scenario.saveStepIndices, saves).enumerated() {
                let record = result.record(at: index)!
                guard record.outcome.word != expected else { continue }
                var line = "saves[\(position)] (\(label(of: record.step))): expected \(expected.rawValue), "
                    + "got \(record.outcome.word.rawValue)"
                if case .error(let message) = record.outcome { line += " (\(message))" }
                differences.append(line)
            }
        }
        for (refName, expected) in expectation.store ?? [] {
            let entity = scenario.ref(named: refName)!.entity
            let actual = result.storeValues(of: refName)
            switch (expected, actual) {
            case (nil, nil):
                break
            case (nil, let actual?):
                differences.append("store \(refName): expected no record (null), got \(ScenarioValues.text(actual, of: entity))")
            case (let expected?, nil):
                differences.append("store \(refName): expected \(ScenarioValues.text(expected, of: entity)), "
                    + "got no record (\(absence(of: refName, in: result)))")
            case (let expected?, let actual?):
                differences += propertyDifferences(expected, actual, entity: entity, at: "store \(refName)")
            }
        }
        for (contextName, refs) in expectation.contexts ?? [] {
            let held = result.contexts.first { $0.context == contextName }?.refs ?? []
            for (refName, expected) in refs {
                let entity = scenario.ref(named: refName)!.entity
                let at = "context \(contextName) \(refName)"
                let actual = held.first { $0.ref == refName }?.state
                switch (expected, actual) {
                case (.notRegistered, nil), (.deleted, .deleted?):
                    break
                case (.values(let expected), .values(let actual)?):
                    differences += propertyDifferences(expected, actual, entity: entity, at: at)
                default:
                    differences.append("\(at): expected \(describe(expected, entity)), got \(describe(actual, entity))")
                }
            }
        }
        return differences
    }

    private static func propertyDifferences(
        _ expected: PropertyValues, _ actual: PropertyValues, entity: EntityDescription, at: String
    ) -> [String] {
        ScenarioValues.propertyNames(of: entity).compactMap { property in
            let wanted = expected.value(of: property), found = actual.value(of: property)
            guard wanted != found else { return nil }
            return "\(at).\(property): expected \(ScenarioValues.text(wanted, property: property, of: entity)), "
                + "got \(ScenarioValues.text(found, property: property, of: entity))"
        }
    }

    private static func describe(_ state: ExpectedInMemoryState, _ entity: EntityDescription) -> String {
        switch state {
        case .notRegistered: "not registered (null)"
        case .deleted: "deleted"
        case .values(let values): ScenarioValues.text(values, of: entity)
        }
    }

    private static func describe(_ state: InMemoryState?, _ entity: EntityDescription) -> String {
        switch state {
        case nil: "not registered"
        case .deleted?: "deleted"
        case .values(let values)?: ScenarioValues.text(values, of: entity)
        }
    }
}
