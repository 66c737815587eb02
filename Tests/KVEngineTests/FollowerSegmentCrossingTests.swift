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
            let segments = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/wal")
            #expect(segments.count >= 4, "the commits fill \(segments.count) segments: too few to cross seals")
            // The store as a writer killed now leaves it: LMDB without these commits, the log
            // with them, in segments each smaller than one read of the follower.
            try withCopy(of: directory) { copy in
                let reader = try openReader(copy)
                defer { reader.close() }
                let snapshot = try reader.snapshot()
                defer { snapshot.close() }
                for index in [0, 50, 99] {
                    #expect(text(try snapshot.get("k\(index)")?.value) == value, "k\(index)")
                }
            }
        }
    }
}
