import Policies
import Testing

@Suite("PropertyMerge")
struct PropertyMergeTests {
    @Test("classifies every property of a conflict")
    func classification() {
        let conflict = MergeConflict(
            objectID: "cairn://Person/p1", kind: .updateUpdate,
            ancestorValues: Fixture.ancestor, ancestorVersion: 1,
            ourValues: ["name": .string("Ann"), "age": .int(40), "city": .string("Rome")],
            storeValues: ["name": .string("Ann"), "age": .int(31), "city": .string("Oslo"), "email": .string("a@b")],
            storeVersion: 2)
        #expect(PropertyMerge.change(of: "city", in: conflict) == .locallyOnly)
        #expect(PropertyMerge.change(of: "email", in: conflict) == .inStoreOnly)
        #expect(PropertyMerge.change(of: "age", in: conflict) == .onBothSides)
        #expect(PropertyMerge.change(of: "name", in: conflict) == .onNeither)
        // A property only the store has is merged in, not lost.
        #expect(
            PropertyMerge.objectTrump.mergedValues(for: conflict)
                == ["name": .string("Ann"), "age": .int(40), "city": .string("Rome"), "email": .string("a@b")])
    }

    @Test("both sides made the same change: the merge is the store's state, so take it")
    func sameChangeTakesStore() {
        let conflict = MergeConflict(
            objectID: "cairn://Person/p1", kind: .updateUpdate,
            ancestorValues: Fixture.ancestor, ancestorVersion: 1,
            ourValues: Fixture.person(age: 31), storeValues: Fixture.person(age: 31), storeVersion: 2)
        #expect(PropertyMerge.storeTrump.resolve(conflict) == .takeStore)
        #expect(PropertyMerge.objectTrump.resolve(conflict) == .takeStore)
        // overwrite promises the whole object and does not collapse.
        #expect(OverwriteMergePolicy().resolve([conflict]) == [.write(Fixture.person(age: 31))])
    }

    @Test("the built-in rules are the contract's columns")
    func builtInRules() {
        #expect(PropertyMerge.storeTrump == PropertyMerge(locallyOnly: .ours, inStoreOnly: .theirs, onBothSides: .theirs))
        #expect(PropertyMerge.objectTrump == PropertyMerge(locallyOnly: .ours, inStoreOnly: .theirs, onBothSides: .ours))
        #expect(PropertyMerge.rollback == PropertyMerge(locallyOnly: .theirs, inStoreOnly: .theirs, onBothSides: .theirs))
    }

    @Test("a custom rule is applied per property")
    func customRule() {
        // Keep the store's own changes out: the ancestor (= ours) wins where only the store changed.
        let rule = PropertyMerge(locallyOnly: .theirs, inStoreOnly: .ours, onBothSides: .ours)
        #expect(rule.resolve(Fixture.differentProperties()) == .write(Fixture.person(age: 30, city: "Oslo")))
    }

    @Test("writing the store's own values becomes takeStore; anything else is written")
    func resolutionWriting() {
        let conflict = Fixture.sameProperty()
        #expect(PropertyMerge.resolution(writing: Fixture.person(age: 31), for: conflict) == .takeStore)
        #expect(PropertyMerge.resolution(writing: Fixture.person(age: 32), for: conflict) == .write(Fixture.person(age: 32)))
        // With the store's record gone there is nothing to take: always a write.
        #expect(PropertyMerge.resolution(writing: [:], for: Fixture.updateDelete()) == .write([:]))
    }
}
