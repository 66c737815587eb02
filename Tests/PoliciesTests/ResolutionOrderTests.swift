import Policies
import Testing

@Suite("One resolution per conflict, in order")
struct ResolutionOrderTests {
    static let batch = [
        Fixture.differentProperties("cairn://Person/p1"),
        Fixture.updateDelete("cairn://Person/p2"),
        Fixture.deleteUpdate("cairn://Person/p3"),
        Fixture.markedUnchanged("cairn://Person/p4"),
        Fixture.sameProperty("cairn://Person/p5"),
    ]

    @Test(
        "a mixed batch gets its resolutions in the same order",
        arguments: [
            ("storeTrump", [
                Resolution.write(Fixture.person(age: 31, city: "Rome")), .takeStore, .takeStore, .takeStore,
                .takeStore,
            ]),
            ("objectTrump", [
                .write(Fixture.person(age: 31, city: "Rome")), .write(Fixture.person(age: 40)), .delete,
                .takeStore, .write(Fixture.person(age: 40)),
            ]),
            ("overwrite", [
                .write(Fixture.person(age: 30, city: "Rome")), .write(Fixture.person(age: 40)), .delete,
                .write(Fixture.ancestor), .write(Fixture.person(age: 40)),
            ]),
            ("rollback", [.takeStore, .takeStore, .takeStore, .takeStore, .takeStore]),
        ]
    )
    func mixedBatch(policyName: String, expected: [Resolution]) throws {
        let policy = try #require(builtInPolicies[policyName])
        let resolutions = try policy.resolutions(for: Self.batch)
        #expect(resolutions == expected)
        // Reversing the input reverses the output: answers follow the conflicts, not the kinds.
        #expect(try policy.resolve(Self.batch.reversed()) == expected.reversed())
    }

    @Test("a policy that drops a resolution is caught by resolutions(for:)")
    func countMismatch() throws {
        struct DropsOne: MergePolicy {
            var name: String { "dropsOne" }
            func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
                Array(conflicts.dropFirst().map { _ in Resolution.takeStore })
            }
        }
        let error = try #require(throws: ResolutionCountMismatch.self) {
            try DropsOne().resolutions(for: Self.batch)
        }
        #expect(error == ResolutionCountMismatch(policyName: "dropsOne", conflictCount: 5, resolutionCount: 4))
        #expect(error.description.contains("\"dropsOne\" returned 4 resolution(s) for 5 conflict(s)"))
    }
}
