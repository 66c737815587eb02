import Foundation
import Policies

/// How attribute values order, for predicates and sorting.
enum AttributeOrder {
    /// -1, 0 or 1 when the two values are comparable (same type, or int/double); nil otherwise
    /// (null, different types, NaN).
    static func compare(_ left: AttributeValue, _ right: AttributeValue) -> Int? {
        switch (left, right) {
        case let (.string(a), .string(b)):
            if let order = ASCIIOrder.compare(a, b) { return order }
            if a == b { return 0 }  // canonical equivalence, as NFC bytes are equal
            return nfc(a).utf8.lexicographicallyPrecedes(nfc(b).utf8) ? -1 : 1
        case let (.int(a), .int(b)): return a < b ? -1 : (a == b ? 0 : 1)
        case let (.double(a), .double(b)):
            if a.isNaN || b.isNaN { return nil }
            return a < b ? -1 : (a == b ? 0 : 1)
        case let (.int(a), .double(b)): return compare(a, b)
        case let (.double(a), .int(b)): return compare(b, a).map { -$0 }
        case let (.bool(a), .bool(b)): return a == b ? 0 : (a ? 1 : -1)
        case let (.bytes(a), .bytes(b)):
            if a == b { return 0 }
            return a.lexicographicallyPrecedes(b) ? -1 : 1
        case let (.date(a), .date(b)): return a < b ? -1 : (a == b ? 0 : 1)
        default: return nil
        }
    }

    /// A string's NFC form, whose UTF-8 bytes order strings here and in indexes. (Swift's `<`
    /// is not a strict order on strings that are not NFC: "e\u{301}" and "\u{E9}b" are
    /// unordered.) ASCII is its own NFC form and costs no Foundation call.
    static func nfc(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text }
        return text.precomposedStringWithCanonicalMapping
    }

    /// An exact int-versus-double comparison: converting the int to Double would round above 2^53.
    static func compare(_ integer: Int64, _ double: Double) -> Int? {
        if double.isNaN { return nil }
        if double >= 9_223_372_036_854_775_808.0 { return -1 }
        if double < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = Int64(double.rounded(.towardZero))
        if integer != whole { return integer < whole ? -1 : 1 }
        let fraction = double - Double(whole)
        return fraction > 0 ? -1 : (fraction < 0 ? 1 : 0)
    }

    /// A total order for sorting: null first, then by type rank, then by value (NaN last among
    /// numbers).
    static func sortOrder(_ left: AttributeValue, _ right: AttributeValue) -> Int {
        if let order = compare(left, right) { return order }
        let leftRank = rank(left), rightRank = rank(right)
        if leftRank != rightRank { return leftRank < rightRank ? -1 : 1 }
        // Same rank but incomparable: a number against NaN.
        let leftNaN = isNaN(left), rightNaN = isNaN(right)
        if leftNaN == rightNaN { return 0 }
        return leftNaN ? 1 : -1
    }

    private static func rank(_ value: AttributeValue) -> Int {
        switch value {
        case .null: return 0
        case .bool: return 1
        case .int, .double: return 2
        case .string: return 3
        case .bytes: return 4
        case .date: return 5
        }
    }

    private static func isNaN(_ value: AttributeValue) -> Bool {
        if case .double(let number) = value { return number.isNaN }
        return false
    }
}

/// The byte order of two ASCII strings, read from their contiguous UTF-8 at once.
///
/// Relies on: ASCII is its own NFC form, and two ASCII strings are canonically equivalent only
/// when their bytes are equal, so the bytes' order is `AttributeOrder.compare`'s order. A sort
/// of index-ordered names spent most of its time in the generic path's per-byte NFC check and
/// its UTF-8 view comparison. Pinned by `AttributeOrderTests.asciiOrderIsTheGeneralOrder`.
package enum ASCIIOrder {
    /// -1, 0 or 1; nil when either string is not ASCII (the general path decides).
    package static func compare(_ left: String, _ right: String) -> Int? {
        var left = left, right = right
        return left.withUTF8 { leftBytes in
            right.withUTF8 { rightBytes -> Int? in
                guard isASCII(leftBytes), isASCII(rightBytes) else { return nil }
                let common = min(leftBytes.count, rightBytes.count)
                if common > 0 {
                    let order = memcmp(leftBytes.baseAddress!, rightBytes.baseAddress!, common)
                    if order != 0 { return order < 0 ? -1 : 1 }
                }
                return leftBytes.count == rightBytes.count ? 0 : (leftBytes.count < rightBytes.count ? -1 : 1)
            }
        }
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var combined: UInt8 = 0
        for byte in bytes { combined |= byte }
        return combined < 0x80
    }
}
