import Policies
import Testing

/// The whole-value built-ins for plain key-value work, row by row (Docs/MergePolicies.md).
@Suite("Whole-value policies")
struct WholeValuePolicyTests {
    static let a = Array("a".utf8), b = Array("b".utf8), c = Array("c".utf8)

    /// A conflict on key "k" with these three states.
    static func conflict(ancestor: [UInt8]?, ours: [UInt8]?, theirs: [UInt8]?, written: Bool = true) -> ValueConflict {
        ValueConflict(table: "t", key: Array("k".utf8), ancestor: ancestor, ancestorVersion: ancestor == nil ? 0 : 1,
                      ours: ours, isWrittenHere: written, theirs: theirs, theirsVersion: theirs == nil ? 0 : 2)
    }

    /// Rows: changed only here, only in the store, on both sides (different bytes), on both
    /// sides to the same bytes, on neither (same bytes, new version), deleted on both sides.
    static let rows: [ValueConflict] = [
        conflict(ancestor: a, ours: b, theirs: a),
        conflict(ancestor: a, ours: a, theirs: b, written: false),
        conflict(ancestor: a, ours: b, theirs: c),
        conflict(ancestor: a, ours: b, theirs: b),
        conflict(ancestor: a, ours: a, theirs: a),
        conflict(ancestor: a, ours: nil, theirs: nil),
    ]

    @Test("each built-in answers every row as its table says", arguments: [
        ("error", [.fail, .fail, .fail, .fail, .fail, .fail]),
        ("storeTrump", [.ours, .theirs, .theirs, .theirs, .theirs, .theirs]),
        ("objectTrump", [.ours, .theirs, .ours, .theirs, .theirs, .theirs]),
        ("overwrite", [.ours, .ours, .ours, .ours, .ours, .ours]),
        ("rollback", [.theirs, .theirs, .theirs, .theirs, .theirs, .theirs]),
    ] as [(String, [ValueResolution])])
    func table(name: String, expected: [ValueResolution]) throws {
        let policy = try #require(WholeValuePolicy.named(name))
        #expect(policy.name == name)
        #expect(try policy.resolutions(for: Self.rows) == expected)
    }

    @Test("the five are listed in the contexts' order and reachable by the same names")
    func names() {
        #expect(WholeValuePolicy.all.map(\.name) == BuiltInPolicies.names)
        #expect(WholeValuePolicy.named("Overwrite") == nil)
        let chosen: any ValueMergePolicy = .storeTrump
        #expect(chosen.name == "storeTrump")
    }

    @Test("changed-here and changed-in-store compare whole values, absent included")
    func changes() {
        let deletedThere = Self.conflict(ancestor: Self.a, ours: Self.a, theirs: nil, written: false)
        #expect(!deletedThere.isChangedHere)
        #expect(deletedThere.isChangedInStore)
        let insertedHere = Self.conflict(ancestor: nil, ours: Self.b, theirs: nil)
        #expect(insertedHere.isChangedHere)
        #expect(!insertedHere.isChangedInStore)
    }
}
