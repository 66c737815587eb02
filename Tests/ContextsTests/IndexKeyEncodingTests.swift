import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// The index key encoding's one promise: byte order is value order (Docs/Contexts.md, "The
/// index key format"), for random values of every type, null first.
@Suite struct IndexKeyEncodingTests {
    @Test func byteOrderIsValueOrderForRandomValuesOfEveryType() {
        let seed = SeededRandom.seed()
        print("IndexKeyEncodingTests seed \(seed) (replay: CAIRN_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let makers: [(inout SeededRandom) -> AttributeValue] = [
            { .int(Self.randomInt(&$0)) },
            { .double(Self.randomDouble(&$0)) },
            { .string(Self.randomString(&$0)) },
            { .bytes(Self.randomBytes(&$0)) },
            { .bool($0.next() & 1 == 0) },
            { .date(Date(timeIntervalSinceReferenceDate: Self.randomDouble(&$0))) },
        ]
        for maker in makers {
            var values: [AttributeValue] = [.null]
            for _ in 0..<400 { values.append(maker(&random)) }
            for _ in 0..<4000 {
                let left = values[Int(random.next(upTo: UInt64(values.count)))]
                let right = values[Int(random.next(upTo: UInt64(values.count)))]
                let byValue = Self.valueOrder(left, right)
                let leftBytes = IndexKeyEncoding.encoded(left), rightBytes = IndexKeyEncoding.encoded(right)
                let byBytes = leftBytes == rightBytes ? 0 : (leftBytes.lexicographicallyPrecedes(rightBytes) ? -1 : 1)
                #expect(byBytes == byValue, "\(left) vs \(right): bytes say \(byBytes), values \(byValue) (seed \(seed))")
            }
        }
    }

    /// What a save relies on to leave an index alone when none of its attributes changed
    /// (SaveEntry+Indexes.swift): values that compare equal (`==`) have the same key.
    @Test func valuesThatCompareEqualHaveTheSameKey() {
        let quietNaN = Double.nan, otherNaN = Double(nan: 0x1234, signaling: false)
        let pairs: [(AttributeValue, AttributeValue)] = [
            (.double(-0.0), .double(0.0)),
            (.double(quietNaN), .double(otherNaN)),
            (.date(Date(timeIntervalSinceReferenceDate: -0.0)), .date(Date(timeIntervalSinceReferenceDate: 0.0))),
            (.date(Date(timeIntervalSinceReferenceDate: quietNaN)), .date(Date(timeIntervalSinceReferenceDate: otherNaN))),
            (.string("\u{E9}t\u{E9}"), .string("e\u{301}te\u{301}")),
            (.string(String(repeating: "\u{E9}", count: 400)), .string(String(repeating: "e\u{301}", count: 400))),
            (.bytes([0, 1, 0]), .bytes([0, 1, 0])),
            (.null, .null),
        ]
        for (left, right) in pairs {
            #expect(left == right)
            #expect(IndexKeyEncoding.encoded(left) == IndexKeyEncoding.encoded(right), "\(left) vs \(right)")
        }
    }

    @Test func equalValuesEncodeEquallyAndPrefixesSortFirst() {
        #expect(IndexKeyEncoding.encoded(.double(-0.0)) == IndexKeyEncoding.encoded(.double(0.0)))
        #expect(IndexKeyEncoding.encoded(.string("\u{E9}")) == IndexKeyEncoding.encoded(.string("e\u{301}")))
        let short = IndexKeyEncoding.encoded(.string("a")), zero = IndexKeyEncoding.encoded(.string("a\u{0}"))
        #expect(short.lexicographicallyPrecedes(zero))
        #expect(IndexKeyEncoding.encoded(.null) == [0])
        #expect(IndexKeyEncoding.encoded(.int(1)) == [2, 0x80, 0, 0, 0, 0, 0, 0, 1])
    }

    /// The worked example of Docs/Contexts.md, byte for byte: the format is frozen.
    @Test func theDocumentedEntryBytesArePinned() {
        let values = IndexKeyEncoding.encoded(.string("Oslo")) + IndexKeyEncoding.encoded(.int(30))
        #expect(values == [0x04, 0x4F, 0x73, 0x6C, 0x6F, 0x00, 0x00, 0x02, 0x80, 0, 0, 0, 0, 0, 0, 0x1E])
        #expect(IndexKeyEncoding.encoded(.bool(true)) == [0x01, 0x01])
        #expect(IndexKeyEncoding.encoded(.double(-1)) == [0x03, 0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(IndexKeyEncoding.encoded(.bytes([0, 1])) == [0x05, 0x00, 0xFF, 0x01, 0x00, 0x00])
        #expect(IndexKeyEncoding.encoded(.date(Date(timeIntervalSinceReferenceDate: 0))) == [0x06, 0x80, 0, 0, 0, 0, 0, 0, 0])
    }

    /// A save writes entry keys in one pass into a buffer (IndexKeyEncoding+BufferedKey.swift):
    /// the bytes must be the appending encoder's, for every type, content zeros, non-ASCII
    /// strings and values long enough to be cut at the index's cap.
    @Test func bufferedEntryKeysAreTheAppendedOnes() {
        let seed = SeededRandom.seed()
        print("IndexKeyEncodingTests buffered seed \(seed) (replay: CAIRN_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let makers: [(AttributeType, (inout SeededRandom) -> AttributeValue)] = [
            (.int, { .int(Self.randomInt(&$0)) }),
            (.double, { .double(Self.randomDouble(&$0)) }),
            (.string, { .string(String(repeating: Self.randomString(&$0), count: Int($0.next(upTo: 300)))) }),
            (.string, { .string(Self.randomString(&$0)) }),
            (.bytes, { .bytes(Array(repeating: Self.randomBytes(&$0), count: Int($0.next(upTo: 300))).flatMap { $0 }) }),
            (.bool, { .bool($0.next() & 1 == 0) }),
            (.date, { .date(Date(timeIntervalSinceReferenceDate: Self.randomDouble(&$0))) }),
        ]
        var checked = 0, long = 0
        for _ in 0..<2000 {
            var values: [AttributeValue] = [], types: [AttributeType] = []
            for _ in 0..<(1 + random.next(upTo: 3)) {
                let (type, make) = makers[Int(random.next(upTo: UInt64(makers.count)))]
                types.append(type)
                values.append(random.next(upTo: 8) == 0 ? .null : make(&random))
            }
            let keys = IndexKeyEncoding.entryKeyBothWays(values, types: types, primaryKey: random.next())
            #expect(keys.buffered == keys.appended, "\(values) (seed \(seed))")
            checked += 1
            if keys.appended.count > 300 { long += 1 }
        }
        #expect(checked == 2000 && long > 0, "no key came near the cap (seed \(seed))")
    }

    /// The order ``FetchPredicate`` and sorting use: null first, then by value.
    static func valueOrder(_ left: AttributeValue, _ right: AttributeValue) -> Int {
        switch (left, right) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        case let (.double(a), .double(b)) where a.isNaN || b.isNaN:
            return a.isNaN && b.isNaN ? 0 : (a.isNaN ? 1 : -1)
        case let (.date(a), .date(b))
            where a.timeIntervalSinceReferenceDate.isNaN || b.timeIntervalSinceReferenceDate.isNaN:
            return valueOrder(.double(a.timeIntervalSinceReferenceDate), .double(b.timeIntervalSinceReferenceDate))
        default:
            let order = FetchPredicate.compare("x", .lessThan, right).evaluate(["x": left]) ? -1
                : (FetchPredicate.compare("x", .equal, right).evaluate(["x": left]) ? 0 : 1)
            return order
        }
    }

    static func randomInt(_ random: inout SeededRandom) -> Int64 {
        switch random.next(upTo: 4) {
        case 0: return Int64(bitPattern: random.next())
        case 1: return Int64(random.next(upTo: 20)) - 10
        case 2: return [Int64.min, Int64.max, 0, -1][Int(random.next(upTo: 4))]
        default: return Int64(random.next(upTo: 1 << 40)) - (1 << 39)
        }
    }

    static func randomDouble(_ random: inout SeededRandom) -> Double {
        switch random.next(upTo: 5) {
        case 0: return Double(bitPattern: random.next())
        case 1: return Double(Int64(random.next(upTo: 20)) - 10) / 4
        case 2: return [0.0, -0.0, .infinity, -.infinity, .nan, .leastNonzeroMagnitude, -.greatestFiniteMagnitude][Int(random.next(upTo: 7))]
        default: return (Double(random.next(upTo: 1 << 53)) / Double(1 << 53) - 0.5) * 1e6
        }
    }

    static func randomString(_ random: inout SeededRandom) -> String {
        let alphabet: [String] = ["a", "b", "A", "\u{0}", "\u{7F}", "é", "e\u{301}", "ß", "日本", "😀", "\u{FFFF}", "z", " "]
        return (0..<random.next(upTo: 6)).map { _ in alphabet[Int(random.next(upTo: UInt64(alphabet.count)))] }.joined()
    }

    static func randomBytes(_ random: inout SeededRandom) -> [UInt8] {
        (0..<random.next(upTo: 6)).map { _ in [0, 1, 0xFF, 0x7F, 0x80, 2][Int(random.next(upTo: 6))] }
    }
}
