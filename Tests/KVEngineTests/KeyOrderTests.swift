import CairnTestSupport
import Testing
import KVEngine

/// `KeyOrder.sortedByKey` orders a scan's overlay keys as LMDB orders keys (bytewise, a
/// prefix first). These compare it with a plain bytewise sort on the shapes of keys that
/// reach it, below and above the size where it switches to a radix sort.
@Suite struct KeyOrderTests {
    /// The order the result must have: bytewise, a shorter key before a longer one it begins.
    static func reference(_ keys: [[UInt8]]) -> [[UInt8]] {
        keys.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Sorts `keys` paired with their positions; checks the order and that every entry kept
    /// its own key.
    static func check(_ keys: [[UInt8]], sourceLocation: SourceLocation = #_sourceLocation) {
        let pairs = keys.enumerated().map { KeyedEntry(key: $0.element, entry: $0.offset) }
        let sorted = KeyOrder.sortedByKey(pairs)
        let expected = reference(keys)
        // The first place where the orders differ, not the arrays: a message about 70,000
        // keys would take Swift Testing minutes to print.
        let firstDifference = sorted.indices.first { $0 >= expected.count || sorted[$0].key != expected[$0] }
        #expect(sorted.count == expected.count, sourceLocation: sourceLocation)
        #expect(firstDifference == nil, sourceLocation: sourceLocation)
        #expect(sorted.allSatisfy { keys[$0.entry] == $0.key }, sourceLocation: sourceLocation)
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// The comparison every table's B-tree uses (`LMDBKeyOrder`) is LMDB's default order:
    /// bytewise, a prefix first, on keys of every length around the word size, with equal
    /// words, prefixes and 8-byte primary keys.
    @Test func theTablesKeyOrderIsLMDBsDefault() {
        var generator = SeededRandom(seed: 57)
        func sign(_ value: Int32) -> Int { value < 0 ? -1 : (value > 0 ? 1 : 0) }
        func reference(_ left: [UInt8], _ right: [UInt8]) -> Int {
            left == right ? 0 : (left.lexicographicallyPrecedes(right) ? -1 : 1)
        }
        var keys: [[UInt8]] = [[], [0], [0, 0], [0xFF], Self.bigEndian(1), Self.bigEndian(256), Self.bigEndian(.max)]
        for _ in 0..<400 {
            let length = Int.random(in: 0...25, using: &generator)
            // Few distinct bytes: many keys share words or are prefixes of others.
            keys.append((0..<length).map { _ in [0x00, 0x01, 0x7F, 0x80, 0xFF][Int.random(in: 0..<5, using: &generator)] })
        }
        for _ in 0..<100 { keys.append(Self.bigEndian(UInt64.random(in: 0...UInt64.max, using: &generator))) }
        var mismatches = 0
        for left in keys {
            for right in keys where sign(LMDBKeyOrder.compare(bytes: left, right)) != reference(left, right) { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    @Test(arguments: [2, 100, 255, 256, 1_000, 70_000])
    func objectKeysInAnyOrder(count: Int) {
        // The object store's keys: 8-byte big-endian primary keys. 70,000 needs a third byte.
        var generator = SeededRandom(seed: UInt64(count))
        var keys = (1...UInt64(count)).map(Self.bigEndian)
        keys.shuffle(using: &generator)
        Self.check(keys)
    }

    @Test(arguments: [50, 300, 5_000])
    func keysThatShareLongPrefixesOrDifferOnlyByTrailingZeros(count: Int) {
        var generator = SeededRandom(seed: 7 &* UInt64(count))
        var unique = Set<[UInt8]>()
        // Equal up to zero padding in their first 16 bytes: [], [0], [0, 0] … make the
        // integer prefixes tie; so do keys longer than 16 bytes with a common start.
        for length in 1...20 { unique.insert([UInt8](repeating: 0, count: length)) }
        for length in 1...20 { unique.insert([UInt8](repeating: 0xFF, count: length)) }
        let stem = [UInt8](repeating: 0xAB, count: 16)
        while unique.count < count {
            switch Int.random(in: 0..<3, using: &generator) {
            case 0:  // long keys behind one 16-byte stem
                unique.insert(stem + (0..<Int.random(in: 0...6, using: &generator)).map { _ in UInt8.random(in: 0...2, using: &generator) })
            case 1:  // short keys of few distinct bytes, so many are prefixes of others
                unique.insert((0..<Int.random(in: 1...5, using: &generator)).map { _ in UInt8.random(in: 0...1, using: &generator) })
            default:  // anything
                unique.insert((0..<Int.random(in: 1...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            }
        }
        var keys = Array(unique)
        keys.shuffle(using: &generator)
        Self.check(keys)
    }

    @Test func theRadixSortIsStableAndSkipsBytesAllKeysShare() {
        // Prefixes equal in every byte but the 16th, given in descending order with ties:
        // a stable sort keeps tied items in their input order.
        var items: [KeyOrder.Prefixed] = []
        for index in 0..<600 {
            items.append(KeyOrder.Prefixed(high: 0x0102_0304_0506_0708, low: UInt64(599 - index) / 2, index: index))
        }
        KeyOrder.radixSort(&items)
        #expect(items.map(\.low) == (0..<600).map { UInt64($0) / 2 })
        for pair in stride(from: 0, to: 600, by: 2) {
            #expect(items[pair].index < items[pair + 1].index)
        }
    }
}
