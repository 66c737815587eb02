/// Appends commits to the active log segment, syncs them, rotates and retires segments.
///
/// Guarded by `StoreCore.log`'s lock: the commit leader appends, the applier syncs before
/// it applies (the WAL rule: LMDB never gets a commit the log has not made durable), and
/// checkpoints rotate and retire.
struct LogWriter {
    let fileSystem: any FileSystem
    let directory: String
    let segmentLimit: Int

    /// Segments by first commit version, oldest first; the last one is active.
    private(set) var segments: [(firstVersion: UInt64, name: String, size: Int)]
    private var active: any LogFile
    /// The newest commit version appended.
    private(set) var writtenVersion: UInt64
    /// The newest commit version known to be on disk (fdatasync'd).
    private(set) var durableVersion: UInt64
    /// The first I/O failure; it poisons every later append until the store is reopened.
    private(set) var failure: KVError?
    private(set) var syncCount = 0
    private(set) var appendCount = 0
    private var buffer = ByteWriter()

    /// Starts a fresh active segment whose first record will be `nextVersion`, keeping
    /// `retained` (older segments still to be retired).
    init(fileSystem: any FileSystem, directory: String, segmentLimit: Int, nextVersion: UInt64,
         retained: [(firstVersion: UInt64, name: String, size: Int)]) throws(KVError) {
        self.fileSystem = fileSystem
        self.directory = directory
        self.segmentLimit = segmentLimit
        self.writtenVersion = nextVersion - 1
        self.durableVersion = nextVersion - 1
        self.segments = retained.filter { $0.firstVersion != nextVersion }
        self.active = try LogWriter.createSegment(fileSystem, directory, firstVersion: nextVersion)
        segments.append((nextVersion, LogFormat.segmentName(firstVersion: nextVersion), LogFormat.segmentHeaderSize))
    }

    /// Creates a segment durably: header written and synced, directory entry synced.
    static func createSegment(_ fileSystem: any FileSystem, _ directory: String, firstVersion: UInt64) throws(KVError) -> any LogFile {
        let path = directory + "/" + LogFormat.segmentName(firstVersion: firstVersion)
        let file = try fileSystem.open(path, create: true)
        do throws(KVError) {
            try file.truncate(to: 0)
            try LogRecordCodec.segmentHeader(firstVersion: firstVersion).withBytes { (raw) throws(KVError) in
                try file.append(raw)
            }
            try file.sync()
            try fileSystem.syncDirectory(directory)
        } catch {
            file.close()
            throw error
        }
        return file
    }

    var logBytes: Int { segments.reduce(0) { $0 + $1.size } }

    /// Appends `commits` in one write, then syncs once when `sync` is true.
    mutating func append(_ commits: [LoggedCommit], sync: Bool) throws(KVError) {
        if let failure { throw KVError.poisoning(failure) }
        guard let first = commits.first else { return }
        if segments[segments.count - 1].size >= segmentLimit {
            try rotate(nextVersion: first.version)
        }
        buffer.bytes.removeAll(keepingCapacity: true)
        buffer.bytes.reserveCapacity(commits.reduce(0) { $0 + LogFormat.recordHeaderSize + $1.payloadSize })
        for commit in commits {
            LogRecordCodec.encode(commit, durableVersion: durableVersion, into: &buffer)
        }
        do throws(KVError) {
            try buffer.bytes.withBytes { (raw) throws(KVError) in try active.append(raw) }
            appendCount += 1
            segments[segments.count - 1].size += buffer.bytes.count
            writtenVersion = commits[commits.count - 1].version
            if sync { try syncActive() }
        } catch {
            failure = error
            throw error
        }
        if buffer.bytes.capacity > 16 << 20 { buffer = ByteWriter() }
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

    /// Seals the active segment (synced) and starts a new one at `nextVersion`.
    mutating func rotate(nextVersion: UInt64) throws(KVError) {
        if let failure { throw KVError.poisoning(failure) }
        do throws(KVError) {
            if durableVersion < writtenVersion { try syncActive() }
            let file = try LogWriter.createSegment(fileSystem, directory, firstVersion: nextVersion)
            active.close()
            active = file
            segments.append((nextVersion, LogFormat.segmentName(firstVersion: nextVersion), LogFormat.segmentHeaderSize))
        } catch {
            failure = error
            throw error
        }
    }

    /// Whether the active segment holds any record.
    var activeHasRecords: Bool { segments[segments.count - 1].size > LogFormat.segmentHeaderSize }

    /// Deletes the sealed segments whose every record is at or below `appliedVersion`.
    /// Returns how many segments and bytes went.
    mutating func retire(appliedThrough appliedVersion: UInt64) throws(KVError) -> (segments: Int, bytes: Int) {
        var removed = 0, bytes = 0
        while segments.count > 1, segments[1].firstVersion - 1 <= appliedVersion {
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
