import CairnTestSupport
import Foundation
import Testing
@testable import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// What creating a log segment leaves on disk: its full size, and its first
/// `LogWriter.zeroedAtCreation(capacity:)` bytes written (header, then zeros), so that the
/// first appends land in allocated blocks and their fdatasync allocates none.
@Suite struct SegmentCreationTests {
    /// The active segment of `directory`: its size, its allocated bytes, and its bytes.
    private func activeSegment(_ directory: String) throws -> (size: Int, allocated: Int, bytes: Data) {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory + "/wal").filter { $0.hasSuffix(".log") }.sorted()
        let path = directory + "/wal/" + names.last!
        var info = stat()
        #expect(stat(path, &info) == 0)
        return (Int(info.st_size), Int(info.st_blocks) * 512, try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test(arguments: [64 << 20, 64 << 10])
    func aNewSegmentIsWrittenThroughItsFirstMebibyte(segmentSize: Int) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var options = Store.Options()
        options.segmentSize = segmentSize
        let store = try Store(directory: directory.path, options: options)
        defer { store.close() }
        let zeroed = LogWriter.zeroedAtCreation(capacity: segmentSize)
        #expect(zeroed == min(segmentSize, 1 << 20))
        let created = try activeSegment(directory.path)
        #expect(created.size == segmentSize)
        // A hole allocates nothing: with only the header written, one block.
        #expect(created.allocated >= zeroed, "\(created.allocated) bytes allocated of \(zeroed) written at creation")
        #expect(created.bytes[LogFormat.segmentHeaderSize...].allSatisfy { $0 == 0 })

        // A first append larger than the zeros-ahead threshold writes no zeros of its own,
        // and lands in the written part; it reads back after a reopen.
        let value = [UInt8](repeating: 7, count: 100 << 10)
        var batch = WriteBatch()
        batch.put(value, forKey: bytes("large"))
        try store.commit(batch)
        store.close()
        let reopened = try Store(directory: directory.path, options: options)
        defer { reopened.close() }
        let snapshot = try reopened.snapshot()
        defer { snapshot.close() }
        #expect(try snapshot.get(bytes("large"))?.value == value)
    }
}
