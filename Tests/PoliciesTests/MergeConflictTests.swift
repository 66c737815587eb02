import Policies
import Testing

@Suite("MergeConflict")
struct MergeConflictTests {
    @Test("changed properties are read against the ancestor, per side")
    func changedProperties() {
        let conflict = Fixture.differentProperties()
        #expect(conflict.changedProperties == ["city"])
        #expect(conflict.storeChangedProperties == ["age"])
    }

    @Test("a marked, unchanged object is update/update with no local changes")
    func markedUnchanged() {
        let conflict = Fixture.markedUnchanged()
        #expect(conflict.kind == .updateUpdate)
        #expect(conflict.changedProperties.isEmpty)
        #expect(conflict.storeChangedProperties == ["age"])
    }

    @Test("a deleted side has no changed properties")
    func deletedSide() {
        #expect(Fixture.deleteUpdate().changedProperties.isEmpty)
        #expect(Fixture.deleteUpdate().storeChangedProperties == ["age"])
        #expect(Fixture.updateDelete().storeChangedProperties.isEmpty)
        #expect(Fixture.updateDelete().changedProperties == ["age"])
    }

    @Test("an absent property equals null; a property new on one side is a change")
    func absentIsNull() {
        let conflict = MergeConflict(
            objectID: "cairn://Person/p1", kind: .updateUpdate,
            ancestorValues: ["name": .string("Ann")], ancestorVersion: 3,
            ourValues: ["name": .string("Ann"), "city": .null],
            storeValues: ["name": .string("Ann"), "email": .string("ann@example.com")], storeVersion: 4)
        #expect(conflict.changedProperties.isEmpty)
        #expect(conflict.storeChangedProperties == ["email"])
    }

    @Test("the raw kind names are frozen")
    func kindNames() {
        #expect(ConflictKind.updateUpdate.rawValue == "update/update")
        #expect(ConflictKind.updateDelete.rawValue == "update/delete")
        #expect(ConflictKind.deleteUpdate.rawValue == "delete/update")
    }

    @Test("sides that contradict the kind or the store version are refused")
    func inconsistentSides() async {
        await #expect(processExitsWith: .failure) {
            _ = MergeConflict(
                objectID: "x", kind: .updateUpdate, ancestorValues: [:], ancestorVersion: 1,
                ourValues: [:], storeValues: nil, storeVersion: 0)
        }
        await #expect(processExitsWith: .failure) {
            _ = MergeConflict(
                objectID: "x", kind: .updateDelete, ancestorValues: [:], ancestorVersion: 1,
                ourValues: [:], storeValues: nil, storeVersion: 7)
        }
        await #expect(processExitsWith: .failure) {
            _ = MergeConflict(
                objectID: "x", kind: .deleteUpdate, ancestorValues: [:], ancestorVersion: 1,
                ourValues: nil, storeValues: [:], storeVersion: 0)
        }
    }
}
