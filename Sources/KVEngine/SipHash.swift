/// SipHash (Aumasson and Bernstein, 2012): a keyed hash of short inputs, what the standard
/// library's `Hasher` is, written out so that `TableKey` can keep the state after a table's
/// name and finish each key's digest from it with no generic code on the way.
///
/// SipHash-c-d: each 8-byte little-endian word of the message is mixed in with `c` rounds,
/// the last word carries the remaining bytes and the message's length (mod 256) in its top
/// byte, and `d` rounds finish. `TableKey` uses SipHash-1-3, as `Hasher` does; tests check the
/// code against the reference vectors of SipHash-2-4 (`SipHashTests`).
package struct SipHash {
    private var v0: UInt64
    private var v1: UInt64
    private var v2: UInt64
    private var v3: UInt64
    /// How many bytes were mixed in (whole words only: the tail goes in with `finish`).
    private var length = 0

    /// The secret key of this process's digests, drawn once: keys a client chooses cannot be
    /// made to collide without it, and digests are never stored.
    package static let processKey: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()

    package init(key: (UInt64, UInt64)) {
        v0 = key.0 ^ 0x736F_6D65_7073_6575
        v1 = key.1 ^ 0x646F_7261_6E64_6F6D
        v2 = key.0 ^ 0x6C79_6765_6E65_7261
        v3 = key.1 ^ 0x7465_6462_7974_6573
    }

    @inline(__always)
    private static func rotate(_ value: UInt64, _ bits: UInt64) -> UInt64 {
        (value << bits) | (value >> (64 - bits))
    }

    @inline(__always)
    private mutating func round() {
        v0 &+= v1; v1 = Self.rotate(v1, 13); v1 ^= v0; v0 = Self.rotate(v0, 32)
        v2 &+= v3; v3 = Self.rotate(v3, 16); v3 ^= v2
        v0 &+= v3; v3 = Self.rotate(v3, 21); v3 ^= v0
        v2 &+= v1; v1 = Self.rotate(v1, 17); v1 ^= v2; v2 = Self.rotate(v2, 32)
    }

    @inline(__always)
    private mutating func compress(_ word: UInt64, rounds: Int) {
        v3 ^= word
        for _ in 0..<rounds { round() }
        v0 ^= word
    }

    /// Mixes in one whole word (its 8 bytes little-endian).
    @inline(__always)
    package mutating func combine(word: UInt64, rounds: Int) {
        compress(word, rounds: rounds)
        length &+= 8
    }

    /// Mixes in `bytes` and finishes: the hash of everything combined before, then `bytes`.
    @inline(__always)
    package func finalize(_ bytes: UnsafeRawBufferPointer, rounds: Int, finalRounds: Int) -> UInt64 {
        var state = self
        var offset = 0
        while bytes.count - offset >= 8 {
            state.compress(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)), rounds: rounds)
            offset += 8
        }
        // The last 0 to 7 bytes, little-endian, in at most three loads (byte by byte took
        // about 25 instructions a byte).
        var last = UInt64(truncatingIfNeeded: state.length &+ bytes.count) << 56
        let rest = bytes.count - offset
        var shift: UInt64 = 0
        if rest & 4 != 0 {
            last |= UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            offset += 4
            shift = 32
        }
        if rest & 2 != 0 {
            last |= UInt64(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))) << shift
            offset += 2
            shift += 16
        }
        if rest & 1 != 0 { last |= UInt64(bytes[offset]) << shift }
        state.compress(last, rounds: rounds)
        state.v2 ^= 0xFF
        for _ in 0..<finalRounds { state.round() }
        return state.v0 ^ state.v1 ^ state.v2 ^ state.v3
    }

    /// SipHash-c-d of `bytes` under `key`.
    package static func hash(_ bytes: UnsafeRawBufferPointer, key: (UInt64, UInt64), rounds: Int, finalRounds: Int) -> UInt64 {
        SipHash(key: key).finalize(bytes, rounds: rounds, finalRounds: finalRounds)
    }
}
