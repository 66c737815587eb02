import CairnTestSupport
import Foundation
import KVEngine
import Testing

/// A reader that enters a segment starts at the writer's mark nearest below the commit it
/// needs (`LogMark`), not at the segment's start, and trusts a mark only where the log holds
/// that record.
@Suite struct LogMarkFollowTests {
    static let applied = 3_000
    static let unapplied = 5
    static let value = String(repeating: "v", count: 1_000)

    /// Runs `body` with a copy of a store as a writer killed now leaves it: `applied` commits of
    /// 1 KB in LMDB, `unapplied` more only in its log, all in one segment.
    func withCopiedStore(_ body: (String) throws -> Void) throws {
        var options = lazyOptions()
        options.durability = .normal
        try withStore(options) { store, directory in
            for index in 0..<Self.applied { try store.put("k\(index)", Self.value) }
            try store.flush()
            for index in Self.applied..<(Self.applied + Self.unapplied) { try store.put("k\(index)", Self.value) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/wal").count == 1)
            try withCopy(of: directory, body)
        }
    }

    /// Opens a reader on `path` and returns the log records its first snapshot read, after
    /// checking that it shows the commits LMDB lacks and one it has.
    func recordsReadByAFirstSnapshot(_ path: String) throws -> Int {
        let reader = try openReader(path)
        defer { reader.close() }
        let snapshot = try reader.snapshot()
        defer { snapshot.close() }
        for index in [0, Self.applied - 1, Self.applied, Self.applied + Self.unapplied - 1] {
            #expect(text(try snapshot.get("k\(index)")?.value) == Self.value, "k\(index)")
        }
        return try reader.stats().followedLogRecords
    }

    @Test func aNewReaderStepsOverAboutAStrideOfAppliedRecordsNotTheWholeSegment() throws {
        try withCopiedStore { path in
            let read = try recordsReadByAFirstSnapshot(path)
            // A mark every 256 KiB: about 250 records of 1 KB to step over, not 3,000.
            #expect(read >= Self.unapplied && read < 400, "the first snapshot read \(read) log records")
        }
    }

    @Test func aMarkWhoseOffsetHoldsNoSuchRecordIsNotTrusted() throws {
        try withCopiedStore { path in
            // Every mark's offset one byte on (its slot still consistent): the reader checks the
            // record there, finds none, and steps over the segment from its start.
            let page = path + "/published"
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: page)))
            var marks = 0
            for slot in 0..<64 {
                let at = 64 + 40 * slot + 32
                let sequence = bytes[(64 + 40 * slot)..<(64 + 40 * slot + 8)]
                guard sequence.contains(where: { $0 != 0 }) else { continue }
                bytes[at] &+= 1
                marks += 1
            }
            #expect(marks >= 10, "the writer took \(marks) marks")
            try Data(bytes).write(to: URL(fileURLWithPath: page))
            let read = try recordsReadByAFirstSnapshot(path)
            #expect(read >= Self.applied + Self.unapplied, "the first snapshot read \(read) log records")
        }
    }
}
