import Foundation
import Testing

// `cairn scenario` and `cairn policies` on the canonical relationship scenarios: the long entity
// form with relationships, values naming refs, the `relate` step, and a to-many printed as its
// members' refs.

extension CairnToolTests {
    @Suite struct RelationshipScenarioTests {
        static let files = [
            "relationship-move-vs-rename.json", "relationship-concurrent-additions.json", "relationship-to-one-moved-twice.json",
            "relationship-insert-to-deleted.json", "relationship-cascade-vs-member-update.json", "relationship-deny.json",
            "relationship-many-to-many-edits.json", "relationship-ordered-reorders.json", "relationship-ordered-many-to-many.json",
        ]

        @Test(arguments: files)
        func relationshipScenarioMeetsItsExpectations(file: String) throws {
            try ScenarioTests.expectMeetsExpectations(file)
        }

        @Test func theSharedScenarioPrintsToManysAsSortedRefsAndToOnesAsRefs() throws {
            let run = try cairn("scenario", try ScenarioTests.scenarioPath("relationship-move-vs-rename.json"), "--json", "--policy", "storeTrump")
            #expect(run.status == 0, "\(run)")
            let result = try #require((try ScenarioTests.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])?.first)
            let store = try #require(result["store"] as? [String: [String: Any]])
            #expect(store["d"]?["employees"] as? [String] == ["p2"])
            #expect(store["d2"]?["employees"] as? [String] == ["p1"])
            #expect(store["p1"]?["department"] as? String == "d2")
            // In B's context: Eng renamed, its members as B reads them (Ann moved by A's save).
            let b = try #require((result["contexts"] as? [String: [String: [String: Any]]])?["B"])
            #expect(b["d"]?["name"] as? String == "R&D")
            #expect(b["d"]?["employees"] as? [String] == ["p2"])
        }

        @Test func policiesShowsTheRelationshipScenarios() throws {
            let run = try cairn("policies")
            #expect(run.status == 0, "\(run)")
            // The shared scenario is named for what it shows; the others by their file names.
            for name in ["a relationship change is a change of both ends"] + Self.files.dropFirst().map({ String($0.dropLast(".json".count)) }) {
                #expect(run.lines.contains { $0.hasPrefix(name) && $0.contains("conflict*") || $0.hasPrefix(name) && $0.contains("error") },
                        "\(name) missing: \(run)")
            }
        }

        @Test func relationshipMistakesAreBadFiles() throws {
            let directory = try TemporaryDirectory(purpose: "relationship-scenario")
            defer { directory.remove() }
            let entities = #"""
                "entities": {"D": {"attributes": {"n": "string"}, "relationships": {"ps": {"toMany": "P", "inverse": "d"}}},
                             "P": {"attributes": {"n": "string"}, "relationships": {"d": {"toOne": "D", "inverse": "ps"}}}}
                """#
            let cases: [(store: String, steps: String, message: String)] = [
                (#"{"d": {"entity": "D", "values": {"n": "a", "ps": ["p"]}}, "p": {"entity": "P", "values": {"n": "b", "d": null}}}"#, "",
                 "store: d.ps and p.d disagree"),
                (#"{"d": {"entity": "D", "values": {"n": "a", "ps": ["q"]}}}"#, "", #"store.d.values.ps: unknown ref "q""#),
                (#"{"d": {"entity": "D", "values": {"n": "a"}}}"#, #"{"in": "A", "do": "relate", "ref": "d", "relationship": "n"}"#,
                 #"step 0: D has no to-many relationship "n""#),
                (#"{"d": {"entity": "D", "values": {"n": "a"}}}"#, #"{"in": "A", "do": "relate", "ref": "d", "relationship": "ps", "add": ["d"]}"#,
                 #"ref "d" is a D, but the relationship points at P objects"#),
            ]
            for (position, example) in cases.enumerated() {
                let path = directory.path + "/bad\(position).json"
                try Data(#"{"name": "x", \#(entities), "store": \#(example.store), "steps": [\#(example.steps)]}"#.utf8)
                    .write(to: URL(fileURLWithPath: path))
                let run = try cairn("scenario", path)
                #expect(run.status == 1, "\(run)")
                #expect(run.errorOutput.contains(example.message), "\(example.message): \(run)")
            }
        }

        @Test func manyToManyStoreEndsMustAgreeAndBothArePrinted() throws {
            let directory = try TemporaryDirectory(purpose: "many-to-many-scenario")
            defer { directory.remove() }
            let entities = #"""
                "entities": {"Post": {"attributes": {"n": "string"}, "relationships": {"tags": {"toMany": "Tag", "inverse": "posts"}}},
                             "Tag": {"attributes": {"n": "string"}, "relationships": {"posts": {"toMany": "Post", "inverse": "tags"}}}}
                """#
            let disagreeing = directory.path + "/disagree.json"
            try Data((#"{"name": "x", \#(entities), "store": {"p": {"entity": "Post", "values": {"n": "a", "tags": ["t"]}}, "# +
                     #""t": {"entity": "Tag", "values": {"n": "b", "posts": []}}}, "steps": []}"#).utf8).write(to: URL(fileURLWithPath: disagreeing))
            let refused = try cairn("scenario", disagreeing)
            #expect(refused.status == 1 && refused.errorOutput.contains("store: p.tags and t.posts disagree"), "\(refused)")
            // Both ends given alike, and the set replaced by a `set` step: each end prints the other.
            let agreeing = directory.path + "/agree.json"
            try Data((#"{"name": "x", \#(entities), "store": {"p": {"entity": "Post", "values": {"n": "a", "tags": ["t"]}}, "# +
                     #""t": {"entity": "Tag", "values": {"n": "b", "posts": ["p"]}}, "u": {"entity": "Tag", "values": {"n": "c"}}}, "# +
                     #""steps": [{"in": "A", "do": "set", "ref": "u", "values": {"posts": ["p"]}}, {"in": "A", "do": "save"}]}"#).utf8)
                .write(to: URL(fileURLWithPath: agreeing))
            let run = try cairn("scenario", agreeing, "--json", "--policy", "error")
            #expect(run.status == 0, "\(run)")
            let result = try #require((try ScenarioTests.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])?.first)
            let store = try #require(result["store"] as? [String: [String: Any]])
            #expect(store["p"]?["tags"] as? [String] == ["t", "u"])
            #expect(store["u"]?["posts"] as? [String] == ["p"])
        }
    }
}
