import CairnTestSupport
import Foundation
import KVEngine
import Testing

// The published page's bytes (Docs/LogFormat.md, "The published page"): read by other
// processes, so frozen.

@Suite struct PublishedProgressTests {
    @Test func publishedPageBytesArePinned() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let writer = try PublishedProgress.openForWriting(directory: directory.path)
            #expect(writer.read() == (0, 0))
            writer.begin(acknowledged: 5)
            writer.publish(7)
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/published")))
            #expect(bytes.count == 4096)
            var expected = Array("CAIRNPUB".utf8)
            expected += [1, 0, 0, 0, 0, 0, 0, 0]           // format 1, reserved
            expected += [1, 0, 0, 0, 0, 0, 0, 0]           // generation 1
            expected += [7, 0, 0, 0, 0, 0, 0, 0]           // acknowledged 7
            expected += [5, 0, 0, 0, 0, 0, 0, 0]           // start version 5
            #expect(Array(bytes[0..<40]) == expected)
            #expect(bytes[40...].allSatisfy { $0 == 0 })
            let reader = try #require(try PublishedProgress.openForReading(directory: directory.path))
            #expect(reader.read() == (1, 7) && reader.startVersion == 5)
            // A second writer open is the next generation.
            try PublishedProgress.openForWriting(directory: directory.path).begin(acknowledged: 9)
            #expect(reader.read() == (2, 9) && reader.startVersion == 9)
        }
    }

    @Test func aReaderOfAStoreNoWriterPublishedToReadsGenerationZero() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let reader = try #require(try PublishedProgress.openForReading(directory: directory.path))
            #expect(reader.read() == (0, 0))
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/published")))
            #expect(bytes.count == 4096 && bytes.allSatisfy { $0 == 0 })
        }
    }

    /// Marks sit in 40-byte slots from offset 64, each a sequence lock; a reader takes the mark
    /// of its generation and segment with the highest version at or below the one it needs.
    @Test func logMarksArePinnedAndReadOfTheirGenerationAndSegmentOnly() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let writer = try PublishedProgress.openForWriting(directory: directory.path)
            writer.begin(acknowledged: 5)
            writer.publishMark(LogMark(version: 10, segment: 1, offset: 4096), count: 0)
            writer.publishMark(LogMark(version: 20, segment: 1, offset: 8192), count: 1)
            writer.publishMark(LogMark(version: 30, segment: 25, offset: 300), count: 2)
            let path = directory.path + "/published"
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            func words(_ values: UInt64...) -> [UInt8] { values.flatMap { value in (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } } }
            #expect(Array(bytes[40..<64]).allSatisfy { $0 == 0 })
            #expect(Array(bytes[64..<104]) == words(2, 1, 10, 1, 4096))   // sequence, generation, version, segment, offset
            #expect(Array(bytes[104..<144]) == words(2, 1, 20, 1, 8192))
            #expect(Array(bytes[144..<184]) == words(2, 1, 30, 25, 300))
            #expect(bytes[184...].allSatisfy { $0 == 0 })

            let reader = try #require(try PublishedProgress.openForReading(directory: directory.path))
            #expect(reader.bestMark(generation: 1, segment: 1, atOrBelow: 25) == LogMark(version: 20, segment: 1, offset: 8192))
            #expect(reader.bestMark(generation: 1, segment: 1, atOrBelow: 19) == LogMark(version: 10, segment: 1, offset: 4096))
            #expect(reader.bestMark(generation: 1, segment: 1, atOrBelow: 9) == nil)
            #expect(reader.bestMark(generation: 1, segment: 25, atOrBelow: 40) == LogMark(version: 30, segment: 25, offset: 300))
            #expect(reader.bestMark(generation: 0, segment: 1, atOrBelow: 25) == nil)

            // The 65th mark reuses the first slot; its sequence moves on.
            writer.publishMark(LogMark(version: 40, segment: 25, offset: 600), count: 64)
            let reused = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(Array(reused[64..<104]) == words(4, 1, 40, 25, 600))
            #expect(reader.bestMark(generation: 1, segment: 1, atOrBelow: 19) == nil)

            // A slot whose sequence is odd is being written: skipped.
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.seek(toOffset: 104)
            try handle.write(contentsOf: words(3))
            try handle.close()
            #expect(reader.bestMark(generation: 1, segment: 1, atOrBelow: 25) == nil)

            // A new writer's generation does not take the old one's marks.
            try PublishedProgress.openForWriting(directory: directory.path).begin(acknowledged: 50)
            #expect(reader.bestMark(generation: 2, segment: 25, atOrBelow: 40) == nil)
            #expect(reader.bestMark(generation: 1, segment: 25, atOrBelow: 40) == LogMark(version: 40, segment: 25, offset: 600))
        }
    }
}
