#if canImport(Glibc)
import Glibc
#endif

/// A table and key, as a dictionary key.
///
/// The overlay, the commit path's checks and the group's states each look a written key up,
/// so hashing is on the path of every write. A `TableKey` hashes its bytes once, when it is
/// made, and keeps the result: the commit path makes one per written key and hands it to
/// both its own table of states and the overlay lookup, and every lookup after that mixes
/// the kept digest with the dictionary's seed instead of hashing the bytes again. Equality
/// compares the digests first and the bytes only when they match.
///
/// The digest is SipHash-1-3 (as the standard library's `Hasher`), keyed by a random secret
/// per process, so keys a client chooses cannot be made to collide without it: the hash of
/// the table name's own hash (one word) followed by the key's bytes. The state after that
/// first word is a table's `seed`, made once per run of its keys; each key's digest finishes
/// from it (`SipHash`: `Hasher`'s generic buffering cost about 270 instructions a key, this
/// about 90). A cheaper multiply-xor mix was tried first and dropped: flipping a key word's
/// top bit changes its mixed state by a constant, whatever the secret, so colliding keys
/// could be built offline.
package struct TableKey: Hashable {
    package let table: String
    package let key: [UInt8]
    /// SipHash of `table` and `key`; equal keys have equal digests.
    package let digest: UInt64
    /// The key's first eight bytes (zero-padded) and its length, held inline: comparing keys
    /// of at most eight bytes (every object store key) touches no key array. Reaching into an
    /// array retains and releases it (two atomic operations), and the overlay compares keys
    /// twice per write of a commit.
    let head: UInt64
    let count: Int

    package init(table: String, key: [UInt8]) {
        self.init(table: table, key: key, seeded: TableKey.seed(table))
    }

    /// `seeded`: `seed(table)`, made once for a run of one table's keys.
    @inline(__always)
    package init(table: String, key: [UInt8], seeded: SipHash) {
        self.table = table
        self.key = key
        (head, count, digest) = key.withUnsafeBytes { bytes in
            (TableKey.head(of: bytes), bytes.count, seeded.finalize(bytes, rounds: 1, finalRounds: 3))
        }
    }

    /// A key whose digest was computed before (by this process: digests are seeded), or 0
    /// when none was (a logged operation decoded from the log), and it is computed here.
    package init(table: String, key: [UInt8], digest: UInt64) {
        self = digest == 0 ? TableKey(table: table, key: key) : TableKey(table: table, key: key, knownDigest: digest)
    }

    private init(table: String, key: [UInt8], knownDigest digest: UInt64) {
        self.table = table
        self.key = key
        self.digest = digest
        (head, count) = key.withUnsafeBytes { (TableKey.head(of: $0), $0.count) }
    }

    /// The first eight bytes of `bytes`, zero-padded.
    @inline(__always)
    static func head(of bytes: UnsafeRawBufferPointer) -> UInt64 {
        if bytes.count >= 8 { return bytes.loadUnaligned(as: UInt64.self) }
        var head: UInt64 = 0
        withUnsafeMutableBytes(of: &head) { $0.copyMemory(from: bytes) }
        return head
    }

    /// The digest state after `table`: its name's own SipHash as the first word, so a table's
    /// end is never a key's start.
    package static func seed(_ table: String) -> SipHash {
        var name = table
        let nameHash = name.withUTF8 { SipHash.hash(UnsafeRawBufferPointer($0), key: SipHash.processKey, rounds: 1, finalRounds: 3) }
        var state = SipHash(key: SipHash.processKey)
        state.combine(word: nameHash, rounds: 1)
        return state
    }

    package static func == (lhs: TableKey, rhs: TableKey) -> Bool {
        guard lhs.digest == rhs.digest, lhs.count == rhs.count, lhs.head == rhs.head, lhs.table == rhs.table
        else { return false }
        // Keys of at most eight bytes are equal when their heads are.
        if lhs.count <= 8 { return true }
        return lhs.key.withUnsafeBytes { left in
            rhs.key.withUnsafeBytes { right in memcmp(left.baseAddress! + 8, right.baseAddress! + 8, left.count - 8) == 0 }
        }
    }

    package func hash(into hasher: inout Hasher) { hasher.combine(digest) }

    /// What Dictionary and Set call: the digest mixed with the table's seed, no `Hasher`.
    package func _rawHashValue(seed: Int) -> Int {
        Int(truncatingIfNeeded: TableKey.mix(digest ^ UInt64(truncatingIfNeeded: seed)))
    }

    /// MurmurHash3's 64-bit finaliser, a bijection: every input bit reaches every output bit,
    /// so tables with different seeds place the same digests differently.
    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        var value = value
        value ^= value >> 33
        value &*= 0xFF51_AFD7_ED55_8CCD
        value ^= value >> 33
        value &*= 0xC4CE_B9FE_1A85_EC53
        value ^= value >> 33
        return value
    }
}
