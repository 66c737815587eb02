import CairnTestSupport
import Foundation
import KVEngine
import Testing

/// A reader that follows several small log segments in one refresh reads each one's own
/// bytes: a segment's first record sits at the same offset as the previous one's, so bytes
/// kept from the previous segment must not be taken for the next one's (they were, and the
/// follower went round the previous segment's seal forever).
@Suite struct FollowerSegmentCrossingTests {
    // A hang guard: the bug looped forever. The commits need not be synced (the reader reads the
    // log's bytes as written); synced, a sanitizer run beside other suites' fsyncs took minutes.
    @Test(.timeLimit(.minutes(5)))
    func aRefreshCrossingSeveralSmallSegmentsSeesEveryCommit() throws {
        var options = lazyOptions()
        options.segmentSize = 4 << 10
        options.durability = .normal
        try withStore(options) { store, directory in
            let value = String(repeating: "v", count: 100)
            for index in 0..<100 { try store.put("k\(index)", value) }
            // The store as a writer killed now leaves it: LMDB without these commits, the log
            // with them, in segments each smaller than one read of the follower.
            let copy = try TemporaryDirectory(prefix: "cairn-follow-copy")
            defer { copy.remove() }
            let files = FileManager.default
            try files.createDirectory(atPath: copy.path + "/wal", withIntermediateDirectories: true)
            for name in ["data.mdb", "published"] {
                try files.copyItem(atPath: directory.path + "/" + name, toPath: copy.path + "/" + name)
            }
            let segments = try files.contentsOfDirectory(atPath: directory.path + "/wal")
            for name in segments {
                try files.copyItem(atPath: directory.path + "/wal/" + name, toPath: copy.path + "/wal/" + name)
            }
            #expect(segments.count >= 4, "the commits fill \(segments.count) segments: too few to cross seals")

            var readOnly = Store.Options()
            readOnly.readOnly = true
            readOnly.mapSize = options.mapSize
            let reader = try Store(directory: copy.path, options: readOnly)
            defer { reader.close() }
            let snapshot = try reader.snapshot()
            defer { snapshot.close() }
            for index in [0, 50, 99] {
                #expect(text(try snapshot.get("k\(index)")?.value) == value, "k\(index)")
            }
        }
    }
}
