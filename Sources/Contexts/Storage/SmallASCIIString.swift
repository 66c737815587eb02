/// Strings of at most 15 ASCII bytes made as the standard library's small strings are, without
/// its UTF-8 validation: `String(unsafeUninitializedCapacity:)` checked every decoded name
/// again (about 105 instructions a member of relationship-traverse; this is about 15).
///
/// Relies on: on a 64-bit platform a small string is two words, its bytes in order in the low
/// fifteen bytes (zero past its count) and the top byte `0xE0 | count` for an ASCII one
/// (immortal, small, ASCII), which is the standard library's layout on 64-bit platforms. Pinned
/// by `ContainedTricksTests.smallASCIIStringsAreTheStandardLibrarys` (bit for bit, every length).
package enum SmallASCIIString {
    /// The string of the `count` bytes at `offset` of `base` (at most 15), or nil when one is
    /// not ASCII. Every byte loaded lies in `base[0..<end]`.
    @inline(__always)
    package static func make(_ base: UnsafeRawPointer, at offset: Int, count: Int, end: Int) -> String? {
        #if arch(x86_64) || arch(arm64)
        guard count <= 15, offset + count <= end else { return nil }
        var low: UInt64 = 0, high: UInt64 = 0
        if count >= 8 {
            low = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            // The last word loaded so that it ends with the text, its bytes before the ninth shifted out.
            if count > 8 { high = base.loadUnaligned(fromByteOffset: offset + count - 8, as: UInt64.self) &>> UInt64(8 * (16 - count)) }
        } else if count > 0 {
            if offset + count >= 8 {
                low = base.loadUnaligned(fromByteOffset: offset + count - 8, as: UInt64.self) &>> UInt64(8 * (8 - count))
            } else {
                for index in 0..<count { low |= UInt64(base.load(fromByteOffset: offset + index, as: UInt8.self)) << UInt64(8 * index) }
            }
        }
        guard (low | high) & 0x8080_8080_8080_8080 == 0 else { return nil }
        high |= UInt64(0xE0 | count) << 56
        // Written over an owned empty string (itself small) rather than bit-cast: a cast value
        // is borrowed, and owning it cost a call to retain it.
        var string = ""
        withUnsafeMutableBytes(of: &string) { words in
            words.storeBytes(of: low, toByteOffset: 0, as: UInt64.self)
            words.storeBytes(of: high, toByteOffset: 8, as: UInt64.self)
        }
        return string
        #else
        return nil
        #endif
    }
}
