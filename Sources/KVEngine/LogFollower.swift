#if canImport(Glibc)
import Glibc
#endif

// A read-only store's position in the writer's log: where the next commit version starts,
// so that a refresh reads only the bytes appended since the last one.
//
// The follower keeps its segment open: a checkpoint (or the writer's applier) may delete the
// file, and the open descriptor still reads it. When the segment the next version lives in
// is already gone, LMDB holds that version (only wholly applied segments are retired), and
// the store moves the follower past LMDB's applied version instead (`restart(after:)`).

/// Reads commits from the log, in version order, from one remembered position on.
///
/// Guarded by `StoreCore.follower`'s lock.
struct LogFollower {
    let fileSystem: any FileSystem
    let directory: String
    /// The next commit version to read.
    private(set) var nextVersion: UInt64
    /// The open segment the next version is in (or after).
    private var segment: (file: any LogFile, name: String)?
    /// Where the next record starts in `segment`. Apart from it, so stepping from one record
    /// to the next copies (and retains) neither the file nor its name.
    private var offset = 0
    /// The writer generation whose log this position belongs to (`PublishedProgress`).
    var generation: UInt64
    /// Log records read since open (decoded or stepped over), for the stats and the tests of
    /// "a refresh reads only what is new".
    private(set) var recordsRead = 0
    /// The table names of the commits decoded so far.
    private var names = TableNames()
    /// The writer's published page, whose marks say where records start (`LogMark`).
    let marks: PublishedProgress?

    /// How much the first read of a refresh asks for: a paced reader usually finds a few small
    /// commits. Each further read of the same refresh asks for twice as much, up to `maxChunk`
    /// (a longer record is read whole, see `fill`): a follower entering a long segment at its
    /// start (a new reader, a restart) steps over every record up to LMDB's applied version, and
    /// reads of 4 KiB made that a system call and an array per twenty-odd records.
    static let chunk = 4 << 10
    static let maxChunk = 256 << 10

    init(fileSystem: any FileSystem, directory: String, after version: UInt64, generation: UInt64,
         marks: PublishedProgress? = nil) {
        self.fileSystem = fileSystem
        self.directory = directory
        self.marks = marks
        self.nextVersion = version + 1
        self.generation = generation
    }

    /// Forgets the position: the next read starts with the commit after `version` (LMDB's
    /// applied version, when the follower's segment was retired or the writer reopened).
    mutating func restart(after version: UInt64, generation: UInt64) {
        segment?.file.close()
        segment = nil
        nextVersion = version + 1
        self.generation = generation
    }

    func close() { segment?.file.close() }

    /// What a read found.
    enum Outcome {
        /// Every commit through the limit was read (or the log has no more yet).
        case read
        /// No segment holds the next version any more: LMDB has it; restart after LMDB's
        /// applied version.
        case retired
    }

    /// Reads the commits from `nextVersion` through `limit` and appends the overlay writes of
    /// each one above `skipping` to `inserts` (those at or below it are in LMDB already:
    /// stepped over, not decoded). Stops early, without error, where the log has nothing more yet. Throws
    /// `corruptLog` for a record that fails its checks before `limit` (acknowledged bytes
    /// never change), unless `limit` is `.max`: then everything intact is read, and damage is
    /// taken as the end (a crashed writer's torn tail, which the next writer cuts).
    mutating func read(through limit: UInt64, skipping applied: UInt64,
                       into inserts: inout OverlayInserts, arrays: ByteArrayPool) throws(KVError) -> Outcome {
        var buffer: [UInt8] = []
        var bufferStart = 0
        var chunk = LogFollower.chunk
        while nextVersion <= limit {
            if segment == nil {
                guard try locate() else { return .retired }
            }
            guard let open = segment else { return .read }
            try fill(&buffer, from: &bufferStart, chunk: &chunk, file: open.file)
            // The records the buffer holds whole, read in place, until one runs past its end.
            let stop = try buffer.withBytes { (bytes) throws(KVError) -> Stop in
                while nextVersion <= limit {
                    let at = offset - bufferStart
                    // The buffer's first record was filled as far as the file has it: parsed even
                    // when short, to report what is wrong with it.
                    if at > 0 && !Self.holdsWholeRecord(bytes, at: at) { return .refill }
                    switch LogRecordReader.read(bytes, at: at) {
                    case .end:
                        return .done
                    case .seal(let next, _, _):
                        return .seal(next: next)
                    case .damaged(let reason):
                        if limit == .max { return .done }
                        throw KVError.corruptLog(file: directory + "/" + open.name, offset: offset,
                                                 reason: "\(reason), reading acknowledged commit \(nextVersion)")
                    case .record(let version, _, let payload, let next):
                        recordsRead += 1
                        if version > nextVersion {
                            if limit == .max { return .done }
                            throw KVError.corruptLog(file: directory + "/" + open.name, offset: offset,
                                                     reason: "record of version \(version) where commit \(nextVersion) was expected")
                        }
                        if version == nextVersion {
                            if version > limit { return .done }
                            if version > applied {
                                guard inserts.appendDecoded(UnsafeRawBufferPointer(rebasing: bytes[payload]),
                                                            version: version, names: &names, arrays: arrays) else {
                                    throw KVError.corruptLog(file: directory + "/" + open.name, offset: offset,
                                                             reason: "record of version \(version) passed its checksum but does not decode")
                                }
                            }
                            nextVersion += 1
                        }
                        // Versions below `nextVersion`: a segment entered at its start, stepped over.
                        offset = bufferStart + next
                    }
                }
                return .done
            }
            switch stop {
            case .done:
                return .read
            case .refill:
                continue
            case .seal(let next):
                open.file.close()
                segment = nil
                // The buffered bytes are this segment's, and the next one's first record sits at
                // the offset this one's did: kept, they were read as the next segment's.
                buffer = []
                bufferStart = 0
                // The next segment starts at the version after the last record here.
                if next != nextVersion {
                    throw KVError.corruptLog(file: directory + "/" + open.name, offset: offset,
                                             reason: "a seal names segment \(next), but the next commit is \(nextVersion)")
                }
            }
        }
        return .read
    }

    /// Where `read` stops reading records in place.
    private enum Stop {
        /// Through the limit, or to the end of the log (or, for a writer that never published,
        /// its first damage).
        case done
        /// The next record runs past the buffer's end.
        case refill
        /// The segment is sealed; the next one starts at `next`.
        case seal(next: UInt64)
    }

    /// Reads the bytes from `offset` into `buffer`, unless it holds the record there whole: at
    /// least `chunk` bytes (doubled for the next read, up to `maxChunk`), and the whole record
    /// once its header gives its length. Fewer only where the file ends.
    private func fill(_ buffer: inout [UInt8], from bufferStart: inout Int, chunk: inout Int,
                      file: any LogFile) throws(KVError) {
        // Twice at most: once for the header, once more for a record longer than the chunk.
        for _ in 0..<2 {
            let at = offset - bufferStart
            var needed = LogFormat.recordHeaderSize
            if at >= 0, let length = Self.recordLength(buffer, at: at) {
                if at + needed + length <= buffer.count || length > LogFormat.maxPayloadSize { return }
                needed += length
            }
            let count = max(chunk, needed)
            buffer = try file.read(at: offset, count: count)
            bufferStart = offset
            chunk = min(chunk * 2, LogFollower.maxChunk)
            if buffer.count < count { return }
        }
    }

    /// Whether the record at `offset` of `bytes` is there whole (or its length is damage
    /// already, which parsing reports): false when its header or its payload runs past the end.
    private static func holdsWholeRecord(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        guard offset + LogFormat.recordHeaderSize <= bytes.count else { return false }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        return length > LogFormat.maxPayloadSize || offset + LogFormat.recordHeaderSize + length <= bytes.count
    }

    /// The length field of the record header at `offset` of `buffer`, if the header is there.
    private static func recordLength(_ buffer: [UInt8], at offset: Int) -> Int? {
        guard offset + LogFormat.recordHeaderSize <= buffer.count else { return nil }
        return buffer.withUnsafeBytes { Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))) }
    }

    /// Whether a whole record of `version` whose checksum holds starts at `offset` of `file`:
    /// a mark is trusted only then (a mark read while the writer rewrote its slot is skipped, but
    /// the check costs one read, once per segment entered).
    private static func holdsRecord(of version: UInt64, in file: any LogFile, at offset: Int) throws(KVError) -> Bool {
        var bytes = try file.read(at: offset, count: chunk)
        if let length = recordLength(bytes, at: 0), length <= LogFormat.maxPayloadSize,
           LogFormat.recordHeaderSize + length > bytes.count {
            bytes = try file.read(at: offset, count: LogFormat.recordHeaderSize + length)
        }
        guard case .record(let found, _, _, _) = bytes.withUnsafeBytes({ LogRecordReader.read($0, at: 0) }) else { return false }
        return found == version
    }

    /// Opens the segment holding `nextVersion`: the newest whose first version is at or below
    /// it. Returns false when there is none (every segment that could hold it was retired),
    /// true otherwise, with `segment` nil when no segment has started yet.
    private mutating func locate() throws(KVError) -> Bool {
        // A retirement may delete a listed segment before it is opened: list again.
        for _ in 0..<8 {
            let firsts = try fileSystem.contentsOfDirectory(directory).compactMap(LogFormat.firstVersion(ofSegmentNamed:)).sorted()
            guard let first = firsts.last(where: { $0 <= nextVersion }) else {
                // Nothing at or below: retired, unless no segment exists at all yet.
                return firsts.isEmpty
            }
            let name = LogFormat.segmentName(firstVersion: first)
            let file: any LogFile
            do throws(KVError) {
                file = try fileSystem.open(directory + "/" + name, create: false)
            } catch .io(let code, _, _) where code == ENOENT {
                continue
            }
            let header = try file.read(at: 0, count: LogFormat.segmentHeaderSize)
            do throws(KVError) {
                let (firstVersion, _) = try header.withBytes { (bytes) throws(KVError) in
                    try LogRecordReader.readSegmentHeader(bytes, file: directory + "/" + name)
                }
                guard firstVersion == first else {
                    throw KVError.wrongFormat(file: directory + "/" + name,
                                              reason: "segment header says first version \(firstVersion)")
                }
            } catch {
                file.close()
                // A segment created a moment ago may not have its header yet: nothing to read.
                if header.allSatisfy({ $0 == 0 }) { return true }
                throw error
            }
            segment = (file, name)
            offset = LogFormat.segmentHeaderSize
            // Nearer the next version, when the writer marked a record at or below it there.
            if let mark = marks?.bestMark(generation: generation, segment: first, atOrBelow: nextVersion),
               try Self.holdsRecord(of: mark.version, in: file, at: mark.offset) {
                offset = mark.offset
            }
            return true
        }
        return false
    }
}
