import CairnTestSupport
import CLMDB
import Testing
import KVEngine

/// The three-lane CRC-32C (`cairn_crc32c_lanes` in shim.h, taken from 128 bytes on) must give
/// exactly the one-chain CRC: log records and stored records are checked with it. Compared
/// with the table path, which shares no code with it.
@Suite struct CRC32CLanesTests {
    private static func randomBytes(_ count: Int, _ generator: inout SeededRandom) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    /// The CRC of `bytes` by the byte-at-a-time table.
    private static func tableCRC(_ bytes: UnsafeRawBufferPointer, extending crc: UInt32 = 0) -> UInt32 {
        ~cairn_crc32c_software(~crc, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    @Test func lanesMatchTheStandardCheckValueAndTheTable() {
        #expect(crc32c(Array("123456789".utf8)) == 0xE306_9283)
        // A known buffer long enough for lanes: 4,096 zeros, whose CRC follows from the
        // table path alone.
        let zeros = [UInt8](repeating: 0, count: 4096)
        #expect(crc32c(zeros) == zeros.withUnsafeBytes { CRC32CLanesTests.tableCRC($0) })
    }

    @Test func everyLengthAroundTheLaneSizesAtEveryAlignment() {
        // Each length up to 1,600 (one-round, several-round, and full 64-word lanes, and every
        // tail), starting at each of the 64 offsets of a cache line.
        var generator = SeededRandom(seed: 1)  // the same bytes and lengths on every run
        let bytes = CRC32CLanesTests.randomBytes(1600 + 64, &generator)
        bytes.withUnsafeBytes { all in
            for length in 0...1600 {
                let start = length % 64
                let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                #expect(crc32c(slice) == CRC32CLanesTests.tableCRC(slice), "length \(length) at \(start)")
            }
        }
    }

    @Test func randomLengthsUpToAHundredThousandAtEveryAlignment() {
        var generator = SeededRandom(seed: 2)  // the same bytes and lengths on every run
        let bytes = CRC32CLanesTests.randomBytes(100_000 + 64, &generator)
        bytes.withUnsafeBytes { all in
            for start in 0..<64 {
                let length = Int(generator.next() % 100_001)
                let extending = UInt32(truncatingIfNeeded: generator.next())
                let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                #expect(crc32c(slice, extending: extending) == CRC32CLanesTests.tableCRC(slice, extending: extending),
                        "length \(length) at \(start)")
            }
        }
    }

    @Test func aStoredRecordsPairedChecksumMatchesTheTable() {
        // `cairn_crc32c_pair` (a key, then a record's bytes after its checksum) for records
        // of every size up to 600 bytes.
        var generator = SeededRandom(seed: 3)  // the same bytes and lengths on every run
        let key = CRC32CLanesTests.randomBytes(16, &generator)
        let record = CRC32CLanesTests.randomBytes(600, &generator)
        key.withUnsafeBytes { keyBytes in
            record.withUnsafeBytes { all in
                for length in 0...600 {
                    let body = UnsafeRawBufferPointer(rebasing: all[0..<length])
                    let expected = CRC32CLanesTests.tableCRC(body, extending: CRC32CLanesTests.tableCRC(keyBytes))
                    #expect(cairn_crc32c_pair(keyBytes.baseAddress, 16, body.baseAddress, length) == expected, "length \(length)")
                }
            }
        }
    }
}
