// Reading the log back: on open (replay what LMDB has not applied, cut a torn tail) and
// for `check` (verify without changing anything).
//
// Torn tail or corruption? Records are written one after the other into a segment created
// at its full size, and a group's records reach the disk with one fdatasync, so a crash
// can damage only records that were never synced, at the end of the last segment. Each
// record carries the version that was durable when it was written. A damaged record is
// therefore a torn tail unless some later record in the same segment says the damaged one
// had been synced; then it is corruption.
// Older segments were synced before the next one was created, so damage there is
// corruption, unless nothing needs what it hides: a segment LMDB has wholly applied, or
// damage after a segment's last record when the next segment starts with the very next
// version (a seal torn by a crash).
// A segment whose file is shorter than its capacity was cut by something other than a
// crash (the size is synced at creation): corruption, even at a record boundary. A newest
// segment that ends in a seal lost its successor: corruption too.

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
    /// The first commit version the log no longer holds from here on.
    public var firstDroppedVersion: UInt64? = nil
    /// The newest version of any intact record (or seal) found past the cut, in the rest of
    /// the file and in the segments after it; nil when none is (the damage, or the lost
    /// file, hides how far the log went).
    public var lastSeenVersion: UInt64? = nil
    /// LMDB's applied version: commits at or below it are kept whatever the log lost.
    public var appliedVersion: UInt64 = 0

    /// The commit versions the cut loses for good (LMDB does not hold them), as far as the
    /// log shows: nil when none is known to be lost.
    public var lostVersions: ClosedRange<UInt64>? {
        guard let first = firstDroppedVersion, let last = lastSeenVersion else { return nil }
        let lost = max(first, appliedVersion + 1)
        return lost <= last ? lost...last : nil
    }

    /// Whether LMDB alone holds every commit the cut drops: true when every intact record
    /// past it is at or below LMDB's applied version, nil when nothing past it shows.
    public var lmdbHoldsEveryDroppedCommit: Bool? {
        guard firstDroppedVersion != nil else { return nil }
        guard let last = lastSeenVersion else { return nil }
        return last <= appliedVersion
    }

    /// What the cut drops, in words.
    public var loss: String {
        guard let first = firstDroppedVersion else { return "nothing LMDB lacks is known to be lost" }
        let holds = "LMDB holds every commit through version \(appliedVersion)"
        switch (lastSeenVersion, lostVersions) {
        case (nil, _):
            return "drops the log from version \(first) on; \(holds); nothing intact past the damage shows whether later commits existed: any there were are lost"
        case (let last?, nil):
            return "drops log records from version \(first) through at least \(last), all of them already in LMDB (\(holds)): no commit is lost"
        case (_, let lost?):
            let count = lost.upperBound - lost.lowerBound + 1
            return "drops log records from version \(first) on; \(holds), so commits \(lost.lowerBound) through \(lost.upperBound) (\(count)) are lost, with any after \(lost.upperBound) the damage hides"
        }
    }

    public var description: String {
        "\(file) cut at offset \(offset) (\(bytesDropped) bytes dropped): \(reason); \(loss)"
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
    /// Segment files discarded: a newest segment whose creation or growth was interrupted
    /// (created afresh by the writer under the same name, or deleted), and those after a
    /// corruption cut (deleted).
    public var removedSegments: [String] = []
    /// Damage that lost no commit: in segments LMDB had wholly applied (they are retired),
    /// after a segment's last record where the next segment continues (a torn seal), or
    /// bytes past a segment's capacity (trimmed).
    public var harmlessDamage: [String] = []
    /// Set when the store opened for reading only, with the error that made it: the disk
    /// is full, so opening could neither replay the log into LMDB nor start a log segment.
    /// Reads see every commit (what LMDB lacks is read from the log into memory,
    /// `commitsHeldInMemory`); every commit, flush and checkpoint throws (commits
    /// `KVError.poisoned` with this error). Nothing on disk was changed. Reopen once space
    /// is free.
    public var openedReadOnly: KVError?
    /// Commits read from the log into memory but not into LMDB (only when `openedReadOnly`).
    public var commitsHeldInMemory = 0
    /// What an interrupted creation had left (a data file shorter than LMDB's meta pages
    /// and no log record), when opening found one and created the store again.
    public var creationRedone: String?

    public init() {}
}

struct LogSegment {
    var firstVersion: UInt64
    var name: String
    /// Bytes of header and records (and seal): where the next write would go.
    var size: Int
    var capacity: Int = 0
    /// Whether the segment ends in a seal.
    var sealed = false
}

/// Scans the log directory in commit order.
package struct LogScanner {
    let fileSystem: any FileSystem
    let directory: String
    let appliedVersion: UInt64
    let mode: RecoveryMode
    /// Whether the scan may change files (open) or only report (check).
    let repair: Bool
    /// Whether the store's log was started (LMDB says so): then it cannot be empty.
    var logStarted = false

    /// Calls `visit` with every good record, in order; returns the report, the segments that
    /// remain, and the newest segment when its creation was interrupted (changed by nothing
    /// here: see `LogWriter.init(interrupted:)`).
    func scan(_ visit: (UInt64, UnsafeRawBufferPointer) throws(KVError) -> Void) throws(KVError)
        -> (report: RecoveryReport, segments: [LogSegment], lastLogVersion: UInt64?, interrupted: LogSegment?)
    {
        var report = RecoveryReport()
        var interrupted: LogSegment? = nil
        var segments = try fileSystem.contentsOfDirectory(directory)
            .compactMap { name in LogFormat.firstVersion(ofSegmentNamed: name).map { LogSegment(firstVersion: $0, name: name, size: 0) } }
            .sorted { $0.firstVersion < $1.firstVersion }
        if segments.isEmpty && logStarted {
            // The writer always keeps a segment; none at all means they were deleted.
            let reason = "the log has no segment, but LMDB says it was started: its segments were deleted, with any commits LMDB had not applied"
            guard mode == .recoverToLastGoodRecord else {
                throw KVError.corruptLog(file: directory, offset: 0, reason: reason)
            }
            report.corruptionCut = LogCut(file: directory, offset: 0, bytesDropped: 0, reason: reason,
                                          firstDroppedVersion: appliedVersion + 1, appliedVersion: appliedVersion)
        }
        var expected: UInt64? = nil
        var kept: [LogSegment] = []
        var index = 0
        scanning: while index < segments.count {
            let segment = segments[index]
            let isLast = index == segments.count - 1
            let path = directory + "/" + segment.name
            let file = try fileSystem.open(path, create: false)
            defer { file.close() }
            // Only the data is read: past `dataEnd` the file is a hole of zeros (the part of
            // a segment never written).
            let fileSize = try file.size()
            let bytes = try file.read(at: 0, count: min(fileSize, try file.dataEnd()))
            // The WAL rule holds in recovery too: after a process crash the page cache may
            // hold records that were never synced; they go to LMDB only once they are on disk.
            if repair && bytes.count > LogFormat.segmentHeaderSize { try file.sync() }
            let header = Result { () throws(KVError) in
                try bytes.withBytes { (raw) throws(KVError) in try LogRecordReader.readSegmentHeader(raw, file: path) }
            }
            // The writer syncs a segment's header and size together before it appends a
            // record (creation, and growth of a segment without records). So a newest segment
            // whose header is unreadable or states another size than the file has, and that
            // holds no record, is a creation or growth the crash interrupted: nothing in it
            // was ever acknowledged. Power loss may leave garbage in it, so "holds no record"
            // means no good record anywhere and no record header claiming its first version.
            if isLast, (try? header.get())?.capacity != fileSize,
               !bytes.withUnsafeBytes({ LogScanner.mayHoldRecords($0, firstVersion: segment.firstVersion) }) {
                // Unless something proves its creation had completed: then it was emptied or
                // cut, and the commits it held are lost.
                if let proof = completedCreation(of: segment, fileSize: fileSize,
                                                 sealedPredecessor: kept.last.map { $0.sealed && expected == segment.firstVersion },
                                                 logStarted: logStarted) {
                    let reason = "emptied or cut to \(fileSize) bytes, with no record left, but \(proof): the commits it held from version \(segment.firstVersion) on are lost"
                        + (appliedVersion >= segment.firstVersion ? " (LMDB holds them through \(appliedVersion))" : "")
                    guard mode == .recoverToLastGoodRecord else {
                        throw KVError.corruptLog(file: path, offset: 0, reason: reason)
                    }
                    report.corruptionCut = LogCut(file: path, offset: 0, bytesDropped: fileSize, reason: reason,
                                                  firstDroppedVersion: segment.firstVersion, appliedVersion: appliedVersion)
                }
                // The file is left to the writer (`LogWriter.init(interrupted:)`), which knows
                // where it starts the log again.
                report.removedSegments.append(segment.name)
                interrupted = segment
                break
            }
            let (headerVersion, capacity) = try header.get()
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
            if fileSize > capacity {
                // The writer never writes there; something appended to the file.
                report.harmlessDamage.append("\(path): \(fileSize - capacity) bytes past its capacity of \(capacity), trimmed")
                if repair { try file.truncate(to: capacity); try file.sync() }
            }
            let scanned = min(bytes.count, capacity)
            var offset = LogFormat.segmentHeaderSize
            var damage: String? = nil
            var sealed = false
            try bytes.withBytes { (raw) throws(KVError) in
                let raw = UnsafeRawBufferPointer(rebasing: raw[0..<scanned])
                while damage == nil {
                    switch LogRecordReader.read(raw, at: offset) {
                    case .end:
                        return
                    case let .record(version, _, payload, next):
                        guard !sealed else {
                            damage = "a record after the segment's seal"
                            return
                        }
                        guard version == expected! else {
                            damage = "record has version \(version), \(expected!) expected"
                            return
                        }
                        try visit(version, UnsafeRawBufferPointer(rebasing: raw[payload]))
                        expected! += 1
                        offset = next
                    case let .seal(nextVersion, _, next):
                        // A seal may skip versions LMDB holds (written after a cut that LMDB
                        // had already applied past).
                        guard !sealed, nextVersion == expected! || (nextVersion > expected! && nextVersion - 1 <= appliedVersion) else {
                            damage = sealed ? "a second seal" : "seal names version \(nextVersion), \(expected!) expected"
                            return
                        }
                        sealed = true
                        expected = nextVersion
                        offset = next
                    case .damaged(let reason):
                        damage = reason
                    }
                }
            }
            let truncated = fileSize < capacity
            if truncated {
                damage = "truncated: \(fileSize) bytes, but its header says \(capacity)" + (damage.map { "; \($0)" } ?? "")
            }
            /// A newest segment that ends in a seal lost its successor: the seal went to disk
            /// only after the successor had been created durably.
            func checkSuccessor() throws(KVError) {
                guard isLast && sealed else { return }
                let missing = directory + "/" + LogFormat.segmentName(firstVersion: expected!)
                let reason = "missing: \(segment.name) is sealed, so this segment existed; the commits from version \(expected!) on that it held are lost"
                guard mode == .recoverToLastGoodRecord else {
                    throw KVError.corruptLog(file: missing, offset: 0, reason: reason)
                }
                report.corruptionCut = LogCut(file: missing, offset: 0, bytesDropped: 0, reason: reason,
                                              firstDroppedVersion: expected!, appliedVersion: appliedVersion)
            }
            if damage == nil, isLast, !sealed, segment.firstVersion <= appliedVersion, expected! <= appliedVersion {
                // LMDB applied records of this segment up to `appliedVersion`, and the WAL rule
                // synced them first: they cannot be missing unless something removed them.
                damage = "the segment's records end at version \(expected! - 1), but LMDB applied through \(appliedVersion) and the log was synced before that: records were overwritten with zeros or removed, and the commits after \(appliedVersion) it held, if any, are lost"
            }
            guard let damage else {
                kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: offset,
                                       capacity: capacity, sealed: sealed))
                index += 1
                try checkSuccessor()
                continue
            }
            let dataEnd = bytes.withUnsafeBytes { LogRecordReader.endOfNonZero($0, from: offset, to: scanned) }
            let cut = LogCut(file: path, offset: offset, bytesDropped: max(0, dataEnd - offset), reason: damage)
            /// Zeros what follows the cut (and restores the size), so the segment ends there.
            func cutHere() throws(KVError) {
                guard repair else { return }
                if dataEnd > offset {
                    try [UInt8](repeating: 0, count: dataEnd - offset).withBytes { (raw) throws(KVError) in
                        try file.write(raw, at: offset)
                    }
                }
                if fileSize < capacity { try file.truncate(to: capacity) }
                try file.sync()
            }
            // Only the non-zero part can hold a record that vouches.
            let vouched = bytes.withUnsafeBytes {
                LogScanner.laterRecordVouches(UnsafeRawBufferPointer(rebasing: $0[0..<max(dataEnd, offset)]), after: offset, for: expected!)
            }
            // A record LMDB applied was synced first: damage at or below the applied version
            // is never a torn tail.
            let synced = expected! <= appliedVersion
            if isLast && !vouched && !truncated && !synced {
                // (Junk after a seal is cut the same way; the lost successor is reported too.)
                try checkSuccessor()
                try cutHere()
                report.tornTail = cut
                kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: offset,
                                       capacity: capacity, sealed: sealed))
                break scanning
            }
            if !isLast, segments[index + 1].firstVersion - 1 <= appliedVersion || segments[index + 1].firstVersion == expected! {
                report.harmlessDamage.append("\(cut)")
                // Junk after the last record (a torn seal): clear it and seal again. An
                // applied segment is left alone; it is retired next.
                if segments[index + 1].firstVersion == expected! {
                    try cutHere()
                    if repair && !sealed && offset + LogFormat.sealSize <= capacity {
                        try LogWriter.writeSeal(file, at: offset, nextVersion: expected!, durableVersion: expected! - 1)
                    }
                }
                kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: offset,
                                       capacity: capacity, sealed: sealed))
                expected = segments[index + 1].firstVersion
                index += 1
                continue
            }
            let described = synced && isLast && !truncated && !damage.contains("LMDB applied through")
                ? "\(damage); not a torn tail: LMDB applied through version \(appliedVersion), so the log had been synced past it"
                : damage
            guard mode == .recoverToLastGoodRecord else {
                throw KVError.corruptLog(file: path, offset: offset, reason: described)
            }
            try cutHere()
            // What the cut drops: the newest intact record past it, here and in later segments.
            var lastSeen = bytes.withUnsafeBytes {
                LogScanner.lastIntactVersion(UnsafeRawBufferPointer(rebasing: $0[0..<scanned]), after: offset, from: expected!)
            }
            for later in segments[(index + 1)...] {
                let laterFile = try fileSystem.open(directory + "/" + later.name, create: false)
                defer { laterFile.close() }
                let laterBytes = try laterFile.read(at: 0, count: min(try laterFile.size(), try laterFile.dataEnd()))
                let seen = laterBytes.withUnsafeBytes {
                    LogScanner.lastIntactVersion($0, after: LogFormat.segmentHeaderSize - 1, from: later.firstVersion)
                }
                lastSeen = [lastSeen, seen, later.firstVersion > 0 ? later.firstVersion - 1 : nil].compactMap { $0 }.max()
            }
            report.corruptionCut = LogCut(file: cut.file, offset: cut.offset, bytesDropped: cut.bytesDropped, reason: described,
                                          firstDroppedVersion: expected!, lastSeenVersion: lastSeen, appliedVersion: appliedVersion)
            kept.append(LogSegment(firstVersion: segment.firstVersion, name: segment.name, size: offset, capacity: capacity))
            for later in segments[(index + 1)...] {
                if repair { try fileSystem.remove(directory + "/" + later.name) }
                report.removedSegments.append(later.name)
            }
            if repair { try fileSystem.syncDirectory(directory) }
            segments.removeSubrange((index + 1)...)
            break
        }
        let lastLogVersion = expected.map { $0 - 1 }
        return (report, kept, lastLogVersion, interrupted)
    }

    /// What proves that a record-less newest segment had been created whole (so that it was
    /// emptied or cut since), or nil when its creation may have been interrupted:
    /// - its first version is at or below LMDB's applied version: a segment is only ever
    ///   created above it (at reopen, rotation or growth), so LMDB applied records from it;
    /// - it is shorter than the smallest capacity and its predecessor's seal names it: the
    ///   seal is written only after the successor was created and synced at full size, and
    ///   later growth or re-creation never makes it shorter than that (`LogWriter`);
    /// - it is shorter than the smallest capacity, it is the only segment, and LMDB says the
    ///   log was started: `log-started` is written after the first segment exists whole.
    private func completedCreation(of segment: LogSegment, fileSize: Int, sealedPredecessor: Bool?,
                                   logStarted: Bool) -> String? {
        if segment.firstVersion <= appliedVersion {
            return "LMDB applied through version \(appliedVersion), so it held records (a segment is only created above LMDB's applied version)"
        }
        guard fileSize < LogFormat.capacityUnit else { return nil }
        switch sealedPredecessor {
        case true?: return "its predecessor's seal names it, so it had been created whole"
        case nil where logStarted: return "LMDB says the log was started, so this, its only segment, had been created whole"
        default: return nil
        }
    }

    /// Whether a segment's bytes may hold a record: a good record or seal anywhere after the
    /// header, or a record header at the first record's place that names `firstVersion`
    /// (a record cut short by a truncation still names its version).
    static func mayHoldRecords(_ bytes: UnsafeRawBufferPointer, firstVersion: UInt64) -> Bool {
        let start = LogFormat.segmentHeaderSize
        guard LogRecordReader.firstNonZero(bytes, from: start, to: bytes.count) != nil else { return false }
        if bytes.count >= start + 16,
           UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self)) == firstVersion {
            return true
        }
        switch LogRecordReader.read(bytes, at: start) {
        case .record, .seal: return true
        case .end, .damaged: break
        }
        return firstVersion > 0 && laterRecordVouches(bytes, after: start, for: firstVersion - 1)
    }

    /// The newest version of an intact record or seal that starts after `offset` (a seal
    /// counts as the version before the one it names), looking at every byte position; records
    /// from `from` on are the plausible ones. nil when there is none.
    static func lastIntactVersion(_ bytes: UnsafeRawBufferPointer, after offset: Int, from: UInt64) -> UInt64? {
        var candidate = offset + 1
        let lastStart = bytes.count - LogFormat.recordHeaderSize
        guard candidate <= lastStart else { return nil }
        let maxVersion = from + UInt64(bytes.count / LogFormat.recordHeaderSize) + 1
        var newest: UInt64? = nil
        while candidate <= lastStart {
            let version = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: candidate + 8, as: UInt64.self))
            if version >= from, version <= maxVersion {
                switch LogRecordReader.read(bytes, at: candidate) {
                case let .record(found, _, _, next):
                    newest = max(newest ?? 0, found)
                    candidate = next
                    continue
                case let .seal(nextVersion, _, next):
                    if nextVersion > 0 { newest = max(newest ?? 0, nextVersion - 1) }
                    candidate = next
                    continue
                case .end, .damaged: break
                }
            }
            candidate += 1
        }
        return newest
    }

    /// Whether a good record after `offset` proves that version `expected` had been synced.
    package static func laterRecordVouches(_ bytes: UnsafeRawBufferPointer, after offset: Int, for expected: UInt64) -> Bool {
        var candidate = offset + 1
        let lastStart = bytes.count - LogFormat.recordHeaderSize
        guard candidate <= lastStart else { return false }
        let maxVersion = expected + UInt64(bytes.count / LogFormat.recordHeaderSize)
        while candidate <= lastStart {
            // Cheap filters first: a plausible version, vouching for `expected`.
            let version = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: candidate + 8, as: UInt64.self))
            let durable = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: candidate + 16, as: UInt64.self))
            if version > expected, version <= maxVersion, durable >= expected, durable < version {
                switch LogRecordReader.read(bytes, at: candidate) {
                case .record, .seal: return true
                case .end, .damaged: break
                }
            }
            candidate += 1
        }
        return false
    }
}
