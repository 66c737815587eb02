import Foundation
import Testing

// `cairn scenario` and `cairn policies`, run as a user runs them: through the binary, on the
// canonical scenario files (the shared scenario files, copied into Scenarios/) and on small
// scenarios written here for the steps the canonical ones do not use.

extension CairnToolTests {
    @Suite struct ScenarioTests {
        static let policies = ["error", "storeTrump", "objectTrump", "overwrite", "rollback"]
        static let canonicalFiles = [
            "delete-both.json", "delete-vs-store-update.json", "update-update-different-properties.json",
            "update-update-same-property.json", "update-vs-store-delete.json",
        ]

        // MARK: - The canonical scenarios

        @Test(arguments: canonicalFiles)
        func canonicalScenarioMeetsItsExpectations(file: String) throws {
            let path = try Self.scenarioPath(file)
            let run = try cairn("scenario", path)
            #expect(run.status == 0, "\(run)")
            #expect(run.output.contains("Expectations: met for \(Self.policies.joined(separator: ", "))"), "\(run)")
            let header = try #require(run.lines.first { line in Self.policies.allSatisfy { line.contains($0) } }, "\(run)")
            #expect(header.split(separator: " ", omittingEmptySubsequences: true).map(String.init) == Self.policies)
            #expect(run.errorOutput.isEmpty, "\(run)")
        }

        @Test(arguments: canonicalFiles)
        func canonicalScenarioJSONHasTheSpecShapeAndTheExpectedOutcomes(file: String) throws {
            let path = try Self.scenarioPath(file)
            let scenario = try Self.jsonObject(Data(contentsOf: URL(fileURLWithPath: path)))
            let steps = try #require(scenario["steps"] as? [[String: Any]])
            let saveIndices = steps.indices.filter { steps[$0]["do"] as? String == "save" }
            let expect = try #require(scenario["expect"] as? [String: [String: Any]])

            let run = try cairn("scenario", path, "--json")
            #expect(run.status == 0, "\(run)")
            let document = try Self.jsonObject(Data(run.output.utf8))
            #expect(Set(document.keys) == ["scenario", "results"])
            #expect(document["scenario"] as? String == scenario["name"] as? String)
            let results = try #require(document["results"] as? [[String: Any]])
            #expect(results.map { $0["policy"] as? String } == Self.policies)
            for result in results {
                let policy = try #require(result["policy"] as? String)
                #expect(Set(result.keys) == ["policy", "steps", "store", "contexts"], "\(policy)")
                let listed = try #require(result["steps"] as? [[String: Any]])
                // Every save step is listed; the canonical scenarios' other steps all succeed.
                #expect(listed.compactMap { ($0["index"] as? NSNumber)?.intValue } == saveIndices, "\(policy)")
                for step in listed {
                    let index = try #require((step["index"] as? NSNumber)?.intValue)
                    #expect(step["in"] as? String == steps[index]["in"] as? String)
                    #expect(step["do"] as? String == "save")
                    let outcome = try #require(step["outcome"] as? String)
                    #expect(["ok", "conflict", "error"].contains(outcome))
                    if outcome == "conflict" {
                        let conflicts = try #require(step["conflicts"] as? [[String: Any]], "\(step)")
                        #expect(!conflicts.isEmpty)
                        for conflict in conflicts {
                            #expect(Set(conflict.keys) == ["ref", "kind", "ancestorVersion", "storeVersion"])
                            #expect(["update/update", "update/delete", "delete/update"].contains(conflict["kind"] as? String ?? ""))
                        }
                    }
                }
                // The outcomes agree with the file's own expectations, checked here independently.
                let expected = try #require(expect[policy])
                let outcomes = listed.map { $0["outcome"] as? String ?? "?" }
                #expect(outcomes == expected["saves"] as? [String], "\(policy)")
                let store = try #require(result["store"] as? [String: Any])
                let expectedStore = try #require(expected["store"] as? [String: Any])
                #expect(Self.same(store, expectedStore), "\(policy): \(store) vs \(expectedStore)")
                let contexts = try #require(result["contexts"] as? [String: Any])
                #expect(Set(contexts.keys) == ["A", "B"], "\(policy)")
            }
        }

        @Test func conflictsAreReportedWithRefKindAndVersions() throws {
            let run = try cairn("scenario", try Self.scenarioPath("update-update-different-properties.json"), "--json", "--policy", "error")
            #expect(run.status == 0, "\(run)")
            let result = try #require((try Self.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])?.first)
            let steps = try #require(result["steps"] as? [[String: Any]])
            #expect(steps.count == 2)
            let second = try #require(steps.last)
            #expect((second["index"] as? NSNumber)?.intValue == 5)
            #expect(second["in"] as? String == "A")
            #expect(second["outcome"] as? String == "conflict")
            let conflict = try #require((second["conflicts"] as? [[String: Any]])?.first)
            #expect(conflict["ref"] as? String == "p")
            #expect(conflict["kind"] as? String == "update/update")
            #expect((conflict["ancestorVersion"] as? NSNumber)?.intValue == 1)
            #expect((conflict["storeVersion"] as? NSNumber)?.intValue == 2)
            // A keeps its pending change after the failed save; B holds what it saved.
            let contexts = try #require(result["contexts"] as? [String: [String: Any]])
            let inA = try #require(contexts["A"]?["p"] as? [String: Any])
            let inB = try #require(contexts["B"]?["p"] as? [String: Any])
            #expect(Self.same(inA, ["name": "Ann", "age": 30, "city": "Rome"]), "\(inA)")
            #expect(Self.same(inB, ["name": "Ann", "age": 31, "city": "Oslo"]), "\(inB)")
            // Keys are sorted in the text itself, not only in the parsed object.
            let positions = ["\"contexts\"", "\"policy\"", "\"steps\"", "\"store\""].map { run.output.range(of: $0)!.lowerBound }
            #expect(positions == positions.sorted())
        }

        @Test func onePolicyRunsOnlyThatPolicy() throws {
            let path = try Self.scenarioPath("update-update-same-property.json")
            let json = try cairn("scenario", path, "--policy", "storeTrump", "--json")
            #expect(json.status == 0, "\(json)")
            let results = try #require(try Self.jsonObject(Data(json.output.utf8))["results"] as? [[String: Any]])
            #expect(results.map { $0["policy"] as? String } == ["storeTrump"])
            let text = try cairn("scenario", path, "--policy", "storeTrump")
            #expect(text.status == 0, "\(text)")
            #expect(text.output.contains("storeTrump"))
            for other in Self.policies where other != "storeTrump" {
                #expect(!text.output.contains(other), "\(other) in \(text.output)")
            }
            #expect(text.lines.contains { $0.hasPrefix("p.age") && $0.hasSuffix(" 31") }, "\(text)")
        }

        @Test func unknownOrParameterisedPoliciesAreUsageErrors() throws {
            let path = try Self.scenarioPath("delete-both.json")
            let unknown = try cairn("scenario", path, "--policy", "mostRecent")
            #expect(unknown.status == 1, "\(unknown)")
            #expect(unknown.errorOutput.contains("unknown policy \"mostRecent\""), "\(unknown)")
            #expect(unknown.output.isEmpty)
            let parameterised = try cairn("scenario", path, "--policy", "lastWriterWins")
            #expect(parameterised.status == 1, "\(parameterised)")
            #expect(parameterised.errorOutput.contains("needs parameters"), "\(parameterised)")
        }

        // MARK: - Expectations and bad files

        @Test func aWrongExpectationExitsThreeAndNamesTheDifference() throws {
            var scenario = try Self.jsonObject(Data(contentsOf: URL(fileURLWithPath: try Self.scenarioPath("update-update-different-properties.json"))))
            var expect = try #require(scenario["expect"] as? [String: [String: Any]])
            expect["objectTrump"]!["store"] = ["p": ["name": "Ann", "age": 31, "city": "Paris"]]
            expect["error"]!["saves"] = ["ok", "ok"]
            scenario["expect"] = expect
            let directory = try TemporaryDirectory(purpose: "wrong-expect")
            defer { directory.remove() }
            let path = try Self.write(scenario, to: directory.path + "/wrong.json")

            for extra in [[], ["--json"]] {
                let run = try cairn(["scenario", path] + extra)
                #expect(run.status == 3, "\(run)")
                #expect(run.errorOutput.contains("objectTrump: store p.city: expected \"Paris\", got \"Rome\""), "\(run)")
                #expect(run.errorOutput.contains("error: saves[1] (step 5: A save): expected ok, got conflict"), "\(run)")
                #expect(!run.errorOutput.contains("storeTrump:"), "only the wrong expectations are reported: \(run)")
            }
            // The output is still complete: the JSON parses.
            let json = try cairn("scenario", path, "--json")
            #expect((try Self.jsonObject(Data(json.output.utf8))["results"] as? [Any])?.count == 5)
            // A single policy whose expectation is right passes.
            #expect(try cairn("scenario", path, "--policy", "overwrite").status == 0)
        }

        @Test func unknownOpsAndKeysAreErrorsNamingTheStep() throws {
            let original = try Self.jsonObject(Data(contentsOf: URL(fileURLWithPath: try Self.scenarioPath("update-update-same-property.json"))))
            let directory = try TemporaryDirectory(purpose: "bad-steps")
            defer { directory.remove() }
            func mutated(_ change: (inout [[String: Any]]) -> Void) throws -> String {
                var scenario = original
                var steps = scenario["steps"] as! [[String: Any]]
                change(&steps)
                scenario["steps"] = steps
                return try Self.write(scenario, to: directory.path + "/bad-\(UUID().uuidString).json")
            }
            let cases: [(path: String, needles: [String])] = [
                (try mutated { $0[2]["do"] = "frobnicate" }, ["step 2", "unknown op \"frobnicate\""]),
                (try mutated { $0[4]["colour"] = "red" }, ["step 4", "unknown key \"colour\""]),
                (try mutated { $0[3]["ref"] = "p" }, ["step 3", "unknown key \"ref\""]),  // save takes no ref
                (try mutated { $0[1]["ref"] = "q" }, ["step 1", "unknown ref \"q\""]),
                (try mutated { $0[2]["values"] = ["age": "thirty"] }, ["step 2", "age", "whole number"]),
                (try mutated { $0[2]["values"] = ["height": 180] }, ["step 2", "no attribute \"height\""]),
                (try mutated { $0[5]["policy"] = "mostRecent" }, ["step 5", "unknown policy"]),
                (try mutated { $0[0].removeValue(forKey: "in") }, ["step 0", "needs \"in\""]),
            ]
            for (path, needles) in cases {
                let run = try cairn("scenario", path)
                #expect(run.status == 1, "\(run)")
                for needle in needles { #expect(run.errorOutput.contains(needle), "\(needle) not in \(run)") }
                #expect(run.output.isEmpty, "nothing runs for a bad file: \(run)")
            }

            var topLevel = original
            topLevel["extra"] = true
            let top = try cairn("scenario", try Self.write(topLevel, to: directory.path + "/top.json"))
            #expect(top.status == 1, "\(top)")
            #expect(top.errorOutput.contains("unknown key \"extra\""), "\(top)")

            var shortSaves = original
            var expect = shortSaves["expect"] as! [String: [String: Any]]
            expect["rollback"]!["saves"] = ["ok"]
            shortSaves["expect"] = expect
            let short = try cairn("scenario", try Self.write(shortSaves, to: directory.path + "/short.json"))
            #expect(short.status == 1, "\(short)")
            #expect(short.errorOutput.contains("expect.rollback.saves lists 1 outcome but the scenario has 2 save steps"), "\(short)")
        }

        @Test func invalidJSONAndMissingFilesAreErrors() throws {
            let directory = try TemporaryDirectory(purpose: "bad-json")
            defer { directory.remove() }
            let path = directory.path + "/broken.json"
            try Data("{\n  \"name\": \"x\",\n  \"steps\": [,]\n}\n".utf8).write(to: URL(fileURLWithPath: path))
            let broken = try cairn("scenario", path)
            #expect(broken.status == 1, "\(broken)")
            #expect(broken.errorOutput.contains("line 3, column 13"), "\(broken)")
            let missing = try cairn("scenario", directory.path + "/absent.json")
            #expect(missing.status == 1, "\(missing)")
            #expect(missing.errorOutput.contains("absent.json"), "\(missing)")
        }

        @Test func contextStepsNamingContextsThatDoNotExistYetAreRefused() throws {
            let fetch = #"{ "in": "A", "do": "fetch", "ref": "p" }"#
            let cases: [(steps: [String], needle: String)] = [
                ([fetch, #"{ "in": "A", "do": "child", "parent": "P" }"#], "step 1: a `child` step must be the first step naming \"A\""),
                ([fetch, #"{ "in": "A", "do": "merge", "from": "B" }"#], "step 1: no earlier step runs in a context named \"B\""),
                ([fetch, #"{ "in": "A", "do": "pin", "to": "B" }"#], "step 1: \"to\" is \"current\", \"none\" or the name"),
                ([fetch, #"{ "in": "A", "do": "autoMerge", "on": "yes" }"#], "step 1: \"on\" must be true or false"),
                ([fetch, #"{ "in": "A", "do": "refresh", "ref": "p" }"#], "step 1: a `refresh` step needs \"merge\""),
            ]
            for (steps, needle) in cases {
                let run = try Self.runScenario(Self.personScenario(steps: steps))
                #expect(run.status == 1, "\(run)")
                #expect(run.errorOutput.contains(needle), "\(needle) not in \(run)")
            }
        }

        @Test func aChildSavesIntoItsParentAndOnlyTheRootSaveReachesTheStore() throws {
            let scenario = Self.personScenario(steps: [
                #"{ "in": "P", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "C", "do": "child", "parent": "P" }"#,
                #"{ "in": "C", "do": "set", "ref": "p", "values": { "age": 31 } }"#,
                #"{ "in": "C", "do": "save" }"#,
                #"{ "in": "X", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "C", "do": "insert", "ref": "q", "entity": "Person", "values": { "name": "Bo", "age": 5 } }"#,
                #"{ "in": "C", "do": "save" }"#,
                #"{ "in": "P", "do": "save" }"#,
                #"{ "in": "Y", "do": "fetch", "ref": "q" }"#,
                #"{ "in": "C", "do": "pin", "to": "current" }"#,
            ], expect: """
                { "error": { "saves": ["ok", "ok", "ok"],
                             "store": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "q": { "name": "Bo", "age": 5 } },
                             "contexts": { "P": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "q": { "name": "Bo", "age": 5 } },
                                           "C": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "q": { "name": "Bo", "age": 5 } },
                                           "X": { "p": { "name": "Ann", "age": 30, "city": "Oslo" }, "q": null },
                                           "Y": { "q": { "name": "Bo", "age": 5 } } } } }
                """)
            let run = try Self.runScenario(scenario, "--json")
            #expect(run.status == 0, "\(run)")
            let results = try #require(try Self.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])
            for result in results {
                let steps = try #require(result["steps"] as? [[String: Any]])
                // A child cannot be pinned: the last step fails, and says why.
                let pin = try #require(steps.last)
                #expect((pin["index"] as? NSNumber)?.intValue == 9)
                #expect(pin["outcome"] as? String == "error")
                #expect((pin["message"] as? String ?? "").contains("child context"), "\(pin)")
                // Child saves use no policy: every policy gives the same store.
                let store = try #require(result["store"] as? [String: [String: Any]])
                #expect((store["p"]?["age"] as? NSNumber)?.intValue == 31)
            }
        }

        @Test func mergingADidSaveMovesTheAncestorSoTheNextSaveDoesNotConflict() throws {
            let scenario = Self.personScenario(steps: [
                #"{ "in": "A", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "A", "do": "merge", "from": "A" }"#,
                #"{ "in": "B", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "set", "ref": "p", "values": { "age": 31 } }"#,
                #"{ "in": "B", "do": "save" }"#,
                #"{ "in": "A", "do": "set", "ref": "p", "values": { "city": "Rome" } }"#,
                #"{ "in": "A", "do": "merge", "from": "B" }"#,
                #"{ "in": "A", "do": "save" }"#,
            ], expect: Self.everyPolicy(#"""
                { "saves": ["ok", "ok"], "store": { "p": { "name": "Ann", "age": 31, "city": "Rome" } },
                  "contexts": { "A": { "p": { "name": "Ann", "age": 31, "city": "Rome" } } } }
                """#))
            let run = try Self.runScenario(scenario, "--json")
            #expect(run.status == 0, "\(run)")
            let results = try #require(try Self.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])
            for result in results {
                let first = try #require((result["steps"] as? [[String: Any]])?.first)
                #expect((first["index"] as? NSNumber)?.intValue == 1)
                #expect((first["message"] as? String ?? "").contains("no successful save to merge"), "\(first)")
            }
            // Without the merge, the error policy conflicts: the merge is what made the difference.
            let unmerged = Self.personScenario(steps: [
                #"{ "in": "A", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "set", "ref": "p", "values": { "age": 31 } }"#,
                #"{ "in": "B", "do": "save" }"#,
                #"{ "in": "A", "do": "set", "ref": "p", "values": { "city": "Rome" } }"#,
                #"{ "in": "A", "do": "save" }"#,
            ], expect: #"{ "error": { "saves": ["ok", "conflict"] } }"#)
            #expect(try Self.runScenario(unmerged).status == 0)
        }

        @Test func automaticMergesFollowOtherRootContextsSaves() throws {
            let scenario = Self.personScenario(steps: [
                #"{ "in": "A", "do": "autoMerge", "on": true }"#,
                #"{ "in": "A", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "set", "ref": "p", "values": { "age": 31 } }"#,
                #"{ "in": "B", "do": "save" }"#,
                #"{ "in": "A", "do": "set", "ref": "p", "values": { "city": "Rome" } }"#,
                #"{ "in": "A", "do": "save" }"#,
            ], expect: Self.everyPolicy(#"""
                { "saves": ["ok", "ok"], "store": { "p": { "name": "Ann", "age": 31, "city": "Rome" } } }
                """#))
            let run = try Self.runScenario(scenario)
            #expect(run.status == 0, "\(run)")
            #expect(run.lines.contains { $0.hasPrefix("step 6: A save") && !$0.contains("conflict") }, "\(run)")
        }

        @Test func pinnedContextsReadTheirGenerationAndAlignedOnesShareIt() throws {
            let scenario = Self.personScenario(steps: [
                #"{ "in": "A", "do": "pin", "to": "current" }"#,
                #"{ "in": "A", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "set", "ref": "p", "values": { "age": 31 } }"#,
                #"{ "in": "B", "do": "save" }"#,
                #"{ "in": "C", "do": "pin", "to": "A" }"#,
                #"{ "in": "C", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "D", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "E", "do": "pin", "to": "D" }"#,
                #"{ "in": "A", "do": "pin", "to": "none" }"#,
            ], expect: Self.everyPolicy(#"""
                { "saves": ["ok"], "store": { "p": { "name": "Ann", "age": 31, "city": "Oslo" } },
                  "contexts": { "A": { "p": { "name": "Ann", "age": 30, "city": "Oslo" } },
                                "C": { "p": { "name": "Ann", "age": 30, "city": "Oslo" } },
                                "D": { "p": { "name": "Ann", "age": 31, "city": "Oslo" } } } }
                """#))
            let run = try Self.runScenario(scenario, "--json", "--policy", "error")
            #expect(run.status == 0, "\(run)")
            let result = try #require((try Self.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])?.first)
            let steps = try #require(result["steps"] as? [[String: Any]])
            // D is not pinned, so E has no token to align with; everything else succeeds.
            #expect(steps.compactMap { ($0["index"] as? NSNumber)?.intValue } == [4, 8])
            let message = try #require(steps.last?["message"] as? String)
            #expect(message.contains("context D is not pinned"), "\(steps)")
        }

        @Test func aStoreThatCannotBeCreatedExitsTwo() throws {
            let run = try Self.cairnWithEnvironment(
                ["scenario", try Self.scenarioPath("delete-both.json")],
                environment: ["TMPDIR": "/nonexistent/cairn-scenario-tests"])
            #expect(run.status == 2, "\(run)")
            #expect(run.errorOutput.contains("store error"), "\(run)")
        }

        // MARK: - Steps beyond the canonical ones

        @Test func insertedObjectsAreSharedOnceSaved() throws {
            let scenario = Self.personScenario(store: "{}", steps: [
                #"{ "in": "A", "do": "insert", "ref": "q", "entity": "Person", "values": { "name": "Bo", "age": 5 } }"#,
                #"{ "in": "B", "do": "fetch", "ref": "q" }"#,
                #"{ "in": "A", "do": "save" }"#,
                #"{ "in": "B", "do": "fetch", "ref": "q" }"#,
                #"{ "in": "B", "do": "set", "ref": "q", "values": { "age": 6 } }"#,
                #"{ "in": "B", "do": "save" }"#,
                #"{ "in": "A", "do": "set", "ref": "q", "values": { "city": "Rome" } }"#,
                #"{ "in": "A", "do": "save" }"#,
            ], expect: """
                {
                  "error": { "saves": ["ok", "ok", "conflict"], "store": { "q": { "name": "Bo", "age": 6, "city": null } },
                             "contexts": { "A": { "q": { "name": "Bo", "age": 5, "city": "Rome" } },
                                           "B": { "q": { "name": "Bo", "age": 6 } } } },
                  "storeTrump": { "saves": ["ok", "ok", "ok"], "store": { "q": { "name": "Bo", "age": 6, "city": "Rome" } } },
                  "overwrite": { "saves": ["ok", "ok", "ok"], "store": { "q": { "name": "Bo", "age": 5, "city": "Rome" } } }
                }
                """)
            let run = try Self.runScenario(scenario, "--json")
            #expect(run.status == 0, "\(run)")
            let results = try #require(try Self.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])
            for result in results {
                let steps = try #require(result["steps"] as? [[String: Any]])
                // The fetch before the save is listed: B cannot reach an unsaved insert of A.
                let failedFetch = try #require(steps.first, "\(result)")
                #expect((failedFetch["index"] as? NSNumber)?.intValue == 1)
                #expect(failedFetch["outcome"] as? String == "error")
                #expect((failedFetch["message"] as? String ?? "").contains("not saved yet"), "\(failedFetch)")
                #expect(steps.dropFirst().map { ($0["index"] as? NSNumber)?.intValue } == [2, 5, 7])
            }
        }

        @Test func detectConflictsRefreshRollbackAndResetFollowTheContract() throws {
            // A marks p (unchanged) and changes r; B changes p first. The contract's last deletion
            // row: error fails, storeTrump/objectTrump/rollback take the store's p, overwrite
            // writes A's (the ancestor's) values back. A then refreshes p with merge, saves again,
            // rolls back a change to r; B resets.
            let scenario = Self.personScenario(
                store: #"""
                    { "p": { "entity": "Person", "values": { "name": "Ann", "age": 30, "city": "Oslo" } },
                      "r": { "entity": "Person", "values": { "name": "Rob", "age": 50 } } }
                    """#,
                steps: [
                    #"{ "in": "A", "do": "fetch", "ref": "p" }"#,
                    #"{ "in": "A", "do": "fetch", "ref": "r" }"#,
                    #"{ "in": "B", "do": "fetch", "ref": "p" }"#,
                    #"{ "in": "B", "do": "set", "ref": "p", "values": { "age": 31 } }"#,
                    #"{ "in": "B", "do": "save" }"#,
                    #"{ "in": "A", "do": "detectConflicts", "ref": "p" }"#,
                    #"{ "in": "A", "do": "set", "ref": "r", "values": { "age": 51 } }"#,
                    #"{ "in": "A", "do": "save" }"#,
                    #"{ "in": "A", "do": "refresh", "ref": "p", "merge": true }"#,
                    #"{ "in": "A", "do": "save" }"#,
                    #"{ "in": "A", "do": "set", "ref": "r", "values": { "city": "Bergen" } }"#,
                    #"{ "in": "A", "do": "rollback" }"#,
                    #"{ "in": "B", "do": "reset" }"#,
                ],
                expect: """
                    {
                      "error": { "saves": ["ok", "conflict", "ok"],
                                 "store": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "r": { "name": "Rob", "age": 51 } },
                                 "contexts": { "A": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "r": { "name": "Rob", "age": 51 } },
                                               "B": { "p": null } } },
                      "storeTrump": { "saves": ["ok", "ok", "ok"],
                                      "store": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "r": { "name": "Rob", "age": 51 } } },
                      "objectTrump": { "saves": ["ok", "ok", "ok"],
                                       "store": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "r": { "name": "Rob", "age": 51 } } },
                      "overwrite": { "saves": ["ok", "ok", "ok"],
                                     "store": { "p": { "name": "Ann", "age": 30, "city": "Oslo" }, "r": { "name": "Rob", "age": 51 } } },
                      "rollback": { "saves": ["ok", "ok", "ok"],
                                    "store": { "p": { "name": "Ann", "age": 31, "city": "Oslo" }, "r": { "name": "Rob", "age": 51 } } }
                    }
                    """)
            let run = try Self.runScenario(scenario)
            #expect(run.status == 0, "\(run)")
            #expect(run.lines.contains { $0.hasPrefix("p.age") && $0.contains("30*") }, "overwrite stands out: \(run)")
            let json = try Self.runScenario(scenario, "--json", "--policy", "error")
            let result = try #require((try Self.jsonObject(Data(json.output.utf8))["results"] as? [[String: Any]])?.first)
            let conflict = try #require(((result["steps"] as? [[String: Any]])?[1]["conflicts"] as? [[String: Any]])?.first)
            #expect(conflict["ref"] as? String == "p")
            #expect(conflict["kind"] as? String == "update/update")
        }

        @Test func aStepPolicyOverridesTheRunsPolicyForItsContext() throws {
            // Same as update-update-same-property, but A switches to objectTrump before saving:
            // every run then ends with A's age.
            let scenario = Self.personScenario(steps: [
                #"{ "in": "A", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "set", "ref": "p", "values": { "age": 31 } }"#,
                #"{ "in": "B", "do": "save" }"#,
                #"{ "in": "A", "do": "set", "ref": "p", "values": { "age": 40 } }"#,
                #"{ "in": "A", "do": "save", "policy": "objectTrump" }"#,
            ])
            let run = try Self.runScenario(scenario, "--json")
            #expect(run.status == 0, "\(run)")
            let results = try #require(try Self.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])
            #expect(results.count == 5)
            for result in results {
                let store = try #require(result["store"] as? [String: [String: Any]])
                #expect((store["p"]?["age"] as? NSNumber)?.intValue == 40, "\(result["policy"] ?? "")")
                let outcomes = (result["steps"] as? [[String: Any]])?.map { $0["outcome"] as? String }
                #expect(outcomes == ["ok", "ok"])
            }
        }

        @Test func everyAttributeTypeRoundTripsThroughJSON() throws {
            let scenario = #"""
                {
                  "name": "types",
                  "entities": { "Thing": { "label": "string", "score": "double", "active": "bool", "blob": "bytes?", "at": "date" } },
                  "steps": [
                    { "in": "A", "do": "insert", "ref": "t", "entity": "Thing",
                      "values": { "label": "x", "score": 1, "active": true, "at": "2024-05-01T10:00:00Z" } },
                    { "in": "A", "do": "save" },
                    { "in": "B", "do": "set", "ref": "t", "values": { "score": 2.5, "blob": "AQID", "at": "2024-05-01T10:00:00.250Z" } },
                    { "in": "B", "do": "save" }
                  ],
                  "expect": { "error": { "saves": ["ok", "ok"],
                    "store": { "t": { "label": "x", "score": 2.5, "active": true, "blob": "AQID", "at": "2024-05-01T12:00:00.250+02:00" } } } }
                }
                """#
            let run = try Self.runScenario(scenario, "--json", "--policy", "error")
            #expect(run.status == 0, "\(run)")
            let result = try #require((try Self.jsonObject(Data(run.output.utf8))["results"] as? [[String: Any]])?.first)
            let thing = try #require((result["store"] as? [String: [String: Any]])?["t"])
            #expect(thing["label"] as? String == "x")
            #expect((thing["score"] as? NSNumber)?.doubleValue == 2.5)
            #expect(thing["active"] as? Bool == true)
            #expect(thing["blob"] as? String == "AQID")
            #expect(thing["at"] as? String == "2024-05-01T10:00:00.250Z")
            #expect(run.output.contains("\"active\": true"), "a Bool prints as true, not 1: \(run.output)")
        }

        // MARK: - cairn policies

        @Test func policiesPrintsEveryPolicyAndEveryCanonicalScenario() throws {
            let run = try cairn("policies")
            #expect(run.status == 0, "\(run)")
            let header = try #require(run.lines.first { $0.hasPrefix("scenario") }, "\(run)")
            #expect(header.split(separator: " ").map(String.init) == ["scenario", "row"] + Self.policies)
            for file in Self.canonicalFiles {
                #expect(run.output.contains(String(file.dropLast(".json".count))), "\(file) missing: \(run)")
            }
            #expect(run.output.contains("conflict*"), "the error policy's conflict stands out: \(run)")
        }

        @Test func policiesMarkdownIsWhatTheRunnerComputesForEachScenario() throws {
            let markdown = try cairn("policies", "--markdown")
            #expect(markdown.status == 0, "\(markdown)")
            #expect(markdown.lines.first == "| scenario | row | " + Self.policies.joined(separator: " | ") + " |")
            let rows = Set(markdown.lines.map { $0.replacingOccurrences(of: "**", with: "") })
            for file in Self.canonicalFiles {
                for row in try Self.expectedPolicyRows(for: try Self.scenarioPath(file)) {
                    #expect(rows.contains(row), "\(file): no row \(row) in\n\(markdown.output)")
                }
            }
            // The built-in scenarios are the test data files: the same rows, whatever the order.
            let fromFiles = try cairn("policies", "--markdown", "--scenarios", try Self.scenarioDirectory())
            #expect(fromFiles.status == 0, "\(fromFiles)")
            #expect(fromFiles.lines.sorted() == markdown.lines.sorted())
        }

        @Test func theDocsShowWhatPoliciesPrintsToday() throws {
            let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Docs/MergePolicies.md")
            let text = try String(contentsOf: docs, encoding: .utf8)
            let markdown = try cairn("policies", "--markdown")
            #expect(markdown.status == 0, "\(markdown)")
            #expect(text.contains(markdown.output),
                    "Docs/MergePolicies.md's generated comparison is stale; paste in the output of cairn policies --markdown")
        }

        @Test func policiesRunsTheScenariosItIsGiven() throws {
            let directory = try TemporaryDirectory(purpose: "policies-dir")
            defer { directory.remove() }
            try FileManager.default.copyItem(
                atPath: try Self.scenarioPath("update-update-same-property.json"),
                toPath: directory.path + "/update-update-same-property.json")
            // A scenario of our own, where both contexts change city, adds its rows to the table.
            let own = Self.personScenario(name: "ours-only-city", steps: [
                #"{ "in": "A", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "fetch", "ref": "p" }"#,
                #"{ "in": "B", "do": "set", "ref": "p", "values": { "city": "Turku" } }"#,
                #"{ "in": "B", "do": "save" }"#,
                #"{ "in": "A", "do": "set", "ref": "p", "values": { "city": "Rome" } }"#,
                #"{ "in": "A", "do": "save" }"#,
            ])
            try Data(own.utf8).write(to: URL(fileURLWithPath: directory.path + "/ours.json"))
            let run = try cairn("policies", "--markdown", "--scenarios", directory.path)
            #expect(run.status == 0, "\(run)")
            let rows = run.lines.map { $0.replacingOccurrences(of: "**", with: "") }
            #expect(rows.contains("| ours-only-city | A's save (step 5) | conflict | ok | ok | ok | ok |"), "\(run)")
            #expect(rows.contains(#"|  | store: p | {name: "Ann", age: 30, city: "Turku"} | {name: "Ann", age: 30, city: "Turku"} | {name: "Ann", age: 30, city: "Rome"} | {name: "Ann", age: 30, city: "Rome"} | {name: "Ann", age: 30, city: "Turku"} |"#), "\(run)")
            #expect(run.output.contains("update-update-same-property"))
            #expect(!run.output.contains("delete-both"), "only the directory's scenarios run: \(run)")
            for row in try Self.expectedPolicyRows(for: directory.path + "/ours.json") {
                #expect(rows.contains(row), "no row \(row)")
            }
        }

        @Test func policiesFailsOnAScenarioThatDoesNotMeetItsExpectations() throws {
            let directory = try TemporaryDirectory(purpose: "policies-wrong")
            defer { directory.remove() }
            var scenario = try Self.jsonObject(Data(contentsOf: URL(fileURLWithPath: try Self.scenarioPath("delete-both.json"))))
            var expect = try #require(scenario["expect"] as? [String: [String: Any]])
            expect["rollback"]!["saves"] = ["ok", "conflict"]
            scenario["expect"] = expect
            _ = try Self.write(scenario, to: directory.path + "/delete-both.json")
            let run = try cairn("policies", "--scenarios", directory.path)
            #expect(run.status == 3, "\(run)")
            #expect(run.errorOutput.contains("delete-both.json: rollback: saves[1] (step 5: A save): expected conflict, got ok"), "\(run)")
        }

        // MARK: - Help and demo

        @Test func helpDescribesBothCommands() throws {
            let global = try cairn("--help")
            for name in ["scenario", "policies"] {
                #expect(global.lines.contains { $0.hasPrefix("  \(name) ") }, "\(global)")
                let help = try cairn(name, "--help")
                #expect(help.status == 0, "\(help)")
                #expect(help.output.hasPrefix("Usage: cairn \(name)"), "\(help)")
            }
            #expect(try cairn("scenario").status == 1)
            #expect(try cairn("policies", "extra").status == 1)
        }

        @Test func demoShowsOneConflictUnderEveryPolicy() throws {
            let directory = try TemporaryDirectory(purpose: "demo-merge")
            defer { directory.remove() }
            let run = try cairn("demo", "--dir", directory.path + "/store")
            #expect(run.status == 0, "\(run)")
            #expect(run.output.contains("6. Merge policies"))
            #expect(run.output.contains("Every policy gave the outcome Docs/MergePolicies.md states."), "\(run)")
            #expect(!run.output.contains("ERROR"))
            let header = try #require(run.lines.first { line in Self.policies.allSatisfy { line.contains($0) } })
            #expect(header.split(separator: " ").map(String.init) == Self.policies)
            #expect(run.lines.contains { $0.hasPrefix("step 5: A save") && $0.contains("conflict*") }, "\(run)")
            #expect(run.lines.contains { $0.hasPrefix("p.name") && $0.contains("\"Ann\"*") }, "overwrite undoes B's name: \(run)")
        }

        // MARK: - Helpers

        /// `cairn scenario FILE` (a file of Scenarios/) exits 0, meets every policy's `expect`, and prints no error.
        static func expectMeetsExpectations(_ file: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let run = try cairn("scenario", try scenarioPath(file))
            #expect(run.status == 0, "\(run)", sourceLocation: sourceLocation)
            #expect(run.output.contains("Expectations: met for \(policies.joined(separator: ", "))"), "\(run)", sourceLocation: sourceLocation)
            #expect(run.errorOutput.isEmpty, "\(run)", sourceLocation: sourceLocation)
        }

        static func scenarioDirectory() throws -> String {
            try #require(Bundle.module.url(forResource: "Scenarios", withExtension: nil), "Scenarios resource missing").path
        }

        static func scenarioPath(_ file: String) throws -> String {
            let path = try scenarioDirectory() + "/" + file
            try #require(FileManager.default.fileExists(atPath: path), "\(path) missing")
            return path
        }

        /// Whether two JSON objects hold the same values: compared as canonical JSON text, so a
        /// parsed NSNumber and a Swift Int literal compare alike.
        static func same(_ left: [String: Any], _ right: [String: Any]) -> Bool {
            func canonical(_ object: [String: Any]) -> Data? {
                try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            }
            guard let left = canonical(left) else { return false }
            return left == canonical(right)
        }

        static func jsonObject(_ data: Data) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "not a JSON object")
        }

        static func write(_ object: [String: Any], to path: String) throws -> String {
            try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))
            return path
        }

        /// A Person scenario with `p` = Ann, 30, Oslo unless `store` says otherwise.
        static func personScenario(
            name: String = "test", store: String? = nil, steps: [String], expect: String? = nil
        ) -> String {
            let store = store ?? #"{ "p": { "entity": "Person", "values": { "name": "Ann", "age": 30, "city": "Oslo" } } }"#
            return """
                {
                  "name": "\(name)",
                  "entities": { "Person": { "name": "string", "age": "int", "city": "string?" } },
                  "store": \(store),
                  "steps": [
                    \(steps.joined(separator: ",\n        "))
                  ]\(expect.map { ",\n  \"expect\": \($0)" } ?? "")
                }
                """
        }

        /// An `expect` object giving every built-in policy the same expectation.
        static func everyPolicy(_ expectation: String) -> String {
            "{ " + policies.map { "\"\($0)\": \(expectation)" }.joined(separator: ",\n") + " }"
        }

        /// Writes `text` to a scratch file and runs `cairn scenario` on it.
        static func runScenario(_ text: String, _ options: String...) throws -> ToolRun {
            let directory = try TemporaryDirectory(purpose: "scenario")
            defer { directory.remove() }
            let path = directory.path + "/scenario.json"
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return try cairn(["scenario", path] + options)
        }

        /// The Markdown rows `cairn policies` should print for the scenario at `path`, worked
        /// out from `cairn scenario --json` (without the bold marks): the outcome of the first
        /// save that met a conflict (or the last save), then the store state of each ref.
        static func expectedPolicyRows(for path: String) throws -> [String] {
            let file = try jsonObject(Data(contentsOf: URL(fileURLWithPath: path)))
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let run = try cairn("scenario", path, "--json")
            let document = try jsonObject(Data(run.output.utf8))
            let results = try #require(document["results"] as? [[String: Any]])
            let steps = try #require(file["steps"] as? [[String: Any]])
            let saves = steps.indices.filter { steps[$0]["do"] as? String == "save" }
            func record(_ result: [String: Any], _ index: Int) -> [String: Any]? {
                (result["steps"] as? [[String: Any]])?.first { ($0["index"] as? NSNumber)?.intValue == index }
            }
            let conflicting = saves.first { index in
                results.contains { result in
                    let step = record(result, index)
                    return step?["outcome"] as? String == "conflict" || !((step?["conflicts"] as? [Any]) ?? []).isEmpty
                }
            } ?? saves.last!
            var rows = ["| \(file["name"] as! String) | \(steps[conflicting]["in"] as! String)'s save (step \(conflicting)) | "
                + results.map { record($0, conflicting)?["outcome"] as? String ?? "?" }.joined(separator: " | ") + " |"]
            // Attribute order as written in the file (JSONSerialization loses it).
            let entitiesText = text[try #require(text.range(of: "\"entities\""), "no entities in \(path)").upperBound...]
            let entities = try #require(file["entities"] as? [String: [String: Any]])
            let store = try #require(file["store"] as? [String: [String: Any]])
            for (ref, object) in store.sorted(by: { $0.key < $1.key }) {
                let attributes = try #require(entities[object["entity"] as! String]).keys
                    .sorted { entitiesText.range(of: "\"\($0)\":")!.lowerBound < entitiesText.range(of: "\"\($1)\":")!.lowerBound }
                let cells = results.map { result -> String in
                    guard let values = (result["store"] as? [String: Any])?[ref] as? [String: Any] else { return "deleted" }
                    return "{" + attributes.map { name in "\(name): \(render(values[name]))" }.joined(separator: ", ") + "}"
                }
                rows.append("|  | store: \(ref) | " + cells.joined(separator: " | ") + " |")
            }
            return rows
        }

        static func render(_ value: Any?) -> String {
            switch value {
            case let text as String: "\"\(text)\""
            case let number as NSNumber: "\(number)"
            default: "null"
            }
        }

        /// Runs `cairn` with extra environment variables.
        static func cairnWithEnvironment(_ arguments: [String], environment: [String: String]) throws -> ToolRun {
            let scratch = try TemporaryDirectory(purpose: "env-run")
            defer { scratch.remove() }
            let outputPath = scratch.path + "/stdout", errorPath = scratch.path + "/stderr"
            _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
            _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
            let outputHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            let errorHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
            defer {
                try? outputHandle.close()
                try? errorHandle.close()
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try CairnBinary.require())
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = outputHandle
            process.standardError = errorHandle
            try process.run()
            process.waitUntilExit()
            return ToolRun(arguments: arguments, status: process.terminationStatus,
                           outputBytes: Array(try Data(contentsOf: URL(fileURLWithPath: outputPath))),
                           errorOutput: try String(contentsOfFile: errorPath, encoding: .utf8))
        }
    }
}
