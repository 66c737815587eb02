import CairnTestSupport
import Foundation
import KVEngine
import Testing

/// A follower reads the log in chunks that grow through a refresh (`LogFollower.fill`): records
/// that straddle a chunk's end, and records longer than the largest chunk, are read whole.
@Suite struct FollowerLongRecordTests {
    @Test func aReaderFollowsRecordsLongerThanItsReadsAndAcrossTheirEnds() throws {
        var options = lazyOptions()
        options.durability = .normal
        try withStore(options) { store, directory in
            // Sizes around the first chunk (4 KiB) and past the largest (256 KiB), among small
            // ones, so that record ends fall anywhere in a chunk.
            let sizes = [10, 4_000, 5_000, 10, 300_000, 10, 700_000] + (0..<200).map { 97 + ($0 * 389) % 3_000 }
            func value(_ index: Int) -> [UInt8] { (0..<sizes[index]).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) } }
            for index in sizes.indices {
                var batch = WriteBatch()
                batch.put(value(index), forKey: Array("k\(index)".utf8))
                try store.commit(batch)
            }
            try withCopy(of: directory) { path in
                let reader = try openReader(path)
                defer { reader.close() }
                let snapshot = try reader.snapshot()
                defer { snapshot.close() }
                for index in sizes.indices {
                    #expect(try snapshot.get(Array("k\(index)".utf8))?.value == value(index), "k\(index)")
                }
                #expect(try reader.stats().followedLogRecords == sizes.count)
            }
        }
    }
}
