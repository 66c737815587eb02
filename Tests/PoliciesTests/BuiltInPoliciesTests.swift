import Policies
import Testing

@Suite("BuiltInPolicies")
struct BuiltInPoliciesTests {
    @Test("all five, in the contract's column order")
    func all() {
        #expect(BuiltInPolicies.names == ["error", "storeTrump", "objectTrump", "overwrite", "rollback"])
        #expect(BuiltInPolicies.all.count == 5)
    }

    @Test(
        "each name gives its policy type",
        arguments: [
            ("error", ObjectIdentifier(ErrorMergePolicy.self)),
            ("storeTrump", ObjectIdentifier(MergeByPropertyStoreTrumpPolicy.self)),
            ("objectTrump", ObjectIdentifier(MergeByPropertyObjectTrumpPolicy.self)),
            ("overwrite", ObjectIdentifier(OverwriteMergePolicy.self)),
            ("rollback", ObjectIdentifier(RollbackMergePolicy.self)),
        ]
    )
    func named(name: String, type: ObjectIdentifier) throws {
        let policy = try #require(BuiltInPolicies.named(name))
        #expect(policy.name == name)
        #expect(ObjectIdentifier(Swift.type(of: policy)) == type)
    }

    @Test("Core Data's Swift names give the same policies")
    func coreDataNames() {
        func name(_ policy: any MergePolicy) -> String { policy.name }
        #expect(name(.mergeByPropertyObjectTrump) == "objectTrump")
        #expect(name(.mergeByPropertyStoreTrump) == "storeTrump")
        #expect(name(.overwrite) == "overwrite")
        #expect(name(.rollback) == "rollback")
        #expect(name(.error) == "error")
    }

    @Test("unknown names, wrong case and parameterised examples give nil", arguments: [
        "", "Error", "store-trump", "mergeByPropertyStoreTrump", "lastWriterWins", "addingDeltas",
    ])
    func unknown(name: String) {
        #expect(BuiltInPolicies.named(name) == nil)
    }

    @Test("the example names are the shipped examples' names, distinct from the built-ins")
    func exampleNames() {
        let examples: [any MergePolicy] = [
            LastWriterWinsPolicy(timestampProperty: "modifiedAt"),
            PropertyResolverPolicy(resolvers: [:], otherwise: .error),
            PropertyResolverPolicy.addingDeltas(for: ["likes"], otherwise: .error),
        ]
        #expect(BuiltInPolicies.exampleNames == examples.map(\.name))
        #expect(Set(BuiltInPolicies.exampleNames).isDisjoint(with: BuiltInPolicies.names))
    }

    @Test("static shortcuts read as English in a generic context")
    func shortcuts() {
        func name(of policy: some MergePolicy) -> String { policy.name }
        #expect(name(of: .error) == "error")
        #expect(name(of: .storeTrump) == "storeTrump")
        #expect(name(of: .objectTrump) == "objectTrump")
        #expect(name(of: .overwrite) == "overwrite")
        #expect(name(of: .rollback) == "rollback")
        #expect(name(of: .lastWriterWins(timestampProperty: "modifiedAt")) == "lastWriterWins")
        #expect(name(of: .addingDeltas(for: ["likes"], otherwise: .storeTrump)) == "addingDeltas")
    }
}
