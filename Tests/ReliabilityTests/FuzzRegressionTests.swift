import Contexts
import Foundation
import KVEngine
import Testing

/// The decoder fuzz targets' saved inputs (Fuzz/Regressions/, crashers and crafted findings)
/// and seed corpora (Fuzz/Corpus/), replayed in process with the targets' own properties,
/// so `make test` keeps every fixed crasher fixed without building the fuzzers.
///
/// The properties are those of Fuzz/Sources/*Fuzzer (a separate package, so they are
/// written down here again): readers never trap and stay in bounds; what decodes
/// re-encodes to the same bytes (log payloads) or to bytes that decode to the same values
/// (object values).
@Suite struct FuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz").path

    static func inputs(_ target: String) -> [(name: String, bytes: [UInt8])] {
        var inputs: [(String, [UInt8])] = []
        for folder in ["Regressions", "Corpus"] {
            let directory = fuzzDirectory + "/\(folder)/\(target)"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") && !name.hasPrefix("README") {
                if let data = FileManager.default.contents(atPath: directory + "/" + name) {
                    inputs.append(("\(folder)/\(target)/\(name)", Array(data)))
                }
            }
        }
        return inputs
    }

    @Test func logRecordInputsReadInBoundsAndRoundTrip() {
        let inputs = Self.inputs("fuzz-log-record")
        #expect(!inputs.isEmpty, "no inputs under \(Self.fuzzDirectory)")
        for (name, input) in inputs where !input.isEmpty {
            var bytes = Array(input.dropFirst())
            if input[0] & 1 == 1 { Self.sealRecords(&bytes) }
            bytes.withUnsafeBytes { raw in
                var offset = 0
                reading: while true {
                    switch LogRecordReader.read(raw, at: offset) {
                    case .end:
                        break reading
                    case .damaged:
                        _ = LogScanner.laterRecordVouches(raw, after: offset, for: 1)
                        break reading
                    case let .seal(_, _, next):
                        #expect(next == offset + LogFormat.sealSize && next <= raw.count, "\(name): seal range out of bounds")
                        offset = next
                    case let .record(version, _, payload, next):
                        #expect(payload.lowerBound == offset + LogFormat.recordHeaderSize && payload.upperBound == next
                                 && next <= raw.count, "\(name): record range out of bounds")
                        Self.checkPayload(UnsafeRawBufferPointer(rebasing: raw[payload]), version: version, name: name)
                        offset = next
                    }
                }
                _ = try? LogRecordReader.readSegmentHeader(raw, file: name)
                Self.checkPayload(raw, version: 1, name: name)
            }
        }
    }

    @Test func valueCodecInputsDecodeOrFailWithAnOffsetInTheInput() {
        let inputs = Self.inputs("fuzz-value-codec")
        #expect(!inputs.isEmpty, "no inputs under \(Self.fuzzDirectory)")
        for (name, bytes) in inputs {
            do {
                let encoded = ValueCodec.encode(try ValueCodec.decode(bytes))
                #expect(ValueCodec.encode(try ValueCodec.decode(encoded)) == encoded, "\(name): does not round-trip")
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count, "\(name): offset \(error.offset) outside the input")
            }
        }
    }

    /// Found while fuzzing: a record whose 4-byte payload claims 2^32 − 1 operations makes
    /// `decodePayload` reserve room for 2^20 operations (tens of MB) before it reads one.
    /// Reachable only through a record whose CRC holds; the fix is to bound the reservation
    /// by what the payload can hold (every operation takes at least 12 bytes).
    @Test func aPayloadClaimingMoreOperationsThanItsSizeIsRejected() {
        let payload: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF]
        payload.withUnsafeBytes { raw in
            #expect(LogRecordCodec.decodePayload(raw, version: 1) == nil)
        }
    }

    static func checkPayload(_ payload: UnsafeRawBufferPointer, version: UInt64, name: String) {
        guard let commit = LogRecordCodec.decodePayload(payload, version: version) else { return }
        var writer = ByteWriter()
        LogRecordCodec.encode(commit, durableVersion: 0, into: &writer)
        #expect(Array(writer.bytes[LogFormat.recordHeaderSize...]) == Array(payload), "\(name): payload does not round-trip")
    }

    /// As the fuzz target: clamp each record's length to the bytes left, write its CRC.
    static func sealRecords(_ bytes: inout [UInt8]) {
        var offset = 0
        while bytes.count - offset >= LogFormat.recordHeaderSize {
            let available = bytes.count - offset - LogFormat.recordHeaderSize
            var length = Int(UInt32(bytes[offset + 4]) | UInt32(bytes[offset + 5]) << 8
                | UInt32(bytes[offset + 6]) << 16 | UInt32(bytes[offset + 7]) << 24)
            length = length % (available + 1)
            for index in 0..<4 { bytes[offset + 4 + index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
            let end = offset + LogFormat.recordHeaderSize + length
            let crc = bytes.withUnsafeBytes { crc32c(UnsafeRawBufferPointer(rebasing: $0[(offset + 4)..<end])) }
            for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
            offset = end
        }
    }
}
