// Reading the log back: on open (replay what LMDB has not applied, cut a torn tail) and
// for `check` (verify without changing anything).
//
// Torn tail or corruption? The log is only ever appended, and a group's records reach the
// disk with one fdatasync, so a crash can damage only records that were never synced,
// at the end of the last segment. Each record carries the version that was durable when
// it was written. A damaged record is therefore a torn tail unless some later record in
// the same segment says the damaged one had been synced; then it is corruption.
// Sealed segments were synced before the next one was created, so damage there is
// corruption, except in a segment that LMDB has wholly applied, which nothing needs.

/// How opening treats a damaged log record that is not a torn tail.
public enum RecoveryMode: Sendable, Hashable {
    /// Refuse to open: `KVError.corruptLog` names the file and offset. The default.
    case strict
    /// Keep every commit before the damage, cut the log there, and report what was cut.
    /// Commits after the damage are lost, acknowledged or not.
    case recoverToLastGoodRecord
}

/// A cut made to the log on open.
public struct LogCut: Sendable, Hashable, CustomStringConvertible {
    /// The segment file that was cut.
    public var file: String
    /// Where the cut was made; everything from here on was dropped.
    public var offset: Int
    /// How many bytes were dropped from this file.
    public var bytesDropped: Int
    /// What was wrong at `offset`.
    public var reason: String

    public var description: String {
        "\(file) cut at offset \(offset) (\(bytesDropped) bytes dropped): \(reason)"
    }
}

/// What opening did to bring LMDB up to date with the log.
public struct RecoveryReport: Sendable, Hashable {
    /// Commits replayed from the log into LMDB.
    public var replayedCommits = 0
    /// Log bytes replayed.
    public var replayedBytes = 0
    /// The store's commit version after recovery.
    public var lastVersion: UInt64 = 0
    /// A torn tail that was cut off (a crash mid-append of unacknowledged commits).
    public var tornTail: LogCut?
    /// A cut before the tail, made only under `.recoverToLastGoodRecord`.
    public var corruptionCut: LogCut?
    /// Segment files removed: torn creations, and those after a corruption cut.
    public var removedSegments: [String] = []
    /// Damage found in segments LMDB had wholly applied (harmless; they are retired).
    public var damageInAppliedSegments: [String] = []

    public init() {}
}

struct LogSegment {
    var firstVersion: UInt64
    var name: String
    var size: Int
}

/// Scans the log directory in commit order.
struct LogScanner {
    let fileSystem: any FileSystem
    let directory: String
    let appliedVersion: UInt64
    let mode: RecoveryMode
    /// Whether the scan may change files (open) or only report (check).
    let repair: Bool

    /// Calls `visit` with every good record, in order; returns the report and the
    /// segments that remain.
    func scan(_ visit: (UInt64, UnsafeRawBufferPointer) throws(KVError) -> Void) throws(KVError)
        -> (report: RecoveryReport, segments: [LogSegment], lastLogVersion: UInt64?)
    {
        var report = RecoveryReport()
        var segments = try fileSystem.contentsOfDirectory(directory)
            .compactMap { name in LogFormat.firstVersion(ofSegmentNamed: name).map { LogSegment(firstVersion: $0, name: name, size: 0) } }
            .sorted { $0.firstVersion < $1.firstVersion }
        var expected: UInt64? = nil
        var kept: [LogSegment] = []
        var index = 0
        scanning: while index < segments.count {
            let segment = segments[index]
            let isLast = index == segments.count - 1
            let path = directory + "/" + segment.name
            let file = try fileSystem.open(path, create: false)
            defer { file.close() }
            let bytes = try file.read(at: 0, count: try file.size())
            // The WAL rule holds in recovery too: after a process crash the page cache may
            // hold records that were never synced; they go to LMDB only once they are on disk.
            if repair && bytes.count > LogFormat.segmentHeaderSize { try file.sync() }
            // A segment shorter than its header is a creation the crash interrupted.
            if bytes.count <= LogFormat.segmentHeaderSize, isLast,
               (try? bytes.withBytes({ (raw) throws(KVError) in try LogRecordReader.readSegmentHeader(raw, file: path) })) == nil {
                if repair { try fileSystem.remove(path); try fileSystem.syncDirectory(directory) }
                report.removedSegments.append(segment.name)
                break
            }
            let headerVersion = try bytes.withBytes { (raw) throws(KVError) in
                try LogRecordReader.readSegmentHeader(raw, file: path)
            }
            guard headerVersion == segment.firstVersion else {
                throw KVError.corruptLog(file: path, offset: 16,
                    reason: "header says first version \(headerVersion), file name says \(segment.firstVersion)")
            }
            if let expected, segment.firstVersion != expected {
                // A gap is fine only where LMDB already holds the missing versions.
                guard segment.firstVersion > expected, segment.firstVersion - 1 <= appliedVersion else {
                    throw KVError.corruptLog(file: path, offset: 0,
                        reason: "log gap: version \(expected) expected, segment starts at \(segment.firstVersion)")
                }
            } else if expected == nil, segment.firstVersion > appliedVersion + 1 {
                throw KVError.corruptLog(file: path, offset: 0,
                    reason: "log starts at version \(segment.firstVersion) but LMDB holds only through \(appliedVersion)")
            }
            expected = segment.firstVersion
            var offset = LogFormat.segmentHeaderSize
            var damage: String? = nil
            try bytes.withBytes { (raw) throws(KVError) in
                while damage == nil {
                    switch LogRecordReader.read(raw, at: offset) {
                    case .end:
                        return
                    case let .record(version, _, payload, next):
                        guard version == expected! else {
                            damage = "record has version \(version), \(expected!) expected"
                            return
                        }
                        try visit(version, UnsafeRawBufferPointer(rebasing: raw[payload]))
                        expected! += 1
                        offset = next
                    case .damaged(let reason):
                        damage = reason
                    }
                }
            }
            guard let damage else {
                kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: bytes.count))
                index += 1
                continue
            }
            let cut = LogCut(file: path, offset: offset, bytesDropped: bytes.count - offset, reason: damage)
            let vouched = bytes.withUnsafeBytes { LogScanner.laterRecordVouches($0, after: offset, for: expected!) }
            if isLast && !vouched {
                if repair { try file.truncate(to: offset); try file.sync() }
                report.tornTail = cut
                kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: offset))
                break scanning
            }
            if !isLast, segments[index + 1].firstVersion - 1 <= appliedVersion {
                report.damageInAppliedSegments.append("\(cut)")
                kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: bytes.count))
                expected = segments[index + 1].firstVersion
                index += 1
                continue
            }
            guard mode == .recoverToLastGoodRecord else {
                throw KVError.corruptLog(file: path, offset: offset, reason: damage)
            }
            if repair { try file.truncate(to: offset); try file.sync() }
            report.corruptionCut = cut
            kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: offset))
            for later in segments[(index + 1)...] {
                if repair { try fileSystem.remove(directory + "/" + later.name) }
                report.removedSegments.append(later.name)
            }
            if repair { try fileSystem.syncDirectory(directory) }
            segments.removeSubrange((index + 1)...)
            break
        }
        let lastLogVersion = expected.map { $0 - 1 }
        return (report, kept, lastLogVersion)
    }

    /// Whether a good record after `offset` proves that version `expected` had been synced.
    static func laterRecordVouches(_ bytes: UnsafeRawBufferPointer, after offset: Int, for expected: UInt64) -> Bool {
        var candidate = offset + 1
        let lastStart = bytes.count - LogFormat.recordHeaderSize
        guard candidate <= lastStart else { return false }
        let maxVersion = expected + UInt64(bytes.count / LogFormat.recordHeaderSize)
        while candidate <= lastStart {
            // Cheap filters first: a plausible version, vouching for `expected`.
            let version = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: candidate + 8, as: UInt64.self))
            let durable = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: candidate + 16, as: UInt64.self))
            if version > expected, version <= maxVersion, durable >= expected, durable < version,
               case .record = LogRecordReader.read(bytes, at: candidate) {
                return true
            }
            candidate += 1
        }
        return false
    }
}
