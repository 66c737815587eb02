import Policies
import Testing

@Suite("MergeError")
struct MergeErrorTests {
    @Test("the error policy's error lists every conflict of the call, with all three states")
    func listsEveryConflict() throws {
        let conflicts = [
            Fixture.sameProperty("cairn://Person/p1"),
            Fixture.updateDelete("cairn://Person/p2"),
            Fixture.deleteUpdate("cairn://Person/p3"),
        ]
        let error = try #require(throws: MergeError.self) { try ErrorMergePolicy().resolve(conflicts) }
        #expect(error.conflicts == conflicts)
        #expect(
            error.description == """
                merge conflict on 3 objects:
                - cairn://Person/p1 (update/update): ancestor v1 {age: 30, city: "Oslo", name: "Ann"}; \
                ours {age: 40, city: "Oslo", name: "Ann"}; theirs v2 {age: 31, city: "Oslo", name: "Ann"}
                - cairn://Person/p2 (update/delete): ancestor v1 {age: 30, city: "Oslo", name: "Ann"}; \
                ours {age: 40, city: "Oslo", name: "Ann"}; theirs deleted (version 0)
                - cairn://Person/p3 (delete/update): ancestor v1 {age: 30, city: "Oslo", name: "Ann"}; \
                ours deleted; theirs v2 {age: 31, city: "Oslo", name: "Ann"}
                """)
    }

    @Test("one conflict reads in the singular")
    func singular() {
        let error = MergeError(conflicts: [Fixture.markedUnchanged()])
        #expect(error.description.hasPrefix("merge conflict on 1 object:\n- cairn://Person/p1 (update/update)"))
    }

    @Test("no conflicts: the error policy has nothing to fail")
    func emptyBatch() throws {
        #expect(try ErrorMergePolicy().resolve([]) == [])
    }
}
