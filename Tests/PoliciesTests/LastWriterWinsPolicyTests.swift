import Foundation
import Policies
import Testing

@Suite("LastWriterWinsPolicy")
struct LastWriterWinsPolicyTests {
    static let policy = LastWriterWinsPolicy(timestampProperty: "modifiedAt")

    /// Ancestor: Ann 30 at `ancestorStamp`; we set age 40 at `ours`; the store set age 31 at `theirs`.
    static func conflict(
        ancestorStamp: AttributeValue, ours: AttributeValue, theirs: AttributeValue
    ) -> MergeConflict {
        MergeConflict(
            objectID: "cairn://Person/p1", kind: .updateUpdate,
            ancestorValues: ["age": .int(30), "modifiedAt": ancestorStamp], ancestorVersion: 1,
            ourValues: ["age": .int(40), "modifiedAt": ours],
            storeValues: ["age": .int(31), "modifiedAt": theirs], storeVersion: 2)
    }

    static func date(_ seconds: TimeInterval) -> AttributeValue { .date(Date(timeIntervalSince1970: seconds)) }

    enum Winner { case ours, store }

    @Test(
        "the newer side wins the whole object; a tie goes to the store",
        arguments: [
            // (ancestor, ours, theirs, winner)
            (date(100), date(300), date(200), Winner.ours),
            (date(100), date(200), date(300), .store),
            (date(100), date(200), date(200), .store),
            (.int(100), .int(300), .int(200), .ours),
            (.int(100), .int(200), .int(300), .store),
            (.int(100), .int(200), .int(200), .store),
            (.double(1.0), .double(1.5), .double(1.25), .ours),
            (.double(1.0), .double(1.25), .double(1.5), .store),
            (.double(1.0), .double(1.5), .double(1.5), .store),
            (.int(1), .double(2.5), .int(2), .ours),
            (.int(1), .int(3), .double(2.5), .ours),
            (.int(1), .int(2), .double(2.0), .store),
            // A missing timestamp is older than any present one; both missing is a tie.
            (.null, .int(1), .null, .ours),
            (.null, .null, .int(1), .store),
            (.null, .null, .null, .store),
        ]
    )
    func updateUpdate(ancestor: AttributeValue, ours: AttributeValue, theirs: AttributeValue, winner: Winner) throws {
        let conflict = Self.conflict(ancestorStamp: ancestor, ours: ours, theirs: theirs)
        let expected: Resolution = switch winner {
        case .ours: .write(["age": .int(40), "modifiedAt": ours])
        case .store: .takeStore
        }
        #expect(try Self.policy.resolve([conflict]) == [expected])
    }

    @Test("a property that is not a timestamp fails the save with a clear error")
    func unordered() throws {
        let conflict = Self.conflict(ancestorStamp: .null, ours: .string("now"), theirs: .int(5))
        let error = try #require(throws: LastWriterWinsPolicy.UnorderedTimestamps.self) {
            try Self.policy.resolve([conflict])
        }
        #expect(error.ours == .string("now"))
        #expect(error.theirs == .int(5))
        #expect(error.description.contains("\"modifiedAt\""))
        #expect(throws: LastWriterWinsPolicy.UnorderedTimestamps.self) {
            try Self.policy.resolve([Self.conflict(ancestorStamp: .null, ours: Self.date(1), theirs: .int(5))])
        }
    }

    @Test("deletions: the saving context is the last writer")
    func deletions() throws {
        #expect(try Self.policy.resolve([Fixture.updateDelete(), Fixture.deleteUpdate()])
            == [.write(Fixture.person(age: 40)), .delete])
    }

    @Test("a marked, unchanged object whose store record got a newer stamp takes the store")
    func markedUnchanged() throws {
        let conflict = Self.conflict(ancestorStamp: .int(1), ours: .int(1), theirs: .int(2))
        #expect(try Self.policy.resolve([conflict]) == [.takeStore])
    }
}
