import Testing
@testable import KVEngine

/// `TableKey` digests its bytes itself (not through `Hasher`); these pin down that equal keys
/// stay equal and hash alike, and that keys differing anywhere are told apart.
@Suite struct TableKeyTests {
    @Test func equalKeysAreEqualAndHashAlike() {
        let key: [UInt8] = Array("a key of more than sixteen bytes".utf8)
        let one = TableKey(table: "items", key: key)
        let two = TableKey(table: String("itemsX".dropLast()), key: Array(key))
        #expect(one == two)
        #expect(one.digest == two.digest)
        #expect(one.hashValue == two.hashValue)
        #expect(Set([one, two]).count == 1)
    }

    @Test func keysThatDifferAnywhereDiffer() {
        let pairs: [(TableKey, TableKey)] = [
            // Zero padding of the last word must not make these alike.
            (TableKey(table: "t", key: [1]), TableKey(table: "t", key: [1, 0])),
            (TableKey(table: "t", key: []), TableKey(table: "t", key: [0])),
            // The boundary between table and key.
            (TableKey(table: "ab", key: Array("c".utf8)), TableKey(table: "a", key: Array("bc".utf8))),
            // A difference in the second and third words, and in the tail.
            (TableKey(table: "t", key: Array("0123456789abcdef".utf8)), TableKey(table: "t", key: Array("01234567X9abcdef".utf8))),
            (TableKey(table: "t", key: Array("0123456789abcdefgh".utf8)), TableKey(table: "t", key: Array("0123456789abcdefgX".utf8))),
            (TableKey(table: "t", key: [7, 7, 7]), TableKey(table: "u", key: [7, 7, 7])),
        ]
        for (left, right) in pairs {
            #expect(left != right, "\(left.table)/\(left.key) vs \(right.table)/\(right.key)")
            #expect(left.digest != right.digest)
        }
    }

    @Test func aLargeDictionaryFindsEveryKeyAndNoOther() {
        var generator = SystemRandomNumberGenerator()
        var keys: [[UInt8]] = []
        var seen = Set<[UInt8]>()
        while keys.count < 20_000 {
            let length = Int.random(in: 1...40, using: &generator)
            let key = (0..<length).map { _ in UInt8.random(in: 0...3, using: &generator) }
            if seen.insert(key).inserted { keys.append(key) }
        }
        var dictionary: [TableKey: Int] = [:]
        for (index, key) in keys.enumerated() { dictionary[TableKey(table: index % 2 == 0 ? "a" : "b", key: key)] = index }
        #expect(dictionary.count == keys.count)
        for (index, key) in keys.enumerated() {
            #expect(dictionary[TableKey(table: index % 2 == 0 ? "a" : "b", key: key)] == index)
            #expect(dictionary[TableKey(table: index % 2 == 0 ? "b" : "a", key: key)] == nil)
        }
    }
}
