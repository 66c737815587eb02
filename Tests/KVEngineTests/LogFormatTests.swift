import Testing
import KVEngine

/// The on-disk formats are frozen: these tests pin their exact bytes.
@Suite struct LogFormatTests {
    @Test func crc32cMatchesTheStandardCheckValue() {
        // The CRC-32C check value from RFC 3720, appendix B.4.
        #expect(crc32c(Array("123456789".utf8)) == 0xE306_9283)
        #expect(crc32c([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        // Extending in pieces equals one pass.
        let whole = Array("hello, write-ahead log".utf8)
        #expect(crc32c(Array(whole[7...]), extending: crc32c(Array(whole[..<7]))) == crc32c(whole))
    }

    @Test func crc32cAgreesWithTheBitwiseDefinitionAtEveryTailLength() {
        // The word-at-a-time path ends in 4-, 2- and 1-byte steps: every length up to three
        // words, at every start within a word, against the polynomial applied bit by bit.
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = ~0
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return ~crc
        }
        let bytes = (0..<40).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) }
        for start in 0..<8 {
            for end in start...(start + 32) {
                #expect(crc32c(Array(bytes[start..<end])) == bitwise(bytes[start..<end]), "bytes \(start)..<\(end)")
            }
        }
    }

    @Test func segmentHeaderBytesArePinned() {
        let header = LogRecordCodec.segmentHeader(firstVersion: 0x0102_0304_0506_0708, capacity: 0x0203 << 10)
        let expectedPrefix: [UInt8] = Array("CAIRNWAL".utf8) + [2, 0, 0, 0] + [0x03, 0x02, 0, 0]
            + [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01]
        #expect(header.count == 32)
        #expect(Array(header[0..<24]) == expectedPrefix)
        let crc = crc32c(expectedPrefix)
        #expect(Array(header[24..<28]) == [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)])
        #expect(Array(header[28..<32]) == [0, 0, 0, 0])
        #expect(LogFormat.segmentName(firstVersion: 42) == "00000000000000000042.log")
        header.withUnsafeBytes { raw in
            let read = try? LogRecordReader.readSegmentHeader(raw, file: "x")
            #expect(read?.firstVersion == 0x0102_0304_0506_0708 && read?.capacity == 0x0203 * 1024)
        }
    }

    @Test func sealBytesArePinned() {
        let seal = LogRecordCodec.seal(nextVersion: 9, durableVersion: 8)
        let afterCRC: [UInt8] = [0, 0, 0, 0] + [9, 0, 0, 0, 0, 0, 0, 0] + [8, 0, 0, 0, 0, 0, 0, 0]
        let crc = crc32c(afterCRC)
        #expect(seal == [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)] + afterCRC)
        (seal + [UInt8](repeating: 0, count: 100)).withUnsafeBytes { raw in
            guard case let .seal(next, durable, end) = LogRecordReader.read(raw, at: 0) else {
                Issue.record("the seal did not read back")
                return
            }
            #expect(next == 9 && durable == 8 && end == 24)
            // Zeros after the last record are the end of the records.
            guard case .end = LogRecordReader.read(raw, at: end) else { Issue.record("zeros are not the end"); return }
        }
    }

    @Test func zerosFollowedByDataAreDamageNotTheEnd() {
        var bytes = [UInt8](repeating: 0, count: 200)
        bytes[150] = 1
        bytes.withUnsafeBytes { raw in
            guard case .damaged(let reason) = LogRecordReader.read(raw, at: 0) else { Issue.record("not damage"); return }
            #expect(reason.contains("150"))
            guard case .end = LogRecordReader.read(raw, at: 151) else { Issue.record("the zero tail is not the end"); return }
        }
    }

    @Test func recordBytesArePinned() {
        let commit = LoggedCommit(version: 7, operations: [
            LoggedOperation(table: "t", key: [0x6B], recordVersion: 2, value: [0xAA, 0xBB]),
            LoggedOperation(table: "t", key: [0x6A], recordVersion: 5, value: nil),
        ])
        var writer = ByteWriter()
        LogRecordCodec.encode(commit, durableVersion: 6, into: &writer)
        let payload: [UInt8] = [2, 0, 0, 0]  // op count
            + [1, 1, 0x74, 1, 0, 0x6B, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0xAA, 0xBB]  // put t/k v2 = AA BB
            + [2, 1, 0x74, 1, 0, 0x6A, 5, 0, 0, 0, 0, 0, 0, 0]  // delete t/j (was v5)
        let afterCRC: [UInt8] = [UInt8(payload.count), 0, 0, 0] + [7, 0, 0, 0, 0, 0, 0, 0] + [6, 0, 0, 0, 0, 0, 0, 0] + payload
        let crc = crc32c(afterCRC)
        let expected = [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)] + afterCRC
        #expect(writer.bytes == expected)
        // And it reads back.
        writer.bytes.withUnsafeBytes { raw in
            guard case let .record(version, durable, range, next) = LogRecordReader.read(raw, at: 0) else {
                Issue.record("record did not read back")
                return
            }
            #expect(version == 7 && durable == 6 && next == expected.count)
            #expect(LogRecordCodec.decodePayload(UnsafeRawBufferPointer(rebasing: raw[range]), version: 7) == commit)
        }
    }

    @Test func damagedRecordsAreReportedNotTrusted() {
        let commit = LoggedCommit(version: 1, operations: [LoggedOperation(table: "t", key: [1], recordVersion: 1, value: [9])])
        var writer = ByteWriter()
        LogRecordCodec.encode(commit, durableVersion: 0, into: &writer)
        var flipped = writer.bytes
        flipped[flipped.count - 1] ^= 0x01
        flipped.withUnsafeBytes { raw in
            guard case .damaged(let reason) = LogRecordReader.read(raw, at: 0) else { Issue.record("flip not seen"); return }
            #expect(reason.contains("checksum"))
        }
        let short = Array(writer.bytes.dropLast(3))
        short.withUnsafeBytes { raw in
            guard case .damaged(let reason) = LogRecordReader.read(raw, at: 0) else { Issue.record("short not seen"); return }
            #expect(reason.contains("past the end"))
        }
        var huge = writer.bytes
        huge[4] = 0xFF; huge[5] = 0xFF; huge[6] = 0xFF; huge[7] = 0x7F
        huge.withUnsafeBytes { raw in
            guard case .damaged = LogRecordReader.read(raw, at: 0) else { Issue.record("huge length not seen"); return }
        }
    }

    /// A decoder that keeps the last table name (a reader following the log) names every
    /// operation's table rightly across commits, including names of equal length, and still
    /// refuses a name that is not UTF-8.
    @Test func decodingWithKeptTableNamesGivesEachOperationItsTable() {
        let commits = [
            LoggedCommit(version: 1, operations: [LoggedOperation(table: "aa", key: [1], recordVersion: 1, value: [1])]),
            LoggedCommit(version: 2, operations: [
                LoggedOperation(table: "aa", key: [2], recordVersion: 1, value: [2]),
                LoggedOperation(table: "ab", key: [3], recordVersion: 1, value: nil),
                LoggedOperation(table: "", key: [4], recordVersion: 1, value: [4]),
            ]),
            LoggedCommit(version: 3, operations: [LoggedOperation(table: "aa", key: [5], recordVersion: 2, value: [5])]),
        ]
        var names = TableNames()
        for commit in commits {
            var writer = ByteWriter()
            LogRecordCodec.encode(commit, durableVersion: commit.version, into: &writer)
            let payload = Array(writer.bytes[LogFormat.recordHeaderSize...])
            let decoded = payload.withUnsafeBytes { LogRecordCodec.decodePayload($0, version: commit.version, names: &names) }
            #expect(decoded == commit)
        }
        // "aa" with its second byte made 0xFF: the same length as the kept name, not UTF-8.
        var writer = ByteWriter()
        LogRecordCodec.encode(commits[0], durableVersion: 1, into: &writer)
        var payload = Array(writer.bytes[LogFormat.recordHeaderSize...])
        payload[7] = 0xFF
        #expect(payload.withUnsafeBytes { LogRecordCodec.decodePayload($0, version: 1, names: &names) } == nil)
    }

    @Test func aPutOverATombstoneIsKindThree() {
        let commit = LoggedCommit(version: 9, operations: [
            LoggedOperation(table: "t", key: [0x6B], recordVersion: 4, value: [0x01], replacesTombstone: true),
        ])
        var writer = ByteWriter()
        LogRecordCodec.encode(commit, durableVersion: 8, into: &writer)
        let payload = Array(writer.bytes[LogFormat.recordHeaderSize...])
        #expect(payload == [1, 0, 0, 0] + [3, 1, 0x74, 1, 0, 0x6B, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x01])
        let decoded = payload.withUnsafeBytes { LogRecordCodec.decodePayload($0, version: 9) }
        #expect(decoded == commit)
        #expect(decoded?.operations[0].replacesTombstone == true)
    }

    @Test func unversionedOperationsAreKindsFourAndFive() {
        let commit = LoggedCommit(version: 9, operations: [
            LoggedOperation(table: "t", key: [0x6B], recordVersion: 0, value: [0x01], isUnversioned: true),
            LoggedOperation(table: "t", key: [0x6A], recordVersion: 0, value: nil, isUnversioned: true),
        ])
        var writer = ByteWriter()
        LogRecordCodec.encode(commit, durableVersion: 8, into: &writer)
        let payload = Array(writer.bytes[LogFormat.recordHeaderSize...])
        #expect(payload == [2, 0, 0, 0]
            + [4, 1, 0x74, 1, 0, 0x6B, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x01]  // unversioned put t/k = 01
            + [5, 1, 0x74, 1, 0, 0x6A, 0, 0, 0, 0, 0, 0, 0, 0])  // unversioned delete t/j
        let decoded = payload.withUnsafeBytes { LogRecordCodec.decodePayload($0, version: 9) }
        #expect(decoded == commit)
        #expect(decoded?.operations.allSatisfy(\.isUnversioned) == true)
        // An unversioned op states no version: a non-zero one is damage.
        var damaged = payload
        damaged[10] = 1
        #expect(damaged.withUnsafeBytes { LogRecordCodec.decodePayload($0, version: 9) } == nil)
    }

    @Test func tombstoneBytesArePinned() throws {
        var stored = [UInt8](repeating: 0, count: RecordCodec.storedSize(valueCount: 0))
        stored.withUnsafeMutableBytes { RecordCodec.encodeTombstone(key: [0x6B], version: 5, into: $0) }
        let body: [UInt8] = [5, 0, 0, 0, 0, 0, 0, 0x80]
        let crc = crc32c(body, extending: crc32c([0x6B]))
        #expect(stored == [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)] + body)
        try stored.withUnsafeBytes { raw in
            try [UInt8]([0x6B]).withUnsafeBytes { key in
                let decoded = try RecordCodec.decode(key: key, stored: raw, table: "t")
                #expect(decoded.isTombstone && decoded.version == 5 && decoded.value.isEmpty)
            }
        }
    }

    @Test func storedRecordBytesArePinned() throws {
        let stored = RecordCodec.encode(key: [0x6B], version: 3, value: [0x41, 0x42])
        let body: [UInt8] = [3, 0, 0, 0, 0, 0, 0, 0, 0x41, 0x42]
        let crc = crc32c(body, extending: crc32c([0x6B]))
        #expect(stored == [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)] + body)
        try stored.withUnsafeBytes { raw in
            try [UInt8]([0x6B]).withUnsafeBytes { key in
                let decoded = try RecordCodec.decode(key: key, stored: raw, table: "t")
                #expect(decoded.version == 3 && Array(decoded.value) == [0x41, 0x42] && !decoded.isTombstone)
            }
        }
        // The checksum covers the key: the same bytes under another key do not verify.
        #expect(throws: KVError.self) {
            try stored.withUnsafeBytes { raw in
                try [UInt8]([0x6C]).withUnsafeBytes { key in _ = try RecordCodec.decode(key: key, stored: raw, table: "t") }
            }
        }
    }
}
