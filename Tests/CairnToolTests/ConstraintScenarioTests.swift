import Foundation
import Testing

// `cairn scenario` and `cairn policies` on the canonical constraint scenarios: the long entity
// form, constraint conflicts reported with their stored ref and constraint, upserts printing
// the inserted and the stored ref alike.

extension CairnToolTests {
    @Suite struct ConstraintScenarioTests {
        static let files = [
            "constraint-insert-duplicate.json", "constraint-change-duplicate.json",
            "constraint-concurrent-inserts.json", "constraint-duplicate-in-one-save.json",
        ]

        @Test(arguments: files)
        func constraintScenarioMeetsItsExpectations(file: String) throws {
            try ScenarioTests.expectMeetsExpectations(file)
        }

        @Test func aConstraintConflictIsReportedWithItsStoredRefAndConstraint() throws {
            let path = try ScenarioTests.scenarioPath("constraint-concurrent-inserts.json")
            let run = try cairn("scenario", path, "--json")
            #expect(run.status == 0, "\(run)")
            let results = try #require(try ScenarioTests.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])
            for result in results {
                let policy = try #require(result["policy"] as? String)
                let steps = try #require(result["steps"] as? [[String: Any]])
                let second = try #require(steps.last)
                let conflict = try #require((second["conflicts"] as? [[String: Any]])?.first, "\(policy): \(second)")
                #expect(Set(conflict.keys) == ["ref", "kind", "storedRef", "constraint", "ancestorVersion", "storeVersion"])
                #expect(conflict["kind"] as? String == "constraint")
                #expect(conflict["ref"] as? String == "b")
                #expect(conflict["storedRef"] as? String == "a")
                #expect(conflict["constraint"] as? [String] == ["email"])
                #expect(second["outcome"] as? String == (policy == "error" ? "conflict" : "ok"), "\(policy)")
                // After an upsert both refs name the stored object and print its values.
                let store = try #require(result["store"] as? [String: Any])
                if ["objectTrump", "overwrite", "storeTrump"].contains(policy) {
                    let a = try #require(store["a"] as? [String: Any]), b = try #require(store["b"] as? [String: Any])
                    #expect(ScenarioTests.same(a, b), "\(policy): \(store)")
                } else {
                    #expect(store["b"] is NSNull, "\(policy): \(store)")
                }
            }
        }

        @Test func policiesShowsTheConstraintScenarios() throws {
            let run = try cairn("policies")
            #expect(run.status == 0, "\(run)")
            for file in Self.files {
                let name = String(file.dropLast(".json".count))
                let row = try #require(run.lines.first { $0.hasPrefix(name) }, "\(name) missing: \(run)")
                let cells = row.split(separator: "  ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
                #expect(cells.suffix(5) == (name == "constraint-duplicate-in-one-save"
                    ? ["error", "error", "error", "error", "error"] : ["conflict*", "ok", "ok", "ok", "ok"]), "\(row)")
            }
            // The change scenario's rows show the stored object the change was merged into.
            #expect(run.output.contains("store: p") && run.output.contains("store: r"), "\(run)")
        }

        @Test func theLongFormRefusesUnsupportedRelationshipsAndUnknownConstraintAttributes() throws {
            let directory = try TemporaryDirectory(purpose: "constraint-scenario")
            defer { directory.remove() }
            // An ordered many-to-many whose link table's name fits (200 bytes) and order table's does not.
            let name = "d" + String(repeating: "x", count: 192)
            let relationships = directory.path + "/relationships.json"
            try Data(#"""
                {"name": "x", "entities": {"P": {"attributes": {"a": "int"},
                  "relationships": {"\#(name)": {"toMany": "P", "inverse": "\#(name)", "ordered": true}}}}, "steps": []}
                """#.utf8).write(to: URL(fileURLWithPath: relationships))
            let refused = try cairn("scenario", relationships)
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.errorOutput.contains("relationship P.\(name) is a many-to-many whose order table name (order:P:\(name)) is longer than 200 bytes"), "\(refused)")
            let unknown = directory.path + "/unknown.json"
            try Data(#"""
                {"name": "x", "entities": {"P": {"attributes": {"a": "int"}, "uniquenessConstraints": [["b"]]}}, "steps": []}
                """#.utf8).write(to: URL(fileURLWithPath: unknown))
            let bad = try cairn("scenario", unknown)
            #expect(bad.status == 1, "\(bad)")
            #expect(bad.errorOutput.contains("uniqueness constraint of entity P names \"b\""), "\(bad)")
        }
    }
}
