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
}
