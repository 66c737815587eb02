import Testing
import KVEngine

/// `TableKey` hashes its bytes once and keeps the digest; these pin down that equal keys stay
/// equal and hash alike, and that keys differing anywhere are told apart.
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

    /// The commit path hashes a table's name once per run of its keys; the digest must be
    /// the one a key made alone gets, or lookups would miss.
    @Test func aKeyHashedFromItsTablesSeedMatchesOneMadeAlone() {
        let seeded = TableKey.seed("items")
        for length in [0, 1, 8, 15, 16, 17, 100] {
            let key = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37) }
            let alone = TableKey(table: "items", key: key)
            let run = TableKey(table: "items", key: key, seeded: seeded)
            #expect(alone.digest == run.digest, "key of \(length) bytes")
            #expect(alone == run)
            #expect(TableKey(table: "other", key: key, seeded: TableKey.seed("other")).digest != run.digest)
        }
    }

    /// Equality compares the bytes whenever the digests match (eight-byte keys as one integer):
    /// keys given the same digest on purpose must still be told apart by any differing byte.
    @Test func keysWithTheSameDigestAreComparedByTheirBytes() {
        for length in [0, 1, 7, 8, 9, 16] {
            let key = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
            let one = TableKey(table: "items", key: key, digest: 42)
            #expect(one == TableKey(table: "items", key: Array(key), digest: 42), "key of \(length) bytes")
            #expect(one != TableKey(table: "other", key: key, digest: 42))
            for index in key.indices {
                var changed = key
                changed[index] ^= 0x80
                #expect(one != TableKey(table: "items", key: changed, digest: 42), "byte \(index) of \(length)")
            }
            #expect(one != TableKey(table: "items", key: key + [0], digest: 42))
        }
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

    /// The multiply-xor mix tried first collided on these pairs for every secret: flipping a
    /// word's top bit changed its mixed state by a constant (bits 63 and 32), which the next
    /// word could cancel. A client could have built any number of colliding keys offline.
    @Test func keysBuiltToCancelAWordsDifferenceDoNotCollide() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let key = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var twin = key
            twin[7] ^= 0x80   // bit 63 of the first little-endian word
            twin[15] ^= 0x80  // bit 63 of the second
            twin[12] ^= 0x01  // bit 32 of the second
            #expect(TableKey(table: "t", key: key).digest != TableKey(table: "t", key: twin).digest)
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
