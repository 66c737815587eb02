import EtcdStorage
import Foundation
import Policies
import ScenarioFormat

/// `cairn scenario FILE`: run a merge scenario under one policy or all of them.
enum ScenarioCommand {
    static let command = Command(
        name: "scenario",
        summary: "Run a merge scenario file under each merge policy and compare the outcomes.",
        arguments: ["FILE"],
        options: [
            .value("policy", "NAME", "Run under this policy only, or under every built-in one: all (the default)."),
            .flag("json", "Print one JSON object with every run's steps and final state instead of the table."),
            .value("store", "URL", "Run on etcd at etcd://HOST:PORT[,HOST:PORT...]/PREFIX, each policy under a fresh prefix below PREFIX (left in place), instead of a temporary directory."),
        ],
        discussion: """
            FILE is JSON that scripts a few contexts against one fresh store: "name", an
            optional "description", "entities" (attribute types string, int, double, bool,
            bytes, date; a trailing ? makes one optional), "store" (objects committed before
            the first step, each named by a ref), "steps", and an optional "expect" per
            policy. Each step runs "in" a context (a root private-queue context made on first
            use, unless a child step makes it) and "do"es one of: fetch, set, insert, delete,
            save, detectConflicts, refresh, rollback, reset, merge, child, pin, autoMerge. A
            step's "policy" switches its context's policy from then on. Unknown keys and ops
            are errors. Steps are numbered from 0, in the output and in error messages.

            Each run gets its own temporary store. The table has one column per policy: the
            outcome of every save step (and of any other step that failed), then the final
            committed value of each ref's properties. Cells that differ from the most common
            value in their row end in '*'.

            When FILE has an "expect" block, every run it covers is checked against it and
            each difference is printed on standard error.

            Policies: \(BuiltInPolicies.names.joined(separator: ", ")).
            Exit status: 0 ran (and matched its expectations), 1 bad file or usage (the
            message names the step or key), 2 the store failed, 3 an expectation differs.
            """,
        run: run
    )

    @Sendable private static func run(_ arguments: Arguments) throws -> ExitStatus {
        let path = arguments.positionals[0]
        let policies = try ScenarioRuns.policies(named: arguments.value("policy") ?? "all")
        let scenario: Scenario
        do {
            scenario = try ScenarioRuns.load(path)
        } catch {
            StandardStream.error.write("cairn scenario: \(StoreAccess.shown(path)): \(error)\n")
            return .usage
        }
        let location: ScenarioRunner.Location
        if let url = arguments.value("store") {
            do { location = .etcd(try EtcdConfiguration(url: url)) } catch {
                throw CommandError.usage("--store: \(error)")
            }
        } else {
            location = .temporaryDirectory
        }
        let results: [ScenarioResult]
        do {
            results = try ScenarioRuns.run(scenario, under: policies, on: location)
        } catch {
            StandardStream.error.write("cairn scenario: \(path): store error: \(error)\n")
            return .scenarioStoreError
        }

        if arguments.flag("json") {
            StandardStream.output.write(ScenarioReport.json(scenario, results).rendered() + "\n")
        } else {
            StandardStream.output.write(text(scenario, results))
        }
        let differences = ScenarioRuns.differences(scenario, results)
        guard differences.isEmpty else {
            StandardStream.error.write(
                "cairn scenario: \(path): the runs differ from \"expect\":\n"
                    + differences.map { "  \($0)\n" }.joined())
            return .expectationMismatch
        }
        return .success
    }

    /// The heading, the comparison table, the messages of failed steps and a line about the
    /// expectations.
    static func text(_ scenario: Scenario, _ results: [ScenarioResult]) -> String {
        var out = "\(scenario.name)\n"
        if let summary = scenario.summary { out += "\(summary)\n" }
        out += "\n" + ScenarioReport.table(scenario, results).text
        let notes = ScenarioReport.errorNotes(results)
        if !notes.isEmpty { out += "\nErrors:\n" + notes.map { "  \($0)\n" }.joined() }
        let checked = results.map(\.policy).filter { scenario.expectation(for: $0) != nil }
        let unchecked = results.map(\.policy).filter { scenario.expectation(for: $0) == nil }
        if !checked.isEmpty {
            let failed = checked.filter { policy in
                !ScenarioReport.differences(scenario, results.first { $0.policy == policy }!).isEmpty
            }
            out += "\nExpectations: "
                + (failed.isEmpty ? "met for \(checked.joined(separator: ", "))" : "NOT met for \(failed.joined(separator: ", "))")
            if !unchecked.isEmpty { out += "; none given for \(unchecked.joined(separator: ", "))" }
            out += "\n"
        }
        return out
    }
}

/// Loading and running scenarios: shared by `scenario`, `policies` and `demo`.
enum ScenarioRuns {
    /// The policies `--policy NAME` selects: `all` is every built-in.
    static func policies(named name: String) throws(CommandError) -> [any MergePolicy] {
        if name == "all" { return BuiltInPolicies.all }
        switch Scenario.policy(named: name) {
        case .success(let policy): return [policy]
        case .failure(let error):
            // The parser's message names the policy in full; a long name is cut here.
            if name.utf8.count > 64 { throw CommandError.usage("--policy: unknown policy \"\(abbreviated(name))\"") }
            throw CommandError.usage("--policy: \(error.message), or all")
        }
    }

    /// Reads and checks the scenario file at `path`.
    static func load(_ path: String) throws(ScenarioFileError) -> Scenario {
        let bytes: [UInt8]
        do {
            bytes = try InputFile.read(path, limit: InputFile.scenarioLimit)
        } catch {
            throw ScenarioFileError("cannot read the file: \(error)")
        }
        return try Scenario.parse(fileContents: Data(bytes))
    }

    /// One run per policy, each on its own fresh store.
    static func run(
        _ scenario: Scenario, under policies: [any MergePolicy], on location: ScenarioRunner.Location = .temporaryDirectory
    ) throws(ScenarioStoreError) -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        for policy in policies { results.append(try ScenarioRunner.run(scenario, policy: policy, on: location)) }
        return results
    }

    /// Every difference from the file's expectations, prefixed by the policy.
    static func differences(_ scenario: Scenario, _ results: [ScenarioResult]) -> [String] {
        results.flatMap { result in
            ScenarioReport.differences(scenario, result).map { "\(result.policy): \($0)" }
        }
    }
}

extension ExitStatus {
    /// `scenario` and `policies`: the store failed (the spec's exit status 2).
    static let scenarioStoreError = ExitStatus(rawValue: 2)!
    /// `scenario` and `policies`: a run differs from the file's `expect` block (3).
    static let expectationMismatch = ExitStatus(rawValue: 3)!
}
