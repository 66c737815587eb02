import CairnTestSupport
import Dispatch
import Locking
import Testing
@testable import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// The engine's promises about the files it opens (`StoreFiles`): never on descriptors 0-2,
/// and never anything but a regular file.
@Suite struct StoreFilesTests {
    /// In a child process started with 0, 1 and 2 closed: open a store (LMDB's files, the
    /// lock, the log), commit enough to rotate log segments, and look at what 0-2 are. A
    /// store file there would receive whatever the process writes to standard output.
    @Test func noStoreFileIsKeptOnAStandardDescriptor() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        await #expect(processExitsWith: .success) { [parent = scratch.path as String] in
            let directory = try TemporaryDirectory(in: parent)
            for descriptor in Int32(0)...2 { close(descriptor) }
            var options = busyOptions()
            options.segmentSize = 4 << 10  // new segments are opened while 0-2 are free
            let store = try Store(directory: directory.path, options: options)
            for index in 0..<100 { try store.put("k\(index)", String(repeating: "v", count: 300)) }
            _ = try store.checkpoint()
            for descriptor in 0...2 {
                var target = [UInt8](repeating: 0, count: 4096)
                let count = target.withUnsafeMutableBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { readlink("/proc/self/fd/\(descriptor)", $0.baseAddress!, $0.count) }
                }
                if count > 0 && String(decoding: target.prefix(count), as: UTF8.self).hasPrefix(directory.path) {
                    exit(Int32(10 + descriptor))
                }
            }
            store.close()
            _ = try Store.check(directory: directory.path)
            exit(0)
        }
    }

    /// Opening and checking, each on a thread watched for 10 s: a FIFO used to block the
    /// data-file verifier's open forever. When one hangs, opening the FIFO's other end lets
    /// it go on, so the failure is reported instead of the suite hanging.
    @Test(arguments: ["data.mdb", "lock.mdb", "LOCK", "segment"])
    func aStoreFileThatIsAFIFOIsAWrongFormatErrorNotAHang(file: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        try store.put("k", "v")
        store.close()
        let path: String
        if file == "segment" {
            let segments = try PosixFileSystem().contentsOfDirectory(directory.path + "/wal").sorted()
            path = directory.path + "/wal/" + (try #require(segments.last))
        } else {
            path = directory.path + "/" + file
        }
        #expect(unlink(path) == 0)
        #expect(mkfifo(path, 0o600) == 0)
        let expected = KVError.wrongFormat(file: path, reason: "it is a FIFO (named pipe), not a regular file")
        #expect(watched(path) { () throws(KVError) in _ = try Store(directory: directory.path) } == expected)
        #expect(watched(path) { () throws(KVError) in
            var options = Store.Options()
            options.verifyDataFile = false
            _ = try Store(directory: directory.path, options: options)
        } == expected)
        if file != "segment" {
            #expect(watched(path) { () throws(KVError) in _ = try Store.check(directory: directory.path) } == expected)
        }
    }

    @Test func aDataFileThatIsADirectoryIsAWrongFormatError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Store(directory: directory.path).put("k", "v")
        let path = directory.path + "/data.mdb"
        #expect(unlink(path) == 0)
        #expect(mkdir(path, 0o700) == 0)
        let expected = KVError.wrongFormat(file: path, reason: "it is a directory, not a regular file")
        #expect(throws: expected) { _ = try Store(directory: directory.path) }
        #expect(throws: expected) { _ = try Store.check(directory: directory.path) }
    }

    /// `check` says "no store" only when the data file is missing; another failure to look
    /// at it (here a symbolic-link loop, ELOOP) is that failure, not "no store".
    @Test func checkReportsNoStoreOnlyForAMissingDataFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(throws: KVError.noStore(path: directory.path)) { _ = try Store.check(directory: directory.path) }
        #expect(symlink("data.mdb", directory.path + "/data.mdb") == 0)
        #expect(throws: KVError.io(errno: ELOOP, operation: "stat", path: directory.path + "/data.mdb")) {
            _ = try Store.check(directory: directory.path)
        }
    }

    /// The error `body` threw (nil if none), or a recorded issue when it took over 10 s.
    private func watched(_ fifo: String, _ body: @escaping @Sendable () throws(KVError) -> Void) -> KVError? {
        let outcome = ConditionLock<KVError?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            do throws(KVError) {
                try body()
            } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        if done.wait(timeout: .now() + 10) == .timedOut {
            Issue.record("opening a store with a FIFO at \(fifo) hung")
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            done.wait()
            if writer >= 0 { close(writer) }
        }
        return outcome.value
    }
}

@Suite struct ScanBoundTests {
    /// An empty prefix is every key (LMDB cannot position at an empty key: MDB_BAD_VALSIZE),
    /// an empty lower bound no bound, an empty upper bound nothing.
    @Test func emptyPrefixesAndBoundsAreHandledWithoutAskingLMDB() throws {
        try withStore(lazyOptions()) { store, _ in
            try store.put("a", "1")
            try store.put("b", "2")
            try store.flush()
            try store.put("c", "3")  // in the overlay
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let all = ["a", "b", "c"].map(bytes)
            #expect(try snapshot.scan(prefix: []).map(\.key) == all)
            #expect(try snapshot.scan(prefix: [], reverse: true).map(\.key) == all.reversed())
            #expect(try snapshot.scan(from: []).map(\.key) == all)
            #expect(try snapshot.scan(from: [], reverse: true).map(\.key) == all.reversed())
            #expect(try snapshot.scan(to: []).isEmpty)
            #expect(try snapshot.scan(to: [], reverse: true).isEmpty)
        }
    }

    /// `onCorruptRecord` gets a record that fails its checksum instead of the visit ending.
    @Test func aCorruptRecordCanBeSkippedAndReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let marker = "needle-" + String(repeating: "Q", count: 40)
        let store = try Store(directory: directory.path)
        var batch = WriteBatch()
        for index in 0..<10 { batch.put("value-\(index)", forKey: "k\(index)") }
        batch.put(marker, forKey: "k5x")
        try store.commit(batch)
        store.close()
        let path = directory.path + "/data.mdb"
        var data = try readFile(path)
        let offset = try #require(firstIndex(of: Array(marker.utf8), in: data))
        data[offset + 10] ^= 0x20
        try writeFile(path, data)

        let reopened = try Store(directory: directory.path)
        defer { reopened.close() }
        let snapshot = try reopened.snapshot()
        defer { snapshot.close() }
        var seen: [String] = [], corrupt: [KVError] = []
        try snapshot.forEach(onCorruptRecord: { corrupt.append($0); return true }) { key, _, _ in
            seen.append(String(decoding: key, as: UTF8.self))
            return true
        }
        #expect(seen == (0..<10).map { "k\($0)" })
        #expect(corrupt == [.corruptRecord(table: "default", key: bytes("k5x"), reason: "record checksum mismatch")])
        // Returning false stops there; without the handler the visit throws, as before.
        seen = []
        try snapshot.forEach(onCorruptRecord: { _ in false }) { key, _, _ in
            seen.append(String(decoding: key, as: UTF8.self))
            return true
        }
        #expect(seen == (0...5).map { "k\($0)" })
        #expect(throws: KVError.self) { try snapshot.forEach { _, _, _ in true } }
    }
}
