import CairnTestSupport
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Offsets of every record in a segment's bytes.
func recordOffsets(_ segment: [UInt8]) -> [Int] {
    var offsets: [Int] = []
    var offset = LogFormat.segmentHeaderSize
    segment.withUnsafeBytes { raw in
        while case let .record(_, _, _, next) = LogRecordReader.read(raw, at: offset) {
            offsets.append(offset)
            offset = next
        }
    }
    return offsets
}

/// Where the records of a segment end (the zeros after them start).
func recordsEnd(_ segment: [UInt8]) -> Int {
    var offset = LogFormat.segmentHeaderSize
    segment.withUnsafeBytes { raw in
        while true {
            switch LogRecordReader.read(raw, at: offset) {
            case let .record(_, _, _, next), let .seal(_, _, next): offset = next
            case .end, .damaged: return
            }
        }
    }
    return offset
}

func readFile(_ path: String) throws -> [UInt8] {
    let file = try PosixFileSystem().open(path, create: false)
    defer { file.close() }
    return try file.read(at: 0, count: try file.size())
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    let file = try PosixFileSystem().open(path, create: true)
    defer { file.close() }
    try file.truncate(to: 0)
    try bytes.withUnsafeBytes { try file.write($0, at: 0) }
    try file.sync()
}

/// The newest log segment of a closed store.
func newestSegment(_ directory: TemporaryDirectory) throws -> String {
    let names = try PosixFileSystem().contentsOfDirectory(directory.path + "/wal").sorted()
    return directory.path + "/wal/" + names.last!
}

@Suite struct RecoveryTests {
    /// Commits `count` single puts with the applier idle, then crashes: the log alone holds them.
    func crashedStore(_ directory: TemporaryDirectory, count: Int) throws {
        let store = try Store(directory: directory.path, options: lazyOptions())
        for index in 0..<count { try store.put("k\(index)", "v\(index)") }
        store.simulateCrash()
    }

    @Test func openingReplaysWhatLMDBHadNotApplied() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try crashedStore(directory, count: 100)
        #expect(try Store.check(directory: directory.path).pendingCommits == 100)
        let store = try Store(directory: directory.path, options: lazyOptions())
        #expect(store.recoveryReport.replayedCommits == 100)
        #expect(store.recoveryReport.lastVersion == 100)
        #expect(store.recoveryReport.tornTail == nil)
        #expect(try store.string("k99") == "v99")
        #expect(try store.put("k100", "v").version == 101)
        store.close()
        let report = try Store.check(directory: directory.path)
        #expect(report.isSound, "\(report.problems)")
        #expect(report.pendingCommits == 0)
        #expect(report.recordsPerTable["default"] == 101)
    }

    @Test func aTornTailIsCutAndReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try crashedStore(directory, count: 10)
        let path = try newestSegment(directory)
        var segment = try readFile(path)
        let offsets = recordOffsets(segment)
        #expect(offsets.count == 10)
        // A crash in the middle of appending an 11th record: its first 30 bytes made it,
        // into the zeros after the 10th.
        let end = recordsEnd(segment)
        let partial = Array(segment[offsets[9]..<end]).prefix(30)
        segment.replaceSubrange(end..<(end + partial.count), with: partial)
        try writeFile(path, segment)
        let store = try Store(directory: directory.path, options: lazyOptions())
        defer { store.close() }
        let cut = try #require(store.recoveryReport.tornTail)
        #expect(cut.file == path && cut.bytesDropped == 30)
        #expect(store.recoveryReport.replayedCommits == 10)
        #expect(try store.string("k9") == "v9")
        #expect(try store.put("after", "x").version == 11)
    }

    @Test func aCorruptMiddleRecordIsATypedErrorNamingFileAndOffset() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try crashedStore(directory, count: 10)
        let path = try newestSegment(directory)
        var segment = try readFile(path)
        let offsets = recordOffsets(segment)
        segment[offsets[3] + LogFormat.recordHeaderSize + 2] ^= 0x40  // a payload byte of commit 4
        try writeFile(path, segment)
        #expect(throws: KVError.corruptLog(file: path, offset: offsets[3], reason: "record checksum mismatch")) {
            _ = try Store(directory: directory.path, options: lazyOptions())
        }
        // Still refused, and nothing was changed by the refusal.
        #expect(try readFile(path) == segment)
        let report = try Store.check(directory: directory.path)
        #expect(!report.isSound)
        #expect(report.problems.contains { $0.contains(path) && $0.contains("offset \(offsets[3])") })

        // Opting in keeps the commits before the damage and reports the cut.
        var options = lazyOptions()
        options.recovery = .recoverToLastGoodRecord
        let store = try Store(directory: directory.path, options: options)
        defer { store.close() }
        let cut = try #require(store.recoveryReport.corruptionCut)
        #expect(cut.offset == offsets[3] && cut.file == path)
        #expect(try store.string("k2") == "v2")
        #expect(try store.string("k3") == nil)
        #expect(try store.put("next", "x").version == 4)
    }

    @Test func aLogFileWithTheWrongMagicIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try crashedStore(directory, count: 3)
        let path = try newestSegment(directory)
        var segment = try readFile(path)
        segment.replaceSubrange(0..<8, with: Array("NOTCAIRN".utf8))
        try writeFile(path, segment)
        #expect(throws: KVError.wrongFormat(file: path, reason: "wrong magic: not a Cairn log segment, or its header is damaged")) {
            _ = try Store(directory: directory.path)
        }
    }

    @Test func anLMDBFileThatIsNotLMDBIsATypedError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try writeFile(directory.path + "/data.mdb", [UInt8](repeating: 0x5A, count: 8192))
        // The data-file verifier refuses it before LMDB sees it ...
        let verified = #expect(throws: KVError.self) { _ = try Store(directory: directory.path) }
        guard case .wrongFormat(_, let reason)? = verified, reason.hasPrefix("LMDB's data file is damaged: page 0: ") else {
            Issue.record("expected wrongFormat naming page 0, got \(String(describing: verified))")
            return
        }
        // ... and without it, LMDB's own check of the meta page does.
        var options = Store.Options()
        options.verifyDataFile = false
        let error = #expect(throws: KVError.self) { _ = try Store(directory: directory.path, options: options) }
        guard case .lmdb(_, let operation)? = error else {
            Issue.record("expected an LMDB error, got \(String(describing: error))")
            return
        }
        #expect(operation.contains("mdb_env_open"))
    }

    @Test func aFailedFdatasyncPoisonsTheStoreUntilReopen() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fileSystem = FaultFileSystem()
        let store = try Store(directory: directory.path, options: busyOptions(), fileSystem: fileSystem)
        try store.put("before", "1")
        fileSystem.inject(.sync, at: 1, errno: EIO)
        #expect(throws: KVError.io(errno: EIO, operation: "sync", path: directory.path + "/wal/00000000000000000001.log")) {
            try store.put("failed", "2")
        }
        // Every later commit fails with the poisoned error, even though syncs work again.
        do {
            try store.put("later", "3")
            Issue.record("a poisoned store accepted a commit")
        } catch KVError.poisoned(let underlying) {
            #expect(underlying == KVError.io(errno: EIO, operation: "sync", path: directory.path + "/wal/00000000000000000001.log"))
        }
        // Reads still work.
        #expect(try store.string("before") == "1")
        #expect(try store.string("later") == nil)
        store.simulateCrash()
        let reopened = try Store(directory: directory.path, options: busyOptions(),
                                 fileSystem: fileSystem.afterPowerLoss(.dropUnsynced, seed: 1))
        defer { reopened.close() }
        #expect(try reopened.string("before") == "1")
        #expect(try reopened.string("failed") == nil)  // its record was never synced
        #expect(try reopened.put("later", "3").version == 2)
    }

    @Test func aFailedWritePoisonsTheStore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fileSystem = FaultFileSystem()
        let store = try Store(directory: directory.path, options: busyOptions(), fileSystem: fileSystem)
        defer { store.close() }
        fileSystem.inject(.write, at: 1, errno: ENOSPC)
        #expect(throws: KVError.self) { try store.put("k", "v") }
        #expect(throws: KVError.poisoned(.io(errno: ENOSPC, operation: "write", path: directory.path + "/wal/00000000000000000001.log"))) {
            try store.put("k", "v")
        }
    }

    @Test func checkpointsRetireAppliedSegments() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var options = busyOptions()
        options.applyInterval = 3600
        options.applyThreshold = Int.max
        let store = try Store(directory: directory.path, options: options)
        let value = String(repeating: "v", count: 500)
        for index in 0..<200 { try store.put("k\(index)", value) }
        let before = try store.stats()
        #expect(before.logSegments > 3)
        let report = try store.checkpoint()
        // The applier may retire some segments itself during the checkpoint's flush; the
        // checkpoint retires the rest but one: the active one it sealed, whose seal
        // witnesses the new active segment.
        #expect(report.segmentsRemoved >= 1)
        #expect(report.appliedVersion == 200)
        let after = try store.stats()
        #expect(after.logSegments == 2)
        #expect(after.appliedVersion == 200)
        #expect(after.logBytes <= LogFormat.segmentHeaderSize + options.segmentSize)
        let wal = try PosixFileSystem().contentsOfDirectory(directory.path + "/wal").sorted()
        #expect(wal.last == "00000000000000000201.log", "\(wal)")
        store.close()
        let reopened = try Store(directory: directory.path, options: options)
        defer { reopened.close() }
        #expect(reopened.recoveryReport.replayedCommits == 0)
        #expect(try reopened.string("k199") == value)
        #expect(try reopened.stats().recordCount == 200)
    }

    @Test func checkpointsRunAutomaticallyBehindTheApplier() throws {
        try withStore(busyOptions()) { store, _ in
            let value = String(repeating: "v", count: 500)
            for index in 0..<300 { try store.put("k\(index)", value) }
            try store.flush()
            // Give the applier's retirement a moment after its last transaction.
            var segments = try store.stats().logSegments
            for _ in 0..<100 where segments > 2 {
                usleep(10_000)
                segments = try store.stats().logSegments
            }
            #expect(segments <= 2)
        }
    }

    /// Commits across several 1 KiB segments with the applier idle, then crashes.
    func crashedStoreOfSeveralSegments(_ directory: TemporaryDirectory) throws -> (options: Store.Options, segments: [String]) {
        var options = lazyOptions()
        options.segmentSize = 1024
        let store = try Store(directory: directory.path, options: options)
        for index in 0..<30 { try store.put("k\(index)", String(repeating: "v", count: 100)) }
        store.simulateCrash()
        let wal = directory.path + "/wal"
        let names = try PosixFileSystem().contentsOfDirectory(wal).sorted().map { wal + "/" + $0 }
        try #require(names.count >= 3)
        return (options, names)
    }

    /// Where a segment's seal starts (it follows the last record).
    func sealOffset(_ segment: [UInt8]) throws -> Int {
        let offset = recordsEnd(segment) - LogFormat.sealSize
        let isSeal = segment.withUnsafeBytes { raw in
            if case .seal = LogRecordReader.read(raw, at: offset) { return true } else { return false }
        }
        try #require(isSeal, "no seal at \(offset)")
        return offset
    }

    /// A crash while sealing leaves a torn seal in a segment whose successor exists: nothing
    /// is lost, recovery says so, and writes a good seal in its place.
    @Test func aTornSealIsHarmlessAndRewritten() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (options, segments) = try crashedStoreOfSeveralSegments(directory)
        let path = segments[segments.count - 2]
        var segment = try readFile(path)
        let seal = try sealOffset(segment)
        segment[seal + 9] ^= 0x5A
        try writeFile(path, segment)
        let store = try Store(directory: directory.path, options: options)
        #expect(store.recoveryReport.harmlessDamage.count == 1, "\(store.recoveryReport)")
        #expect(store.recoveryReport.tornTail == nil && store.recoveryReport.corruptionCut == nil)
        #expect(try store.string("k29") == String(repeating: "v", count: 100))
        store.close()
        let check = try Store.check(directory: directory.path)
        #expect(check.isSound, "\(check.problems)")
    }

    /// The newest segment deleted and junk written after its predecessor's seal: the junk is
    /// a torn tail, but the seal still proves a segment is missing.
    @Test func junkAfterASealDoesNotHideAMissingSuccessor() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (options, segments) = try crashedStoreOfSeveralSegments(directory)
        try PosixFileSystem().remove(segments.last!)
        let path = segments[segments.count - 2]
        var segment = try readFile(path)
        let end = try sealOffset(segment) + LogFormat.sealSize
        for index in end..<(end + 10) { segment[index] = 0xEE }
        try writeFile(path, segment)
        #expect(throws: KVError.self) { _ = try Store(directory: directory.path, options: options) }
        var recovering = options
        recovering.recovery = .recoverToLastGoodRecord
        let store = try Store(directory: directory.path, options: recovering)
        defer { store.close() }
        #expect(store.recoveryReport.corruptionCut?.reason.hasPrefix("missing") == true, "\(store.recoveryReport)")
        #expect(store.recoveryReport.tornTail != nil)
    }

    /// A store whose newest segment is the empty one a reopen created (its predecessor is
    /// sealed, naming it), crashed: the state in which that segment may grow in place.
    func crashedStoreWithAnEmptyNewestSegment(_ directory: TemporaryDirectory) throws -> (options: Store.Options, newest: String, committed: UInt64) {
        let (options, _) = try crashedStoreOfSeveralSegments(directory)
        let reopened = try Store(directory: directory.path, options: options)
        let committed = try reopened.stats().commitVersion
        reopened.simulateCrash()
        let newest = try newestSegment(directory)
        try #require(recordsEnd(try readFile(newest)) == LogFormat.segmentHeaderSize)
        return (options, newest, committed)
    }

    /// Power failed while the empty newest segment grew in place (new header written, the
    /// file not yet its new size) and left garbage in its unsynced tail: nothing in it was
    /// acknowledged, so opening discards it and goes on, rather than calling the log
    /// truncated. (The power-loss sweep found this: case
    /// 15167615420941371453:297:10268161442814916979.)
    @Test func aGrowthInterruptedByPowerLossIsNotCorruption() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (options, newest, committed) = try crashedStoreWithAnEmptyNewestSegment(directory)
        var torn = LogRecordCodec.segmentHeader(firstVersion: committed + 1, capacity: 2048)
        torn += [UInt8](repeating: 0, count: 2030 - torn.count)
        torn[2029] = 0x5A
        try writeFile(newest, torn)

        let check = try Store.check(directory: directory.path)
        #expect(check.lastLogVersion == committed, "\(check)")
        #expect(check.isSound, "\(check.problems)")
        let store = try Store(directory: directory.path, options: options)
        #expect(store.recoveryReport.removedSegments == [String(newest.split(separator: "/").last!)], "\(store.recoveryReport)")
        #expect(store.recoveryReport.tornTail == nil && store.recoveryReport.corruptionCut == nil)
        #expect(try store.stats().commitVersion == committed)
        #expect(try store.put("after", "growth").version == committed + 1)
        store.close()
        let after = try Store.check(directory: directory.path)
        #expect(after.isSound, "\(after.problems)")
        let reopened = try Store(directory: directory.path, options: options)
        defer { reopened.close() }
        #expect(try reopened.string("after") == "growth")
    }

    /// The same shape made by a truncation instead: the newest segment cut inside its first
    /// record. That record names the segment's first version, so it may have been
    /// acknowledged; the cut is reported, not discarded.
    @Test func aNewestSegmentCutInsideItsFirstRecordIsStillReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (options, segments) = try crashedStoreOfSeveralSegments(directory)
        let newest = segments.last!
        let bytes = try readFile(newest)
        let first = recordOffsets(bytes)
        try #require(first.first == LogFormat.segmentHeaderSize && first.count >= 1)
        try writeFile(newest, Array(bytes.prefix(LogFormat.segmentHeaderSize + 30)))
        #expect(throws: KVError.self) { _ = try Store(directory: directory.path, options: options) }
        var recovering = options
        recovering.recovery = .recoverToLastGoodRecord
        let store = try Store(directory: directory.path, options: recovering)
        defer { store.close() }
        #expect(store.recoveryReport.corruptionCut != nil, "\(store.recoveryReport)")
    }

    /// Power fails again, at every step of the recovery that meets an interrupted growth:
    /// the next opening still finds every commit. (Removing the torn segment before the
    /// writer had created it afresh would leave its predecessor's seal naming a lost segment.)
    @Test func anInterruptedGrowthSurvivesPowerFailingAgainDuringRecovery() throws {
        for point in 0..<12 {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            var options = lazyOptions()
            options.segmentSize = 1024
            let disk = FaultFileSystem()
            let store = try Store(directory: directory.path, options: options, fileSystem: disk)
            for index in 0..<30 { try store.put("k\(index)", String(repeating: "v", count: 100)) }
            store.simulateCrash()
            let reopened = try Store(directory: directory.path, options: options, fileSystem: disk)
            let committed = try reopened.stats().commitVersion
            reopened.simulateCrash()
            let newest = try #require(disk.paths.last)
            var torn = LogRecordCodec.segmentHeader(firstVersion: committed + 1, capacity: 2048)
            torn += [UInt8](repeating: 0, count: 1500 - torn.count)
            torn[1499] = 0xA5
            disk.setContents(of: newest, to: torn)

            disk.freeze(afterOperations: point)
            let interrupted = try? Store(directory: directory.path, options: options, fileSystem: disk)
            disk.freezeNow()
            interrupted?.simulateCrash()
            let survivor = disk.afterPowerLoss(.dropUnsynced, seed: UInt64(point))
            let recovered = try Store(directory: directory.path, options: options, fileSystem: survivor)
            #expect(try recovered.stats().commitVersion == committed, "power lost after \(point) operations of recovery")
            #expect(try recovered.string("k29") == String(repeating: "v", count: 100))
            recovered.close()
        }
    }
}
