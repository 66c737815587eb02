import KVEngine
#if canImport(Glibc)
import Glibc
#endif

// libFuzzer target: a whole store opened on a log built from the input, through the public
// API only (no `package` access): recovery's scan, its torn-tail/corruption decisions, the
// payload decoder and replay into LMDB, then reads of everything that opened.
//
// The input is turned into segment files with valid framing most of the time, so that the
// fuzzer explores recovery rather than bouncing off checksums:
//
//   input   := options:u8  record*
//   record  := flags:u8  length:u16  versionDelta:i8  durableDelta:i8  body[length]
//
//   options bit 0: `.recoverToLastGoodRecord` (else `.strict`)
//           bit 1: leave the last segment short of its capacity (cut)
//   flags   bit 0: wrong CRC         bit 1: start a new segment here
//           bit 2: wrong header CRC  bit 3: write only part of the record (torn)
//           bit 4: body is a description of operations, encoded as a valid payload
//           bit 5: end the segment with a seal naming the next version
//
// Each segment is padded with zeros to its capacity (the records' size plus room for a
// seal, rounded up to a KiB), as the writer creates them.
//
// Versions follow the previous record's plus `versionDelta`; the durable version is
// version − 1 + `durableDelta`. The format is written out here a second time (its own
// CRC32C and encoder), independently of the engine's code, as Docs/LogFormat.md describes.
//
// Property: opening and reading either work or throw a typed `KVError`; never a trap, a
// hang or a memory error. Crashers go to Fuzz/Regressions/fuzz-log-segment/.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogSegment(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    SegmentFuzzing.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

enum SegmentFuzzing {
    /// A scratch directory on tmpfs when there is one: every run syncs files.
    static let root: String = {
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        var template = Array("\(base)/cairn-fuzz-segment-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed: errno \(errno)") }
        // libFuzzer ends with exit(): leave no directory behind on tmpfs.
        atexit { removeTree(SegmentFuzzing.root) }
        return String(cString: made)
    }()

    /// The data file of a freshly created, empty store.
    static let emptyDataFile: [UInt8] = {
        let directory = root + "/template"
        do {
            var creating = options(recover: false)
            creating.createIfMissing = true
            let store = try Store(directory: directory, options: creating)
            store.close()
        } catch {
            fatalError("cannot create the template store: \(error)")
        }
        return readFile(directory + "/data.mdb")
    }()

    static func options(recover: Bool) -> Store.Options {
        var options = Store.Options()
        options.mapSize = 8 << 20
        options.maxReaders = 8
        options.createIfMissing = false
        options.recovery = recover ? .recoverToLastGoodRecord : .strict
        options.applyInterval = 3600
        options.applyThreshold = Int.max
        return options
    }

    static func run(_ input: [UInt8]) {
        let directory = root + "/run"
        removeTree(directory)
        mkdir(directory, 0o700)
        mkdir(directory + "/wal", 0o700)
        writeFile(directory + "/data.mdb", emptyDataFile)
        for (name, bytes) in segments(from: input) { writeFile(directory + "/wal/" + name, bytes) }
        let store: Store
        do {
            store = try Store(directory: directory, options: options(recover: input[0] & 1 == 1))
        } catch {
            return  // a typed error: fine
        }
        defer { store.close() }
        do {
            let stats = try store.stats()
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for table in stats.recordsPerTable.keys {
                try snapshot.forEach(in: table) { _, _, _ in true }
            }
        } catch {
            return
        }
    }

    /// Segment files (name, bytes) described by the input.
    static func segments(from input: [UInt8]) -> [(String, [UInt8])] {
        var segments: [(String, [UInt8])] = []
        var current: [UInt8] = []
        var name = ""
        var firstVersion: UInt64 = 0
        var badHeader = false
        var version: UInt64 = 0
        var offset = 1
        func finishSegment(cut: Bool) {
            guard !name.isEmpty else { return }
            let capacity = (32 + current.count + 24 + 1023) / 1024 * 1024
            var file = Array("CAIRNWAL".utf8)
            append32(&file, 2)
            append32(&file, UInt32(capacity / 1024))
            append64(&file, firstVersion)
            append32(&file, crc32c(file) ^ (badHeader ? 1 : 0))
            append32(&file, 0)
            file += current
            if !cut { file += [UInt8](repeating: 0, count: capacity - file.count) }
            segments.append((name, file))
        }
        func startSegment(at first: UInt64, badCRC: Bool) {
            finishSegment(cut: false)
            name = String(first).leftPadded(20) + ".log"
            firstVersion = first
            badHeader = badCRC
            current = []
        }
        while input.count - offset >= 5 {
            let flags = input[offset]
            let length = min(Int(input[offset + 1]) | Int(input[offset + 2]) << 8, input.count - offset - 5)
            let versionDelta = Int64(Int8(bitPattern: input[offset + 3]))
            let durableDelta = Int64(Int8(bitPattern: input[offset + 4]))
            let body = Array(input[(offset + 5)..<(offset + 5 + length)])
            offset += 5 + length
            version = UInt64(max(1, Int64(version) + 1 + (versionDelta == -128 ? 0 : versionDelta % 4)))
            if name.isEmpty || flags & 2 != 0 { startSegment(at: version, badCRC: flags & 4 != 0) }
            let payload = flags & 16 != 0 ? encodedOperations(body) : body
            current += record(version: version, durable: UInt64(max(0, Int64(version) - 1 + durableDelta % 3)),
                              payload: payload, badCRC: flags & 1 != 0, torn: flags & 8 != 0)
            if flags & 32 != 0 {
                // A seal: a record of length 0 naming the next segment's first version.
                current += record(version: version + 1, durable: version, payload: [], badCRC: false, torn: false)
            }
        }
        finishSegment(cut: input[0] & 2 != 0)
        return segments
    }

    static func record(version: UInt64, durable: UInt64, payload: [UInt8], badCRC: Bool, torn: Bool) -> [UInt8] {
        var record: [UInt8] = []
        append32(&record, 0)
        append32(&record, UInt32(payload.count))
        append64(&record, version)
        append64(&record, durable)
        record += payload
        let crc = record[4...].withUnsafeBytes { crc32c($0) } ^ (badCRC ? 0x10 : 0)
        for index in 0..<4 { record[index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
        if torn { record.removeLast(record.count / 2) }
        return record
    }

    /// A valid payload from a description: each operation takes a kind, a table choice, a
    /// key length and a value length from the description's bytes, filling from what follows.
    static func encodedOperations(_ description: [UInt8]) -> [UInt8] {
        var operations: [[UInt8]] = []
        var index = 0
        func next() -> UInt8 {
            defer { index += 1 }
            return index < description.count ? description[index] : 0
        }
        while index < description.count && operations.count < 64 {
            let kind = next() % 3 + 1
            let table = ["default", "t", "u", "__cairn_meta", ""][Int(next() % 5)]
            let keyLength = Int(next() % 24)
            let key = (0..<keyLength).map { _ in next() }
            let recordVersion = UInt64(next())
            var operation: [UInt8] = [kind, UInt8(table.utf8.count)] + Array(table.utf8)
            operation += [UInt8(keyLength), 0] + key
            append64(&operation, recordVersion)
            if kind != 2 {
                let valueLength = Int(next() % 64)
                append32(&operation, UInt32(valueLength))
                operation += (0..<valueLength).map { _ in next() }
            }
            operations.append(operation)
        }
        var payload: [UInt8] = []
        append32(&payload, UInt32(operations.count))
        for operation in operations { payload += operation }
        return payload
    }
}

// MARK: The format, written out a second time

func append32(_ bytes: inout [UInt8], _ value: UInt32) {
    for index in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(index)))) }
}

func append64(_ bytes: inout [UInt8], _ value: UInt64) {
    for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as the log uses.
func crc32c(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { crc32c($0) } }

func crc32c(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc = crc32cTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
    }
    return crc ^ 0xFFFF_FFFF
}

let crc32cTable: [UInt32] = (0..<256).map { index -> UInt32 in
    var value = UInt32(index)
    for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ 0x82F6_3B78 : value >> 1 }
    return value
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

func readFile(_ path: String) -> [UInt8] {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return [] }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { break }
        bytes += buffer[..<count]
    }
    return bytes
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard descriptor >= 0 else { fatalError("cannot write \(path): errno \(errno)") }
    defer { close(descriptor) }
    var done = 0
    while done < bytes.count {
        let wrote = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + done, $0.count - done) }
        guard wrote > 0 else { fatalError("cannot write \(path): errno \(errno)") }
        done += wrote
    }
}

func removeTree(_ path: String) {
    guard let directory = opendir(path) else {
        unlink(path)
        return
    }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        if name == "." || name == ".." { continue }
        if entry.pointee.d_type == UInt8(DT_DIR) { removeTree(path + "/" + name) } else { unlink(path + "/" + name) }
    }
    closedir(directory)
    rmdir(path)
}
