import Testing
import KVEngine

/// `LogRecordCodec.encode` copies names and keys of 4 to 32 bytes in line (`RecordCursor.copy`);
/// its bytes must be the format's, whatever the lengths. Checked against the grammar in
/// LogFormat.swift written out field by field with `ByteWriter`.
@Suite struct LogRecordEncodingTests {
    private struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    /// The record for `commit`, by the grammar.
    private static func expectedRecord(_ commit: LoggedCommit, durableVersion: UInt64) -> [UInt8] {
        var payload = ByteWriter()
        payload.u32(UInt32(commit.operations.count))
        for operation in commit.operations {
            let kind: UInt8
            if operation.isUnversioned {
                kind = operation.value == nil ? 5 : 4
            } else {
                kind = operation.value == nil ? 2 : operation.replacesTombstone ? 3 : 1
            }
            payload.u8(kind)
            payload.u8(UInt8(operation.table.utf8.count))
            payload.raw(Array(operation.table.utf8))
            payload.u16(UInt16(operation.key.count))
            payload.raw(operation.key)
            payload.u64(operation.recordVersion)
            if let value = operation.value {
                payload.u32(UInt32(value.count))
                payload.raw(value)
            }
        }
        var body = ByteWriter()
        body.u32(UInt32(payload.bytes.count))
        body.u64(commit.version)
        body.u64(durableVersion)
        body.raw(payload.bytes)
        var record = ByteWriter()
        record.u32(crc32c(body.bytes))
        record.raw(body.bytes)
        return record.bytes
    }

    @Test func recordsOfEveryNameKeyAndValueLengthAreTheFormatsBytes() {
        var generator = Generator(state: 7)
        for round in 0..<40 {
            var operations: [LoggedOperation] = []
            // Runs of one table, as commits write them, and lengths 0 to 40 of each part.
            var table = ""
            for index in 0..<60 {
                if index % 7 == 0 {
                    table = String((0..<generator.next(41)).map { _ in Character(Unicode.Scalar(UInt8(97 + generator.next(26)))) })
                }
                let key = (0..<generator.next(41)).map { _ in UInt8(truncatingIfNeeded: generator.next(256)) }
                let value: [UInt8]? = generator.next(3) == 0
                    ? nil : (0..<generator.next(round % 5 == 0 ? 200 : 41)).map { _ in UInt8(truncatingIfNeeded: generator.next(256)) }
                let isUnversioned = generator.next(4) == 0
                operations.append(LoggedOperation(table: table, key: key, recordVersion: UInt64(generator.next(1 << 20) + 1),
                                                  value: value, replacesTombstone: generator.next(2) == 0,
                                                  isUnversioned: isUnversioned))
            }
            let commit = LoggedCommit(version: UInt64(round + 1), operations: operations)
            var writer = ByteWriter()
            writer.u8(0xAB)  // records are appended after others: not at offset 0
            LogRecordCodec.encode(commit, durableVersion: UInt64(round), into: &writer)
            #expect(Array(writer.bytes.dropFirst()) == LogRecordEncodingTests.expectedRecord(commit, durableVersion: UInt64(round)),
                    "round \(round)")
        }
    }
}
