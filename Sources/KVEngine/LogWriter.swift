/// Appends commits to the active log segment, syncs them, rotates and retires segments.
///
/// Guarded by `StoreCore.log`'s lock: the commit leader appends, the applier syncs before
/// it applies (the WAL rule: LMDB never gets a commit the log has not made durable), and
/// checkpoints rotate and retire.
struct LogWriter {
    let fileSystem: any FileSystem
    let directory: String
    let segmentLimit: Int

    /// Segments by first commit version, oldest first; the last one is active. `size` is
    /// how many bytes hold the header and records (and a seal), not the file's capacity.
    private(set) var segments: [(firstVersion: UInt64, name: String, size: Int)]
    private var active: any LogFile
    /// The active segment's file size, fixed at creation.
    private var activeCapacity: Int
    /// The active segment's bytes up to here were written (with records or zeros) since it
    /// was created; beyond, the file is a hole that a write must allocate.
    private var activeZeroedThrough: Int
    /// The newest commit version appended.
    private(set) var writtenVersion: UInt64
    /// The newest commit version known to be on disk (fdatasync'd).
    private(set) var durableVersion: UInt64
    /// The first I/O failure; it poisons every later append until the store is reopened.
    private(set) var failure: KVError?
    private(set) var syncCount = 0
    private(set) var appendCount = 0
    private var buffer = ByteWriter()
    /// The segment and offset of the last mark taken for readers (`LogMark`), the mark the
    /// last append took if the caller has not published it yet, and how many were taken before.
    private var marked: (segment: UInt64, offset: Int) = (0, 0)
    private var pendingMark: LogMark?
    private var marksTaken = 0

    /// How far ahead of the records an append writes zeros. The blocks are then allocated
    /// and written before the records that land in them, so the fdatasync of those records
    /// has data to flush but no block allocation to journal (about 20% of a small commit's
    /// sync on ext4); the allocation is paid once per this many bytes.
    static let zeroFillAhead = 1 << 20

    /// How much of a new segment its creation writes (header, then zeros), before the sync
    /// it already makes: the first appends, and a first large one (which writes no zeros
    /// ahead), land in blocks already allocated and written. The first small append would
    /// write these zeros anyway.
    static func zeroedAtCreation(capacity: Int) -> Int { min(capacity, zeroFillAhead) }

    /// Starts a fresh active segment whose first record will be `nextVersion`, keeping
    /// `retained` (older segments still to be retired, as recovery left them). The newest of
    /// them gets a seal if it has none, now that a successor exists.
    ///
    /// `interrupted` is a newest segment whose creation or growth a crash interrupted
    /// (holding nothing). When it starts at `nextVersion`, the new segment is created over
    /// it; it is not deleted first, since a power failure between the two would leave a
    /// sealed predecessor naming a missing segment. Otherwise it is deleted.
    init(fileSystem: any FileSystem, directory: String, segmentLimit: Int, nextVersion: UInt64,
         retained: [LogSegment], interrupted: LogSegment? = nil) throws(KVError) {
        self.fileSystem = fileSystem
        self.directory = directory
        self.segmentLimit = segmentLimit
        self.writtenVersion = nextVersion - 1
        self.durableVersion = nextVersion - 1
        self.segments = retained.filter { $0.firstVersion != nextVersion }.map { ($0.firstVersion, $0.name, $0.size) }
        if let interrupted, interrupted.firstVersion != nextVersion {
            try fileSystem.remove(directory + "/" + interrupted.name)
            try fileSystem.syncDirectory(directory)
        }
        let capacity = LogWriter.capacity(needing: 0, limit: segmentLimit)
        self.active = try LogWriter.createSegment(fileSystem, directory, firstVersion: nextVersion, capacity: capacity)
        self.activeCapacity = capacity
        self.activeZeroedThrough = LogWriter.zeroedAtCreation(capacity: capacity)
        if let newest = retained.last, !newest.sealed, newest.firstVersion != nextVersion,
           newest.size + LogFormat.sealSize <= newest.capacity {
            do throws(KVError) {
                let file = try fileSystem.open(directory + "/" + newest.name, create: false)
                defer { file.close() }
                try LogWriter.writeSeal(file, at: newest.size, nextVersion: nextVersion, durableVersion: durableVersion)
            } catch {
                active.close()
                throw error
            }
            segments[segments.count - 1].size += LogFormat.sealSize
        }
        segments.append((nextVersion, LogFormat.segmentName(firstVersion: nextVersion), LogFormat.segmentHeaderSize))
    }

    /// A writer that cannot write: the store opened for reading only (`failure`, a full
    /// disk). Every append, sync and rotation throws `failure`, poisoned; `retained` are the
    /// segments as the scan found them, for the stats.
    init(unavailable failure: KVError, fileSystem: any FileSystem, directory: String, segmentLimit: Int,
         lastVersion: UInt64, retained: [LogSegment]) {
        self.fileSystem = fileSystem
        self.directory = directory
        self.segmentLimit = segmentLimit
        self.writtenVersion = lastVersion
        self.durableVersion = lastVersion
        self.segments = retained.map { ($0.firstVersion, $0.name, $0.size) }
        self.active = UnavailableLogFile(failure: failure)
        self.activeCapacity = 0
        self.activeZeroedThrough = 0
        self.failure = failure
    }

    /// The capacity of a new segment that must hold `needing` bytes of records: the limit,
    /// or more, with room for the header and a seal, in whole KiB.
    static func capacity(needing: Int, limit: Int) -> Int {
        let bytes = max(limit, LogFormat.segmentHeaderSize + needing + LogFormat.sealSize)
        let unit = LogFormat.capacityUnit
        return min(LogFormat.maxCapacity, (bytes + unit - 1) / unit * unit)
    }

    /// Creates a segment durably at its full size: header and zeros written through
    /// `zeroedAtCreation(capacity:)`, file extended to `capacity` (the rest a hole, reading
    /// as zeros), all synced, directory entry synced.
    static func createSegment(_ fileSystem: any FileSystem, _ directory: String, firstVersion: UInt64,
                              capacity: Int) throws(KVError) -> any LogFile {
        let path = directory + "/" + LogFormat.segmentName(firstVersion: firstVersion)
        let existed = fileSystem.exists(path)
        let file = try fileSystem.open(path, create: true)
        do throws(KVError) {
            if existed {
                // Created again over a segment a crash left without records (its predecessor's
                // seal may name it): never shorter than the smallest capacity at any moment, so
                // that a segment shorter than that is one whose first creation was interrupted,
                // or damage (`LogScanner.completedCreation`). What the old file held is zeroed.
                try file.truncate(to: LogFormat.capacityUnit)
                try [UInt8](repeating: 0, count: LogFormat.capacityUnit).withBytes { (raw) throws(KVError) in
                    try file.write(raw, at: 0)
                }
            } else {
                try file.truncate(to: 0)
            }
            let header = LogRecordCodec.segmentHeader(firstVersion: firstVersion, capacity: capacity)
            var start = [UInt8](repeating: 0, count: zeroedAtCreation(capacity: capacity))
            start.replaceSubrange(0..<header.count, with: header)
            try start.withBytes { (raw) throws(KVError) in
                try file.write(raw, at: 0)
            }
            try file.truncate(to: capacity)
            try file.sync()
            try fileSystem.syncDirectory(directory)
        } catch {
            file.close()
            throw error
        }
        return file
    }

    /// Writes and syncs a seal at `offset`: the segment starting at `nextVersion` exists.
    static func writeSeal(_ file: any LogFile, at offset: Int, nextVersion: UInt64, durableVersion: UInt64) throws(KVError) {
        try LogRecordCodec.seal(nextVersion: nextVersion, durableVersion: durableVersion).withBytes { (raw) throws(KVError) in
            try file.write(raw, at: offset)
        }
        try file.sync()
    }

    var logBytes: Int { segments.reduce(0) { $0 + $1.size } }

    /// Appends `commits` in one write, then syncs once when `sync` is true.
    mutating func append(_ commits: [LoggedCommit], sync: Bool) throws(KVError) {
        if let failure { throw KVError.poisoning(failure) }
        guard let first = commits.first else { return }
        let needed = commits.reduce(0) { $0 + LogFormat.recordHeaderSize + $1.payloadSize }
        if segments[segments.count - 1].size + needed + LogFormat.sealSize > activeCapacity {
            // Full: a new segment, large enough for this append.
            try rotate(nextVersion: first.version, needing: needed)
        }
        let offset = segments[segments.count - 1].size
        buffer.bytes.removeAll(keepingCapacity: true)
        let fillsAhead = needed < LogWriter.zeroFillAhead / 16
        buffer.bytes.reserveCapacity(needed + (fillsAhead ? LogWriter.zeroFillAhead : 0))
        for commit in commits {
            LogRecordCodec.encode(commit, durableVersion: durableVersion, into: &buffer)
        }
        // Zeros ahead of the records, in the same write (see `zeroFillAhead`), for appends
        // small enough that the zeros serve many later ones; a large append allocates its
        // own blocks anyway, and zeros after it would double what it writes and syncs.
        let recordsEnd = offset + buffer.bytes.count
        if recordsEnd > activeZeroedThrough && fillsAhead {
            let fillEnd = min(activeCapacity, recordsEnd + LogWriter.zeroFillAhead)
            buffer.bytes.append(contentsOf: [UInt8](repeating: 0, count: fillEnd - recordsEnd))
        }
        do throws(KVError) {
            try buffer.bytes.withBytes { (raw) throws(KVError) in try active.write(raw, at: offset) }
            appendCount += 1
            activeZeroedThrough = max(activeZeroedThrough, offset + buffer.bytes.count)
            segments[segments.count - 1].size = recordsEnd
            writtenVersion = commits[commits.count - 1].version
            takeMarkIfDue(version: first.version, offset: offset)
            if sync { try syncActive() }
        } catch {
            failure = error
            throw error
        }
        if buffer.bytes.capacity > 16 << 20 { buffer = ByteWriter() }
    }

    /// Marks the append of `version` at `offset` of the active segment for readers when
    /// `LogMark.stride` bytes of it passed since its last mark (or its start).
    private mutating func takeMarkIfDue(version: UInt64, offset: Int) {
        let segment = segments[segments.count - 1].firstVersion
        if marked.segment != segment { marked = (segment, LogFormat.segmentHeaderSize) }
        guard offset - marked.offset >= LogMark.stride else { return }
        marked.offset = offset
        pendingMark = LogMark(version: version, segment: segment, offset: offset)
    }

    /// The mark the last append took, once, with how many were taken before it (its slot).
    mutating func takeMark() -> (mark: LogMark, count: Int)? {
        guard let mark = pendingMark else { return nil }
        pendingMark = nil
        marksTaken += 1
        return (mark, marksTaken - 1)
    }

    /// Makes the log durable through `version` (no-op when it already is).
    mutating func sync(through version: UInt64) throws(KVError) {
        if let failure { throw KVError.poisoning(failure) }
        guard durableVersion < min(version, writtenVersion) else { return }
        do { try syncActive() } catch {
            failure = error
            throw error
        }
    }

    private mutating func syncActive() throws(KVError) {
        try active.sync()
        syncCount += 1
        durableVersion = writtenVersion
    }

    /// Starts a new active segment at `nextVersion` with room for `needing` bytes of
    /// records, and seals the old one (synced) once the new one exists. An active segment
    /// without records grows in place instead.
    mutating func rotate(nextVersion: UInt64, needing: Int = 0) throws(KVError) {
        if let failure { throw KVError.poisoning(failure) }
        do throws(KVError) {
            if durableVersion < writtenVersion { try syncActive() }
            let capacity = LogWriter.capacity(needing: needing, limit: segmentLimit)
            guard activeHasRecords else {
                // Its first version is `nextVersion` too. Growing it in place keeps the file a
                // sealed predecessor names; a crash midway leaves a record-less newest
                // segment, which recovery removes and reports.
                guard capacity > activeCapacity else { return }
                try active.truncate(to: capacity)
                try LogRecordCodec.segmentHeader(firstVersion: nextVersion, capacity: capacity).withBytes { (raw) throws(KVError) in
                    try active.write(raw, at: 0)
                }
                try active.sync()
                activeCapacity = capacity
                return
            }
            let file = try LogWriter.createSegment(fileSystem, directory, firstVersion: nextVersion, capacity: capacity)
            do throws(KVError) {
                try LogWriter.writeSeal(active, at: segments[segments.count - 1].size,
                                        nextVersion: nextVersion, durableVersion: durableVersion)
            } catch {
                file.close()
                throw error
            }
            segments[segments.count - 1].size += LogFormat.sealSize
            active.close()
            active = file
            activeCapacity = capacity
            activeZeroedThrough = LogWriter.zeroedAtCreation(capacity: capacity)
            segments.append((nextVersion, LogFormat.segmentName(firstVersion: nextVersion), LogFormat.segmentHeaderSize))
        } catch {
            failure = error
            throw error
        }
    }

    /// Whether the active segment holds any record.
    var activeHasRecords: Bool { (segments.last?.size ?? 0) > LogFormat.segmentHeaderSize }

    /// Deletes the sealed segments whose every record is at or below `appliedVersion`,
    /// except the active segment's predecessor: its seal is the witness that the active
    /// segment exists, so that losing the active segment cannot go unnoticed.
    /// Returns how many segments and bytes went.
    mutating func retire(appliedThrough appliedVersion: UInt64) throws(KVError) -> (segments: Int, bytes: Int) {
        var removed = 0, bytes = 0
        while segments.count > 2, segments[1].firstVersion - 1 <= appliedVersion {
            try fileSystem.remove(directory + "/" + segments[0].name)
            bytes += segments[0].size
            segments.removeFirst()
            removed += 1
        }
        if removed > 0 { try fileSystem.syncDirectory(directory) }
        return (removed, bytes)
    }

    /// Closes the active file without syncing (a clean close syncs through the applier).
    func close() { active.close() }
}

/// The active file of a writer that cannot write (`LogWriter.init(unavailable:)`); never
/// reached, since the writer's failure is checked first, and throws its failure if it is.
final class UnavailableLogFile: LogFile, @unchecked Sendable {
    let failure: KVError
    init(failure: KVError) { self.failure = failure }
    func size() throws(KVError) -> Int { throw failure }
    func dataEnd() throws(KVError) -> Int { throw failure }
    func read(at offset: Int, count: Int) throws(KVError) -> [UInt8] { throw failure }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(KVError) { throw failure }
    func truncate(to length: Int) throws(KVError) { throw failure }
    func sync() throws(KVError) { throw failure }
    func close() {}
}
