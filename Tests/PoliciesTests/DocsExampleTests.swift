import Policies
import Testing

/// The worked example of Docs/MergePolicies.md, so the page cannot drift from the code.
@Suite("Docs/MergePolicies.md example")
struct DocsExampleTests {
    /// B renamed Ann to Anna and set age 31 (saved first); A set age 40 and city Rome.
    static let conflict = MergeConflict(
        objectID: "cairn://Person/p", kind: .updateUpdate,
        ancestorValues: Fixture.person(), ancestorVersion: 1,
        ourValues: Fixture.person(age: 40, city: "Rome"),
        storeValues: Fixture.person(name: "Anna", age: 31), storeVersion: 2)

    @Test(
        "each policy row of the page's table",
        arguments: [
            ("storeTrump", Resolution.write(Fixture.person(name: "Anna", age: 31, city: "Rome"))),
            ("objectTrump", .write(Fixture.person(name: "Anna", age: 40, city: "Rome"))),
            ("overwrite", .write(Fixture.person(name: "Ann", age: 40, city: "Rome"))),
            ("rollback", .takeStore),
        ]
    )
    func row(policyName: String, expected: Resolution) throws {
        let policy = try #require(builtInPolicies[policyName])
        #expect(try policy.resolve([Self.conflict]) == [expected])
    }

    @Test("the error text shown on the page")
    func errorText() throws {
        let error = try #require(throws: MergeError.self) { try ErrorMergePolicy().resolve([Self.conflict]) }
        #expect(
            error.description == """
                merge conflict on 1 object:
                - cairn://Person/p (update/update): ancestor v1 {age: 30, city: "Oslo", name: "Ann"}; \
                ours {age: 40, city: "Rome", name: "Ann"}; theirs v2 {age: 31, city: "Oslo", name: "Anna"}
                """)
    }
}
