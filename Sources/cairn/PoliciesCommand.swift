import Foundation
import Policies
import ScenarioFormat

/// `cairn policies`: the canonical conflicts run under every built-in policy, side by side.
enum PoliciesCommand {
    static let command = Command(
        name: "policies",
        summary: "Run the canonical merge scenarios under every built-in policy and compare them.",
        arguments: [],
        options: [
            .flag("markdown", "Print the table as Markdown (as pasted into Docs/MergePolicies.md)."),
            .value("scenarios", "DIR", "Run the scenario files DIR/*.json instead of the canonical ones."),
        ],
        discussion: """
            Each scenario runs once per policy, each run on a fresh temporary store, exactly as
            'cairn scenario FILE' runs it. Per scenario, the table shows the outcome of its
            conflicting save (the first save step that met a conflict under some policy, or
            the last save step when none did), then the final committed state of each ref
            that conflicted. Cells that differ from the most common value in their row end in
            '*' (bold in Markdown).

            The canonical scenarios are built into the tool:
            \(CanonicalScenarios.all.map { "  " + $0.file }.joined(separator: "\n"))
            Exit status: 0 success, 1 bad scenario file or usage, 2 the store failed, 3 a
            run differs from its file's "expect" block.
            """,
        run: run
    )

    @Sendable private static func run(_ arguments: Arguments) throws -> ExitStatus {
        let sources = try sources(arguments.value("scenarios"))
        var runs: [(scenario: Scenario, results: [ScenarioResult])] = []
        for (file, text) in sources {
            let scenario: Scenario
            do {
                scenario = try Scenario.parse(text)
            } catch {
                StandardStream.error.write("cairn policies: \(file): \(error)\n")
                return .usage
            }
            do {
                runs.append((scenario: scenario, results: try ScenarioRuns.run(scenario, under: BuiltInPolicies.all)))
            } catch {
                StandardStream.error.write("cairn policies: \(file): store error: \(error)\n")
                return .scenarioStoreError
            }
        }
        let table = comparison(runs)
        if arguments.flag("markdown") {
            StandardStream.output.write(table.markdown)
        } else {
            StandardStream.output.write("Merge policies compared on \(runs.count) scenario\(runs.count == 1 ? "" : "s"):\n\n" + table.text)
        }
        let differences = zip(sources, runs).flatMap { source, run in
            ScenarioRuns.differences(run.scenario, run.results).map { "\(source.file): \($0)" }
        }
        guard differences.isEmpty else {
            StandardStream.error.write(
                "cairn policies: runs differ from their \"expect\" blocks:\n" + differences.map { "  \($0)\n" }.joined())
            return .expectationMismatch
        }
        return .success
    }

    /// The scenario files to run: `DIR/*.json` sorted by name, or the canonical ones.
    static func sources(_ directory: String?) throws(CommandError) -> [(file: String, text: String)] {
        guard let directory else { return CanonicalScenarios.all }
        let names: [String]
        do {
            names = try StoreAccess.directoryEntries(directory).filter { $0.hasSuffix(".json") }.sorted()
        } catch CommandError.failed(let message) {
            throw CommandError.usage("--scenarios: \(message)")
        } catch {
            throw error
        }
        guard !names.isEmpty else { throw CommandError.usage("--scenarios: no .json files in \(StoreAccess.shown(directory))") }
        var sources: [(file: String, text: String)] = []
        for name in names {
            let path = directory + "/" + name
            let bytes: [UInt8]
            do {
                bytes = try InputFile.read(path, limit: InputFile.scenarioLimit)
            } catch {
                throw CommandError.usage("--scenarios: cannot read \(StoreAccess.shown(path)): \(error)")
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw CommandError.usage("--scenarios: \(StoreAccess.shown(path)) is not UTF-8 text")
            }
            sources.append((file: name, text: text))
        }
        return sources
    }

    /// Two kinds of rows per scenario: its conflicting save's outcome, and the final committed
    /// state of each ref that conflicted (every ref when none did).
    static func comparison(_ runs: [(scenario: Scenario, results: [ScenarioResult])]) -> ComparisonTable {
        var table = ComparisonTable(labelHeaders: ["scenario", "row"], columns: BuiltInPolicies.names)
        for (scenario, results) in runs {
            let saves = scenario.saveStepIndices
            let conflicting = saves.first { index in
                results.contains { result in
                    let record = result.record(at: index)!
                    return record.outcome == .conflict || !record.conflicts.isEmpty
                }
            } ?? saves.last
            var refNames: [String] = []
            if let conflicting {
                let step = scenario.steps[conflicting]
                table.append(
                    labels: [scenario.name, "\(step.context)'s save (step \(conflicting))"],
                    cells: results.map { $0.record(at: conflicting)!.outcome.word.rawValue })
                // A constraint conflict involves the stored object too: its row shows the merge.
                let conflicted = Set(results.flatMap { result in
                    result.record(at: conflicting)!.conflicts.flatMap { [$0.ref] + ($0.storedRef.map { [$0] } ?? []) }
                })
                refNames = scenario.refs.map(\.name).filter { conflicted.contains($0) }
            } else {
                table.append(labels: [scenario.name, "no save step"], cells: results.map { _ in "-" })
            }
            if refNames.isEmpty { refNames = scenario.refs.map(\.name) }
            for refName in refNames {
                let entity = scenario.ref(named: refName)!.entity
                table.append(labels: ["", "store: \(refName)"], cells: results.map { result in
                    result.storeValues(of: refName).map { ScenarioValues.text($0, of: entity) }
                        ?? ScenarioReport.absence(of: refName, in: result)
                })
            }
        }
        return table
    }
}
