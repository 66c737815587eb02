@testable import KVEngine

// libFuzzer target: the log record reader and payload decoder on arbitrary bytes.
//
// Input: one mode byte, then a segment body (records back to back). With mode bit 0 set,
// the harness seals each record first (its length clamped to the bytes left, its CRC made
// correct), so inputs get past the checksum and reach the payload decoder; without it, the
// bytes are read as they are (damaged lengths, checksum mismatches).
//
// Properties checked (a failure traps, and libFuzzer saves the input):
// - reading never traps, and a record's ranges stay inside the input and move forward;
// - a payload that decodes re-encodes to exactly the same bytes (the format is canonical);
// - the vouching scan and the segment-header reader never trap.
// Crashers go to Fuzz/Regressions/fuzz-log-record/, which ReliabilityTests replays.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogRecord(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let mode = bytes.removeFirst()
    if mode & 1 == 1 { sealRecords(&bytes) }
    checkSegmentBody(bytes)
    return 0
}

/// Clamps each record's length to the bytes left and writes its correct CRC.
func sealRecords(_ bytes: inout [UInt8]) {
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

func checkSegmentBody(_ bytes: [UInt8]) {
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
                precondition(next == offset + LogFormat.sealSize && next <= raw.count, "seal range out of bounds")
                offset = next
            case let .record(version, _, payload, next):
                precondition(payload.lowerBound == offset + LogFormat.recordHeaderSize, "payload starts off its header")
                precondition(payload.upperBound == next && next <= raw.count && next > offset, "record range out of bounds")
                checkPayload(UnsafeRawBufferPointer(rebasing: raw[payload]), version: version)
                offset = next
            }
        }
        _ = try? LogRecordReader.readSegmentHeader(raw, file: "fuzz")
        checkPayload(raw, version: 1)
    }
}

/// A payload that decodes must re-encode to the same bytes.
///
/// Payloads whose operation count is larger than their size allows (every operation takes at
/// least 12 bytes) are left out: `decodePayload` reserves room for min(count, 2^20)
/// operations before it reads one (tens of MB per call, a finding reported to the engine's
/// owner), which would slow the fuzzer to a few hundred runs a second.
func checkPayload(_ payload: UnsafeRawBufferPointer, version: UInt64) {
    if payload.count >= 4 {
        let count = Int(payload[0]) | Int(payload[1]) << 8 | Int(payload[2]) << 16 | Int(payload[3]) << 24
        if count > payload.count / 12 { return }
    }
    guard let commit = LogRecordCodec.decodePayload(payload, version: version) else { return }
    var writer = ByteWriter()
    LogRecordCodec.encode(commit, durableVersion: 0, into: &writer)
    precondition(Array(writer.bytes[LogFormat.recordHeaderSize...]) == Array(payload),
                 "a decoded payload re-encodes to different bytes")
}
