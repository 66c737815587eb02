import Testing
import KVEngine

/// `SipHash` is the keyed hash behind every `TableKey` digest: a mistake in it would not fail a
/// lookup (equal keys still hash alike) but could make keys collide at will. These check it
/// against the reference implementation's vectors, and the table seed against hashing whole.
@Suite struct SipHashTests {
    /// The key of the reference vectors: bytes 00 to 0f.
    private let referenceKey: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908)

    private func message(_ count: Int) -> [UInt8] { (0..<count).map { UInt8($0) } }

    /// SipHash-2-4 of the messages 00, 00 01, … under that key (the paper's Appendix A and the
    /// reference code's vectors.h), every tail length from 0 to 7 bytes among them: the same
    /// rounds and padding as SipHash-1-3, with more rounds.
    @Test func sipHash24MatchesTheReferenceVectors() {
        let vectors: [(count: Int, hash: UInt64)] = [
            (0, 0x726F_DB47_DD0E_0E31), (1, 0x74F8_39C5_93DC_67FD), (2, 0x0D6C_8009_D9A9_4F5A),
            (3, 0x8567_6696_D7FB_7E2D), (4, 0xCF27_94E0_2771_87B7), (5, 0x1876_5564_CD99_A68D),
            (6, 0xCBC9_466E_58FE_E3CE), (7, 0xAB02_00F5_8B01_D137), (8, 0x93F5_F579_9A93_2462),
            (15, 0xA129_CA61_49BE_45E5), (63, 0x958A_324C_EB06_4572),
        ]
        for (count, expected) in vectors {
            let hash = message(count).withUnsafeBytes { SipHash.hash($0, key: referenceKey, rounds: 2, finalRounds: 4) }
            #expect(hash == expected, "message of \(count) bytes")
        }
    }

    /// A word combined first, then the rest finished, is the hash of the whole message: what a
    /// table's seed relies on.
    @Test func aWordCombinedFirstIsTheMessagesFirstWord() {
        for count in [8, 9, 15, 16, 17, 40] {
            let bytes = message(count)
            let whole = bytes.withUnsafeBytes { SipHash.hash($0, key: referenceKey, rounds: 1, finalRounds: 3) }
            var state = SipHash(key: referenceKey)
            state.combine(word: bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }, rounds: 1)
            let split = Array(bytes[8...]).withUnsafeBytes { state.finalize($0, rounds: 1, finalRounds: 3) }
            #expect(split == whole, "message of \(count) bytes")
        }
    }
}
