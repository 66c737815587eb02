import CairnTestSupport
import KVEngine
import Testing

/// LMDB has no page checksums; Cairn's record checksum turns a flipped byte in the data
/// file into a typed error naming the table and key, never a silently wrong value.
@Suite struct RecordChecksumTests {
    @Test func aFlippedByteInTheLMDBFileIsATypedErrorNamingTableAndKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let marker = "needle-" + String(repeating: "Q", count: 40)
        let store = try Store(directory: directory.path)
        var batch = WriteBatch()
        for index in 0..<50 { batch.put("value-\(index)", forKey: "k\(index)", in: "people") }
        batch.put(marker, forKey: "target", in: "people")
        try store.commit(batch)
        store.close()  // applies everything to LMDB and retires the log

        // Find the record's value in the data file and flip one of its bytes.
        let path = directory.path + "/data.mdb"
        var data = try readFile(path)
        let needle = Array(marker.utf8)
        let offset = try #require(firstIndex(of: needle, in: data))
        data[offset + 10] ^= 0x20
        try writeFile(path, data)

        let reopened = try Store(directory: directory.path)
        let snapshot = try reopened.snapshot()
        #expect(throws: KVError.corruptRecord(table: "people", key: Array("target".utf8), reason: "record checksum mismatch")) {
            _ = try snapshot.get("target", in: "people")
        }
        // Other records still read, and a scan that reaches the record stops with the error.
        #expect(text(try snapshot.get("k7", in: "people")?.value) == "value-7")
        #expect(throws: KVError.self) { _ = try snapshot.scan(in: "people") }
        snapshot.close()
        reopened.close()
        let report = try Store.check(directory: directory.path)
        #expect(!report.isSound)
        #expect(report.problems.contains { $0.contains("people") && $0.contains("\"target\"") })
    }
}
