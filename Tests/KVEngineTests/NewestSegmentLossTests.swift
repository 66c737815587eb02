import CairnTestSupport
import Testing
@testable import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// After a crash mid-ingest, the newest log segment emptied or cut by hand used to read as a
/// creation that power loss interrupted: acknowledged commits were lost and `check` said the
/// store was sound. Each shape that something else contradicts is damage now: LMDB's applied
/// version (no segment is created at or below it, and records at or below it were synced),
/// the predecessor's seal, and LMDB's `log-started` for a store's only segment.
@Suite struct NewestSegmentLossTests {
    enum Shape: String, CaseIterable, Sendable {
        case emptied, cutInsideTheHeader, cutInsideTheFirstRecord
    }

    /// A store killed mid-ingest: `applied` commits in LMDB, `pending` more only in the log.
    /// Returns the newest segment's path.
    func crashedStore(_ directory: String, applied: Int, pending: Int, onlySegment: Bool = false) throws -> String {
        var options = lazyOptions()
        options.segmentSize = 64 << 10
        if !onlySegment {
            // A second open: the newest segment then has a sealed predecessor.
            let first = try Store(directory: directory, options: options)
            try first.put("seed", "v")
            first.close()
        }
        let store = try Store(directory: directory, options: options)
        for index in 0..<applied { try store.put("a\(index)", "v") }
        if applied > 0 { try store.flush() }
        for index in 0..<pending { try store.put("p\(index)", "v") }
        store.simulateCrash()
        let names = try PosixFileSystem().contentsOfDirectory(directory + "/wal").sorted()
        return directory + "/wal/" + names.last!
    }

    func damage(_ path: String, _ shape: Shape) {
        switch shape {
        case .emptied: truncate(path, 0)
        case .cutInsideTheHeader: truncate(path, 20)
        case .cutInsideTheFirstRecord: truncate(path, off_t(LogFormat.segmentHeaderSize + 10))
        }
    }

    /// Both refuse under `.strict` (open and `check`), and `.recoverToLastGoodRecord` opens
    /// with the loss reported and every commit LMDB holds.
    func expectReported(_ directory: String, lmdbHolds: [String], _ comment: String) throws {
        do {
            _ = try Store(directory: directory)
            Issue.record("\(comment): opened as if nothing was lost")
        } catch {
            let text = "\(error)"
            let typed = if case .corruptLog = error { true } else { false }
            #expect(typed, "\(comment): \(text)")
            #expect(text.contains(".log") && text.contains("lost"), "\(comment): \(text)")
        }
        let report = try Store.check(directory: directory)
        #expect(!report.isSound, "\(comment): check says sound")
        var options = Store.Options()
        options.recovery = .recoverToLastGoodRecord
        let store = try Store(directory: directory, options: options)
        defer { store.close() }
        #expect(store.recoveryReport.corruptionCut != nil, "\(comment): \(store.recoveryReport)")
        for key in lmdbHolds { #expect(try store.string(key) == "v", "\(comment): \(key)") }
        try store.put("after", "v")
        store.close()
        #expect(try Store.check(directory: directory).isSound, "\(comment): not sound after the recovery")
    }

    @Test(arguments: Shape.allCases)
    func aNewestSegmentWithASealedPredecessor(shape: Shape) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let newest = try crashedStore(directory.path, applied: 0, pending: 20)
        damage(newest, shape)
        try expectReported(directory.path, lmdbHolds: ["seed"], "sealed predecessor, \(shape)")
    }

    @Test(arguments: Shape.allCases)
    func aNewestSegmentLMDBAppliedFrom(shape: Shape) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let newest = try crashedStore(directory.path, applied: 10, pending: 20)
        // Its predecessor (and the seal naming it) gone too: LMDB's applied version alone tells.
        for name in try PosixFileSystem().contentsOfDirectory(directory.path + "/wal") where directory.path + "/wal/" + name != newest {
            unlink(directory.path + "/wal/" + name)
        }
        damage(newest, shape)
        try expectReported(directory.path, lmdbHolds: (0..<10).map { "a\($0)" }, "applied from, \(shape)")
    }

    @Test func theOnlySegmentOfAStartedLog() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let newest = try crashedStore(directory.path, applied: 0, pending: 20, onlySegment: true)
        damage(newest, .emptied)
        try expectReported(directory.path, lmdbHolds: [], "only segment")
    }

    /// Zeros over the newest segment's last records, size unchanged, where LMDB had applied
    /// some of them: the log was synced through them, so they cannot be a torn tail.
    @Test func zerosOverRecordsLMDBApplied() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var options = lazyOptions()
        options.segmentSize = 64 << 10
        let store = try Store(directory: directory.path, options: options)
        for index in 0..<10 { try store.put("a\(index)", "v") }
        try store.flush()
        for index in 0..<5 { try store.put("p\(index)", "v") }
        store.simulateCrash()
        let names = try PosixFileSystem().contentsOfDirectory(directory.path + "/wal").sorted()
        let path = directory.path + "/wal/" + names.last!
        var segment = try readFile(path)
        let offsets = recordOffsets(segment)
        #expect(offsets.count == 15)
        let end = recordsEnd(segment)
        segment.replaceSubrange(offsets[6]..<end, with: [UInt8](repeating: 0, count: end - offsets[6]))
        try writeFile(path, segment)
        try expectReported(directory.path, lmdbHolds: (0..<10).map { "a\($0)" }, "zeros over applied records")
    }

    /// What must stay quiet: a creation interrupted for real is still not damage.
    @Test func anInterruptedCreationIsStillNotDamage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let newest = try crashedStore(directory.path, applied: 0, pending: 20)
        // The crash came while the next segment was being created: an empty file after it.
        let version = LogFormat.firstVersion(ofSegmentNamed: String(newest.split(separator: "/").last!))!
        let next = directory.path + "/wal/" + LogFormat.segmentName(firstVersion: version + 20)
        close(open(next, O_WRONLY | O_CREAT, 0o600))
        let store = try Store(directory: directory.path)
        defer { store.close() }
        #expect(store.recoveryReport.removedSegments.contains(String(next.split(separator: "/").last!)))
        for index in 0..<20 { #expect(try store.string("p\(index)") == "v") }
    }
}
