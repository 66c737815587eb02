import Policies
import Testing

@Suite("PropertyResolverPolicy")
struct PropertyResolverPolicyTests {
    static let deltas = PropertyResolverPolicy.addingDeltas(for: ["counter"], otherwise: .objectTrump)

    static func conflict(
        ancestor: PropertyValues, ours: PropertyValues, theirs: PropertyValues, id: String = "cairn://Counter/c1"
    ) -> MergeConflict {
        MergeConflict(
            objectID: id, kind: .updateUpdate, ancestorValues: ancestor, ancestorVersion: 4,
            ourValues: ours, storeValues: theirs, storeVersion: 5)
    }

    @Test("both sides' increments survive: 10 → ours 13, theirs 15 gives 18")
    func intDeltas() throws {
        let conflict = Self.conflict(
            ancestor: ["counter": .int(10)], ours: ["counter": .int(13)], theirs: ["counter": .int(15)])
        #expect(try Self.deltas.resolve([conflict]) == [.write(["counter": .int(18)])])
    }

    @Test("doubles add too, including negative deltas")
    func doubleDeltas() throws {
        let conflict = Self.conflict(
            ancestor: ["balance": .double(10.5)], ours: ["balance": .double(8.0)], theirs: ["balance": .double(12.5)])
        let policy = PropertyResolverPolicy.addingDeltas(for: ["balance"], otherwise: .error)
        #expect(try policy.resolve([conflict]) == [.write(["balance": .double(10.0)])])
    }

    @Test("the resolver's properties merge on top of the fallback's answer for the rest")
    func fallbackForOtherProperties() throws {
        let conflict = Self.conflict(
            ancestor: ["counter": .int(10), "city": .string("Oslo"), "name": .string("Ann")],
            ours: ["counter": .int(13), "city": .string("Rome"), "name": .string("Ann")],
            theirs: ["counter": .int(15), "city": .string("Oslo"), "name": .string("Bea")])
        // objectTrump keeps our city and their name; the counter adds up.
        #expect(try Self.deltas.resolve([conflict])
            == [.write(["counter": .int(18), "city": .string("Rome"), "name": .string("Bea")])])
        // With rollback as the fallback the local city is dropped, but the counter still adds up.
        let rollbackDeltas = PropertyResolverPolicy.addingDeltas(for: ["counter"], otherwise: .rollback)
        #expect(try rollbackDeltas.resolve([conflict])
            == [.write(["counter": .int(18), "city": .string("Oslo"), "name": .string("Bea")])])
    }

    @Test("only the store changed the counter: nothing to add, take the store")
    func storeOnlyChange() throws {
        let conflict = Self.conflict(
            ancestor: ["counter": .int(10)], ours: ["counter": .int(10)], theirs: ["counter": .int(15)])
        #expect(try Self.deltas.resolve([conflict]) == [.takeStore])
    }

    @Test("the fallback is asked only about conflicts the resolvers cannot settle")
    func errorFallbackSeesOnlyTheRest() throws {
        let settled = Self.conflict(
            ancestor: ["counter": .int(1), "city": .string("Oslo")],
            ours: ["counter": .int(2), "city": .string("Oslo")],
            theirs: ["counter": .int(3), "city": .string("Oslo")], id: "cairn://Counter/settled")
        let unsettled = Self.conflict(
            ancestor: ["counter": .int(1), "city": .string("Oslo")],
            ours: ["counter": .int(2), "city": .string("Rome")],
            theirs: ["counter": .int(3), "city": .string("Oslo")], id: "cairn://Counter/unsettled")
        let policy = PropertyResolverPolicy.addingDeltas(for: ["counter"], otherwise: .error)
        let error = try #require(throws: MergeError.self) { try policy.resolve([settled, unsettled]) }
        #expect(error.conflicts == [unsettled])
        #expect(try policy.resolve([settled]) == [.write(["counter": .int(4), "city": .string("Oslo")])])
    }

    @Test("deletion conflicts go to the fallback unchanged")
    func deletionsGoToFallback() throws {
        let policy = PropertyResolverPolicy.addingDeltas(for: ["age"], otherwise: .storeTrump)
        #expect(try policy.resolve([Fixture.updateDelete(), Fixture.deleteUpdate()]) == [.takeStore, .takeStore])
        #expect(try Self.deltas.resolve([Fixture.updateDelete(), Fixture.deleteUpdate()])
            == [.write(Fixture.person(age: 40)), .delete])
    }

    @Test("values that cannot be added fail the save, unless only one side changed")
    func unmergeable() throws {
        let bothChanged = Self.conflict(
            ancestor: ["counter": .null], ours: ["counter": .int(3)], theirs: ["counter": .int(5)])
        let error = try #require(throws: PropertyResolverPolicy.UnmergeableDelta.self) {
            try Self.deltas.resolve([bothChanged])
        }
        #expect(error == .init(property: "counter", ancestor: .null, ours: .int(3), theirs: .int(5)))
        let overflow = Self.conflict(
            ancestor: ["counter": .int(0)], ours: ["counter": .int(.max)], theirs: ["counter": .int(1)])
        #expect(throws: PropertyResolverPolicy.UnmergeableDelta.self) { try Self.deltas.resolve([overflow]) }
        let oursOnly = Self.conflict(
            ancestor: ["counter": .null, "city": .string("Oslo")], ours: ["counter": .int(3), "city": .string("Oslo")],
            theirs: ["counter": .null, "city": .string("Rome")])
        #expect(try Self.deltas.resolve([oursOnly])
            == [.write(["counter": .int(3), "city": .string("Rome")])])
    }

    @Test("the delta resolver on its own")
    func resolverAlone() throws {
        let add = PropertyResolverPolicy.addingDelta(for: "counter")
        #expect(try add(.int(10), .int(13), .int(15)) == .int(18))
        // The difference alone overflows Int64; the sum does not, and must not trap.
        #expect(try add(.int(.min), .int(.max), .int(.min)) == .int(.max))
        #expect(try add(.double(1), .double(1.5), .double(3)) == .double(3.5))
    }

    @Test("a closure policy: the closure decides its property, the fallback the rest")
    func closurePolicy() throws {
        let policy = PropertyResolverPolicy(
            name: "longerTitle",
            resolvers: [
                "title": { _, ours, theirs in
                    guard case .string(let mine) = ours, case .string(let other) = theirs else { return theirs }
                    return mine.count >= other.count ? ours : theirs
                },
                // Must never be called: "name" changes on neither side below.
                "name": { _, _, _ in .string("CALLED") },
            ],
            otherwise: .storeTrump)
        #expect(policy.name == "longerTitle")
        let conflict = Self.conflict(
            ancestor: ["title": .string("Draft"), "age": .int(30), "name": .string("Ann")],
            ours: ["title": .string("Final draft"), "age": .int(40), "name": .string("Ann")],
            theirs: ["title": .string("Done"), "age": .int(31), "name": .string("Ann")])
        // title: the closure picks ours (longer); age: storeTrump picks theirs; name untouched.
        #expect(try policy.resolve([conflict])
            == [.write(["title": .string("Final draft"), "age": .int(31), "name": .string("Ann")])])
    }

    @Test("a resolver's error fails the save")
    func resolverThrows() {
        struct Refused: Error {}
        let policy = PropertyResolverPolicy(resolvers: ["age": { _, _, _ in throw Refused() }], otherwise: .objectTrump)
        #expect(policy.name == "propertyResolver")
        #expect(throws: Refused.self) { try policy.resolve([Fixture.sameProperty()]) }
    }

    @Test("a fallback that breaks the one-per-conflict rule is caught")
    func brokenFallback() {
        struct ReturnsNothing: MergePolicy {
            var name: String { "returnsNothing" }
            func resolve(_ conflicts: [MergeConflict]) -> [Resolution] { [] }
        }
        let policy = PropertyResolverPolicy(resolvers: [:], otherwise: ReturnsNothing())
        #expect(throws: ResolutionCountMismatch.self) { try policy.resolve([Fixture.sameProperty()]) }
    }
}
