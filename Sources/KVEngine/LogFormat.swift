import CLMDB
#if canImport(Glibc)
import Glibc
#endif

// The write-ahead log's on-disk format, shared by the writer and the reader.
// Docs/LogFormat.md has the grammar, a worked example and the recovery rules.
// Every constant here is FROZEN: changing one breaks every existing store.
// LogFormatTests pins the exact bytes.
//
// A segment file is named after the commit version of its first record:
// `wal/00000000000000000042.log`. It is created at its full size (its capacity, a whole
// number of KiB: `Store.Options.segmentSize`, or more for a batch that needs more) and
// starts with a 32-byte header:
//
//    0               8          12         16                 24         28         32
//   +---------------+----------+----------+------------------+----------+----------+
//   | magic         | format   | capacity | first version    | crc32c   | reserved |
//   | "CAIRNWAL"    | u32 = 2  | u32, KiB | u64              | of 0..<24| u32 = 0  |
//   +---------------+----------+----------+------------------+----------+----------+
//
// Then records, back to back, one per commit, in commit-version order (consecutive), and
// after the last record nothing but zeros up to the capacity:
//
//    0          4          8                  16                 24
//   +----------+----------+------------------+------------------+--------------------+
//   | crc32c   | length   | commit version   | durable version  | payload            |
//   | of 4..end| u32      | u64              | u64              | `length` bytes     |
//   +----------+----------+------------------+------------------+--------------------+
//
// `durable version` is the highest commit version known to be fdatasync'd when the record
// was written. Recovery uses it to tell a torn tail (damage no later record vouches for)
// from corruption (a later record proves the damaged one had been synced).
//
// A record of length 0 is a seal: "this segment is finished; the segment whose first
// version is `commit version` exists". It is written (and synced) only after that next
// segment was created durably, so a newest segment that ends in a seal proves a segment
// was lost. Every segment keeps room for one seal (24 bytes) at its end.
//
// The file's size never changes after it is synced with the header, before the first
// record, so a truncated segment that holds a record is always damage, even one cut exactly
// at a record boundary. (A newest segment that holds none is an interrupted creation.)
//
// The payload is the batch, all integers little-endian:
//
//   payload   := op-count:u32  op*
//   op        := kind:u8  table-len:u8  table  key-len:u16  key  record-version:u64  [value]
//   value     := value-len:u32  bytes          (only when kind = 1, 3 or 4, a put)
//   kind      := 1 put | 2 delete | 3 put over a tombstone
//              | 4 unversioned put | 5 unversioned delete
//
// `record-version` is the version the record has after this op (puts), or the version it
// had when deleted (deletes), so replay never has to read before it writes. A delete leaves
// a tombstone in LMDB; kind 3 marks a put that replaces one, so the applier can keep the
// count of live records exact without reading first. A put at the commit version
// (`WriteBatch.putAtCommitVersion`) is an ordinary put here: its key, the record's commit
// version big-endian, is filled in before the group is encoded. Kinds 4 and 5 carry no
// version (the field is 0): a put stores version 0, a delete removes the LMDB entry and leaves
// no tombstone. Logs without them read as before.

package enum LogFormat {
    static let segmentMagic: [UInt8] = Array("CAIRNWAL".utf8)
    static let formatVersion: UInt32 = 2
    package static let segmentHeaderSize = 32
    package static let recordHeaderSize = 24
    /// A seal is a bare record header.
    package static let sealSize = recordHeaderSize
    /// Capacities are whole KiB; the header stores KiB.
    static let capacityUnit = 1024
    /// The largest capacity the header can state.
    static let maxCapacity = Int(UInt32.max) * capacityUnit
    /// The largest payload one record may have. A length beyond it is damage, not data.
    package static let maxPayloadSize = 1 << 30
    static let putKind: UInt8 = 1
    static let deleteKind: UInt8 = 2
    static let putOverTombstoneKind: UInt8 = 3
    static let unversionedPutKind: UInt8 = 4
    static let unversionedDeleteKind: UInt8 = 5
    static let segmentSuffix = ".log"

    /// The kind byte an operation is logged with.
    @inline(__always)
    static func kind(of operation: UnsafePointer<LoggedOperation>) -> UInt8 {
        if operation.pointee.isUnversioned {
            return operation.pointee.value == nil ? unversionedDeleteKind : unversionedPutKind
        }
        return operation.pointee.value == nil ? deleteKind
            : operation.pointee.replacesTombstone ? putOverTombstoneKind : putKind
    }

    package static func segmentName(firstVersion: UInt64) -> String {
        String(firstVersion).leftPadded(to: 20) + segmentSuffix
    }

    static func firstVersion(ofSegmentNamed name: String) -> UInt64? {
        guard name.hasSuffix(segmentSuffix) else { return nil }
        let digits = name.dropLast(segmentSuffix.count)
        guard digits.count == 20, digits.allSatisfy(\.isASCII) else { return nil }
        return UInt64(digits)
    }
}

package func crc32c(_ bytes: UnsafeRawBufferPointer, extending crc: UInt32 = 0) -> UInt32 {
    cairn_crc32c_extend(crc, bytes.baseAddress, bytes.count)
}

package func crc32c(_ bytes: [UInt8], extending crc: UInt32 = 0) -> UInt32 {
    bytes.withUnsafeBytes { crc32c($0, extending: crc) }
}

/// Little-endian encoding into a growing byte array.
package struct ByteWriter {
    package var bytes: [UInt8] = []

    package init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    @inline(__always) package mutating func u8(_ value: UInt8) { bytes.append(value) }
    package mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    package mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    package mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    package mutating func raw(_ value: [UInt8]) { bytes.append(contentsOf: value) }

    package mutating func patchU32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for index in 0..<4 { bytes[offset + index] = raw[index] }
        }
    }
}

/// Little-endian decoding with bounds checks; a short read is a typed failure, not a trap.
package struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    package private(set) var offset: Int

    package init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    package var remaining: Int { bytes.count - offset }

    @inline(__always) package mutating func u8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inline(__always) package mutating func u16() -> UInt16? { integer(UInt16.self) }
    @inline(__always) package mutating func u32() -> UInt32? { integer(UInt32.self) }
    @inline(__always) package mutating func u64() -> UInt64? { integer(UInt64.self) }

    package mutating func raw(_ count: Int) -> [UInt8]? {
        // From a buffer, one memcpy: `Array` over a slice copied byte by byte through an
        // iterator (and `init(unsafeUninitializedCapacity:)` looks the storage's metadata up).
        rawBytes(count).map { Array($0) }
    }

    /// The next `count` bytes in place, valid as long as the buffer read.
    @inline(__always) package mutating func rawBytes(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    @inline(__always) private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { return nil }
        defer { offset += size }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

/// One operation as logged: the outcome of a batch operation once its version is known.
package struct LoggedOperation: Sendable, Equatable {
    package var table: String
    package var key: [UInt8]
    /// The record's version after a put, or the version it had when deleted.
    package var recordVersion: UInt64
    /// The new value, or nil for a delete.
    package var value: [UInt8]?
    /// A put whose key held a tombstone (or is deleted earlier in the log, which leaves one).
    package var replacesTombstone: Bool
    /// Written without a record version (`WriteBatch.putUnversioned`/`deleteUnversioned`):
    /// a put stores version 0, a delete removes the entry outright, leaving no tombstone.
    package var isUnversioned: Bool
    /// The key's `TableKey` digest, when the commit path already hashed it: the overlay's
    /// publish and prune take it instead of hashing the key again; operations read from the
    /// log get it as they are decoded. Not logged (a digest is keyed by a seed per process)
    /// and not part of equality. 0: none (a real digest of 0 is only hashed again).
    let digest: UInt64

    /// The operation's key as the overlay's dictionary key, from the kept digest if any.
    var tableKey: TableKey { TableKey(table: table, key: key, digest: digest) }

    package static func == (lhs: LoggedOperation, rhs: LoggedOperation) -> Bool {
        lhs.table == rhs.table && lhs.key == rhs.key && lhs.recordVersion == rhs.recordVersion
            && lhs.value == rhs.value && lhs.replacesTombstone == rhs.replacesTombstone
            && lhs.isUnversioned == rhs.isUnversioned
    }
}

// The initializers live in an extension, so the struct keeps its memberwise initializer: the
// commit path makes every operation it logs with that one, its fields already consistent. A
// declared initializer, even inlined, had each operation built twice and copied between the
// two, retaining and releasing its table, key and value (BatchEvaluation.swift).
extension LoggedOperation {
    /// An operation with no digest; an unversioned one's version is 0, and only a versioned
    /// put replaces a tombstone.
    package init(table: String, key: [UInt8], recordVersion: UInt64, value: [UInt8]?, replacesTombstone: Bool = false,
                 isUnversioned: Bool = false) {
        self.init(table: table, key: key, recordVersion: isUnversioned ? 0 : recordVersion, value: value,
                  replacesTombstone: replacesTombstone && value != nil && !isUnversioned, isUnversioned: isUnversioned,
                  digest: 0)
    }
}

/// One commit: its version and its operations.
package struct LoggedCommit: Sendable, Equatable {
    package let version: UInt64
    package let operations: [LoggedOperation]
    /// The payload size, to size buffers and bound the overlay. Kept, not computed on each
    /// use: counting it reads every operation's key and value, which for a large commit are
    /// out of the cache by the time the log writer (twice) and the applier ask.
    package let payloadSize: Int

    package init(version: UInt64, operations: [LoggedOperation]) {
        self.init(version: version, operations: operations,
                  payloadSize: operations.reduce(4) { $0 + LoggedCommit.size(of: $1) })
    }

    /// `payloadSize`: exactly what `init(version:operations:)` would count (the encoder
    /// checks it against the bytes it wrote).
    init(version: UInt64, operations: [LoggedOperation], payloadSize: Int) {
        self.version = version
        self.operations = operations
        self.payloadSize = payloadSize
    }

    /// What `operation` adds to a payload.
    @inline(__always)
    static func size(of operation: LoggedOperation) -> Int {
        size(tableBytes: operation.table.utf8.count, keyBytes: operation.key.count, valueBytes: operation.value?.count)
    }

    /// What an operation adds to a payload, from its parts' sizes (`valueBytes` nil: a delete).
    @inline(__always)
    static func size(tableBytes: Int, keyBytes: Int, valueBytes: Int?) -> Int {
        1 + 1 + tableBytes + 2 + keyBytes + 8 + (valueBytes.map { 4 + $0 } ?? 0)
    }

    package static func == (lhs: LoggedCommit, rhs: LoggedCommit) -> Bool {
        lhs.version == rhs.version && lhs.operations == rhs.operations
    }
}

package enum LogRecordCodec {
    /// Appends one record for `commit` to `writer`.
    ///
    /// The record's size is known in advance (`payloadSize`), so the bytes are stored
    /// through one pointer rather than appended piece by piece: a bulk load encodes
    /// hundreds of megabytes here.
    package static func encode(_ commit: LoggedCommit, durableVersion: UInt64, into writer: inout ByteWriter) {
        let start = writer.bytes.count
        let length = commit.payloadSize
        writer.bytes.append(contentsOf: repeatElement(0, count: LogFormat.recordHeaderSize + length))
        writer.bytes.withUnsafeMutableBytes { buffer in
            let raw = UnsafeMutableRawBufferPointer(rebasing: buffer[start...])
            var cursor = RecordCursor(raw: raw, offset: 4)
            cursor.store(UInt32(length))
            cursor.store(commit.version)
            cursor.store(durableVersion)
            cursor.store(UInt32(commit.operations.count))
            // The operations are read in place through a pointer: iterating the array copied
            // each one out, retaining and releasing its key and value.
            commit.operations.withUnsafeBufferPointer { operations in
                for index in operations.indices {
                    let operation = operations.baseAddress! + index
                    cursor.store(LogFormat.kind(of: operation))
                    cursor.store(UInt8(operation.pointee.table.utf8.count))
                    if operation.pointee.table.utf8.withContiguousStorageIfAvailable({ cursor.copy(UnsafeRawBufferPointer($0)) }) == nil {
                        Array(operation.pointee.table.utf8).withUnsafeBytes { cursor.copy($0) }
                    }
                    cursor.store(UInt16(operation.pointee.key.count))
                    operation.pointee.key.withUnsafeBytes { cursor.copy($0) }
                    cursor.store(operation.pointee.recordVersion)
                    if operation.pointee.value != nil {
                        cursor.store(UInt32(operation.pointee.value!.count))
                        operation.pointee.value!.withUnsafeBytes { cursor.copy($0) }
                    }
                }
            }
            precondition(cursor.offset == LogFormat.recordHeaderSize + length, "payloadSize disagrees with the encoding")
            let crc = crc32c(UnsafeRawBufferPointer(rebasing: raw[4..<cursor.offset]))
            raw.storeBytes(of: crc.littleEndian, toByteOffset: 0, as: UInt32.self)
        }
    }

    /// Where `encode` writes next in a record's bytes. A struct the encoder owns, not local
    /// functions capturing the offset: a captured variable was checked for exclusive access at
    /// run time on each write, 16 checks of about 76 instructions each for a one-record commit
    /// (5% of a `commit-1` commit's instructions).
    private struct RecordCursor {
        let raw: UnsafeMutableRawBufferPointer
        var offset: Int

        @inline(__always)
        mutating func store<T: FixedWidthInteger>(_ value: T) {
            raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
            offset += MemoryLayout<T>.size
        }

        /// Table names and keys are mostly 4 to 32 bytes: those are copied in line, as two
        /// overlapping loads and stores of 4, 8 or 16 bytes, not a call to `memcpy` through
        /// the PLT, twice per operation.
        @inline(__always)
        mutating func copy(_ bytes: UnsafeRawBufferPointer) {
            let count = bytes.count
            guard let source = bytes.baseAddress, count > 0 else { return }
            let destination = raw.baseAddress! + offset
            if count > 32 || count < 4 {
                destination.copyMemory(from: source, byteCount: count)
            } else if count > 16 {
                RecordCursor.copyEnds(SIMD2<UInt64>.self, from: source, to: destination, count: count)
            } else if count >= 8 {
                RecordCursor.copyEnds(UInt64.self, from: source, to: destination, count: count)
            } else {
                RecordCursor.copyEnds(UInt32.self, from: source, to: destination, count: count)
            }
            offset += count
        }

        /// Copies `count` bytes, at least one `Word` and at most two, as the first and the
        /// last `Word` (overlapping when `count` is less than two).
        @inline(__always)
        private static func copyEnds<Word: BitwiseCopyable>(
            _: Word.Type, from source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int
        ) {
            let tail = count - MemoryLayout<Word>.size
            let first = source.loadUnaligned(as: Word.self)
            let last = source.loadUnaligned(fromByteOffset: tail, as: Word.self)
            destination.storeBytes(of: first, as: Word.self)
            destination.storeBytes(of: last, toByteOffset: tail, as: Word.self)
        }
    }

    /// Decodes a payload; nil when it is malformed (a record whose CRC passed but whose
    /// payload does not parse can only come from a bug, and is reported as corruption).
    package static func decodePayload(_ payload: UnsafeRawBufferPointer, version: UInt64) -> LoggedCommit? {
        var names = TableNames()
        return decodePayload(payload, version: version, names: &names)
    }

    /// `decodePayload`, taking the table names from `names` (and adding to it): records mostly
    /// name a table seen before. Each operation carries its key's digest, hashed here from the
    /// table's cached seed, so that an overlay neither hashes the table name per key nor the key
    /// twice (publish, then prune). A reader following the log decodes straight into its
    /// overlay's writes instead (`OverlayInserts.appendDecoded`).
    package static func decodePayload(_ payload: UnsafeRawBufferPointer, version: UInt64,
                                      names: inout TableNames) -> LoggedCommit? {
        var operations: [LoggedOperation] = []
        // The count is untrusted until the operations parse: every operation takes at
        // least 12 bytes of payload, so reserve no more than the payload can hold.
        if payload.count >= 4 {
            let count = Int(UInt32(littleEndian: payload.loadUnaligned(as: UInt32.self)))
            operations.reserveCapacity(min(count, payload.count / 12))
        }
        let parsed = forEachOperation(payload, names: &names) { table, seed, kind, keyBytes, recordVersion, value in
            operations.append(LoggedOperation(table: table, key: Array(keyBytes), recordVersion: recordVersion,
                                              value: value.map { Array($0) },
                                              replacesTombstone: kind == LogFormat.putOverTombstoneKind,
                                              isUnversioned: kind == LogFormat.unversionedPutKind || kind == LogFormat.unversionedDeleteKind,
                                              digest: seed.finalize(keyBytes, rounds: 1, finalRounds: 3)))
        }
        guard parsed else { return nil }
        return LoggedCommit(version: version, operations: operations, payloadSize: payload.count)
    }

    /// Parses a payload and calls `body` with each operation's table (and its digest seed), kind,
    /// key, record version and value (nil for a delete), in place; false when the payload is
    /// malformed (`body` may have been called for the operations before the damage).
    @inline(__always)
    static func forEachOperation(
        _ payload: UnsafeRawBufferPointer, names: inout TableNames,
        _ body: (String, SipHash, UInt8, UnsafeRawBufferPointer, UInt64, UnsafeRawBufferPointer?) -> Void
    ) -> Bool {
        var reader = ByteReader(payload)
        guard let count = reader.u32() else { return false }
        for _ in 0..<count {
            guard let kind = reader.u8(), (LogFormat.putKind...LogFormat.unversionedDeleteKind).contains(kind),
                  let tableLength = reader.u8(), let tableBytes = reader.rawBytes(Int(tableLength)),
                  let (table, seed) = names.nameAndSeed(tableBytes),
                  let keyLength = reader.u16(), let keyBytes = reader.rawBytes(Int(keyLength)),
                  let recordVersion = reader.u64()
            else { return false }
            var value: UnsafeRawBufferPointer? = nil
            if kind != LogFormat.deleteKind && kind != LogFormat.unversionedDeleteKind {
                guard let valueLength = reader.u32(), let bytes = reader.rawBytes(Int(valueLength)) else { return false }
                value = bytes
            }
            // An unversioned op's record-version field is written as 0; any other value is damage.
            let isUnversioned = kind == LogFormat.unversionedPutKind || kind == LogFormat.unversionedDeleteKind
            if isUnversioned && recordVersion != 0 { return false }
            body(table, seed, kind, keyBytes, recordVersion, value)
        }
        return reader.remaining == 0
    }

    /// The header for a segment of `capacity` bytes (a whole number of KiB) whose first
    /// record will have `firstVersion`.
    package static func segmentHeader(firstVersion: UInt64, capacity: Int) -> [UInt8] {
        precondition(capacity % LogFormat.capacityUnit == 0 && capacity <= LogFormat.maxCapacity)
        var writer = ByteWriter(capacity: LogFormat.segmentHeaderSize)
        writer.raw(LogFormat.segmentMagic)
        writer.u32(LogFormat.formatVersion)
        writer.u32(UInt32(capacity / LogFormat.capacityUnit))
        writer.u64(firstVersion)
        writer.u32(crc32c(writer.bytes))
        writer.u32(0)
        return writer.bytes
    }

    /// The seal that ends a segment whose successor starts at `nextVersion`.
    package static func seal(nextVersion: UInt64, durableVersion: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: LogFormat.sealSize)
        writer.u32(0)
        writer.u32(0)
        writer.u64(nextVersion)
        writer.u64(durableVersion)
        writer.patchU32(crc32c(Array(writer.bytes[4...])), at: 0)
        return writer.bytes
    }
}

/// The table names a decoder met last, so that a name it meets again is neither validated as
/// UTF-8 nor allocated again: that cost about 1,000 instructions an operation, a third of
/// decoding a one-record commit.
package struct TableNames {
    // Three fields, not an optional tuple: unwrapping the tuple copied it whole (retaining
    // the bytes and the name) for every operation.
    private var lastBytes: [UInt8] = []
    private var lastName: String? = nil
    private var lastSeed = SipHash(key: SipHash.processKey)

    package init() {}

    /// `bytes` as a table name, with its digest seed (`TableKey.seed`): the last one's when
    /// the bytes are its, else validated and hashed; nil when they are not UTF-8.
    @inline(__always)
    mutating func nameAndSeed(_ bytes: UnsafeRawBufferPointer) -> (name: String, seed: SipHash)? {
        if let lastName, lastBytes.count == bytes.count,
           lastBytes.withUnsafeBytes({ bytes.count == 0 || memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
            return (lastName, lastSeed)
        }
        guard let name = String(validating: bytes, as: UTF8.self) else { return nil }
        lastBytes = Array(bytes)
        lastName = name
        lastSeed = TableKey.seed(name)
        return (name, lastSeed)
    }
}

/// The outcome of reading one record at an offset.
package enum RecordRead {
    /// A whole record whose CRC holds.
    case record(version: UInt64, durableVersion: UInt64, payload: Range<Int>, next: Int)
    /// A seal whose CRC holds: the segment starting at `nextVersion` follows this one.
    case seal(nextVersion: UInt64, durableVersion: UInt64, next: Int)
    /// The records end here: the file ends, or only zeros follow.
    case end
    /// Something is wrong at this offset; `reason` says what.
    case damaged(reason: String)
}

package enum LogRecordReader {
    /// Reads the record at `offset` of a segment's bytes.
    package static func read(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> RecordRead {
        let available = bytes.count - offset
        if available == 0 { return .end }
        if firstNonZero(bytes, from: offset, to: min(bytes.count, offset + LogFormat.recordHeaderSize)) == nil {
            // Zeros where a record header would be: the end, if only zeros follow.
            if let nonZero = firstNonZero(bytes, from: offset + LogFormat.recordHeaderSize, to: bytes.count) {
                return .damaged(reason: "a zeroed record header, but non-zero bytes follow at offset \(nonZero)")
            }
            return .end
        }
        guard available >= LogFormat.recordHeaderSize else {
            return .damaged(reason: "\(available) bytes left, less than a record header")
        }
        var reader = ByteReader(bytes, offset: offset)
        let storedCRC = reader.u32()!
        let length = Int(reader.u32()!)
        let version = reader.u64()!
        let durableVersion = reader.u64()!
        guard length <= LogFormat.maxPayloadSize else {
            return .damaged(reason: "record length \(length) exceeds the limit of \(LogFormat.maxPayloadSize)")
        }
        guard length <= available - LogFormat.recordHeaderSize else {
            return .damaged(reason: "record length \(length) runs past the end of the file")
        }
        let end = offset + LogFormat.recordHeaderSize + length
        let actualCRC = crc32c(UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<end]))
        guard actualCRC == storedCRC else {
            return .damaged(reason: "record checksum mismatch")
        }
        if length == 0 {
            return .seal(nextVersion: version, durableVersion: durableVersion, next: end)
        }
        return .record(
            version: version, durableVersion: durableVersion,
            payload: (offset + LogFormat.recordHeaderSize)..<end, next: end)
    }

    /// The offset of the first non-zero byte in `start..<end`, if any.
    package static func firstNonZero(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int? {
        var index = start
        // Eight bytes at a time: recovery checks megabytes of zeros after the last record.
        while index + 8 <= end {
            if bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) != 0 { break }
            index += 8
        }
        while index < end {
            if bytes[index] != 0 { return index }
            index += 1
        }
        return nil
    }

    /// The offset just past the last non-zero byte before `end`, or `start` if all are zero.
    package static func endOfNonZero(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        var index = end
        while index > start && bytes[index - 1] == 0 { index -= 1 }
        return index
    }

    /// Checks a segment header; returns the first version and the capacity it announces.
    package static func readSegmentHeader(_ bytes: UnsafeRawBufferPointer, file: String) throws(KVError)
        -> (firstVersion: UInt64, capacity: Int)
    {
        guard bytes.count >= LogFormat.segmentHeaderSize else {
            throw KVError.wrongFormat(file: file, reason: "\(bytes.count) bytes, shorter than a log segment header")
        }
        guard Array(bytes[0..<8]) == LogFormat.segmentMagic else {
            throw KVError.wrongFormat(file: file, reason: "wrong magic: not a Cairn log segment, or its header is damaged")
        }
        var reader = ByteReader(bytes, offset: 8)
        let format = reader.u32()!
        let capacity = Int(reader.u32()!) * LogFormat.capacityUnit
        let firstVersion = reader.u64()!
        let storedCRC = reader.u32()!
        guard storedCRC == crc32c(UnsafeRawBufferPointer(rebasing: bytes[0..<24])) else {
            throw KVError.wrongFormat(file: file, reason: "damaged log segment header: checksum mismatch")
        }
        guard format == LogFormat.formatVersion else {
            throw KVError.wrongFormat(file: file, reason: "not a log segment of this Cairn version: unknown log format version \(format)")
        }
        guard capacity >= LogFormat.segmentHeaderSize + LogFormat.sealSize else {
            throw KVError.wrongFormat(file: file, reason: "damaged log segment header: capacity \(capacity) bytes is too small")
        }
        return (firstVersion, capacity)
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps a typed error typed.
    @inline(__always)
    package func withBytes<Result, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> Result) throws(Failure) -> Result {
        let outcome: Swift.Result<Result, Failure> = withUnsafeBytes { raw in
            Swift.Result { () throws(Failure) -> Result in try body(raw) }
        }
        return try outcome.get()
    }
}
