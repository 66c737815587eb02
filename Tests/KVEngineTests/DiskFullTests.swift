import CairnTestSupport
import Testing
@testable import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// A full disk, for real: a private tmpfs of a few KiB (root only; skipped with the reason
/// printed otherwise). The reliability suite sweeps many sizes (`DiskFullSweepTests`).
@Suite(.serialized) struct DiskFullTests {
    /// Creating a store with 4–96 KiB free: at 4 KiB LMDB's sparse lock file had no space
    /// behind its map (SIGBUS); at 16–32 KiB its first commit failed and the transaction
    /// LMDB had freed was aborted again (a double free). Each is a typed disk-full error
    /// now, in a child process so that a signal fails the test; with space back, the same
    /// directory opens (an interrupted creation is done again) and works.
    @Test(arguments: [4, 8, 16, 32, 64, 68, 72, 76, 80, 88, 96])
    func creatingAStoreOnANearlyFullDiskIsATypedErrorNeverASignal(kibibytes: Int) async throws {
        guard let disk = try SmallDisk(bytes: kibibytes << 10) else { return }
        defer { disk.remove() }
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [path = disk.path as String] in
            do {
                let store = try Store(directory: path + "/store")
                try store.put("k", "v")
                store.close()
            } catch let error as KVError where error.isDiskFull {
                guard error.description.contains("the disk is full") else {
                    print("a full disk described as \(error)")
                    exit(1)
                }
            } catch {
                print("not a disk-full error: \(error)")
                exit(1)
            }
            exit(0)
        }
        if let result, result.exitStatus != .exitCode(0) {
            Issue.record("\(kibibytes) KiB: \(String(decoding: result.standardOutputContent, as: UTF8.self))")
        }
        try disk.resize(bytes: 8 << 20)
        let store = try Store(directory: disk.path + "/store")
        defer { store.close() }
        try store.put("k", "v2")
        #expect(try store.string("k") == "v2")
    }

    /// lock.mdb has space behind every byte LMDB maps, and is exactly the size LMDB would
    /// give it (so `maxReaders` means what it says).
    @Test(arguments: [8, 126, 1024])
    func theLockFileIsAllocatedWhole(maxReaders: Int) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var options = Store.Options()
        options.maxReaders = maxReaders
        try Store(directory: directory.path, options: options).close()
        var info = stat()
        #expect(stat(directory.path + "/lock.mdb", &info) == 0)
        #expect(Int(info.st_size) == LMDBEnvironment.lockFileSize(maxReaders: maxReaders))
        #expect(Int(info.st_blocks) * 512 >= Int(info.st_size), "lock.mdb is sparse: \(info.st_blocks) blocks for \(info.st_size) bytes")
    }

    /// The disk fills while commits wait in the log (not yet in LMDB), and the process dies.
    /// Opening used to replay the log into LMDB first, so with no space every read failed
    /// ("Input/output error"). Now the store opens for reading only: every acknowledged
    /// commit reads, stats work, writes fail with a disk-full error, nothing on disk
    /// changes; with space back it opens normally and applies the log.
    @Test func aFullDiskStillOpensForReading() throws {
        guard let disk = try SmallDisk(bytes: 1 << 20) else { return }
        defer { disk.remove() }
        let path = disk.path + "/store"
        var options = lazyOptions()
        options.segmentSize = 64 << 10
        options.durability = .normal
        var acknowledged: [String] = []
        let store = try Store(directory: path, options: options)
        let value = String(repeating: "v", count: 2000)
        for index in 0..<2000 {
            do {
                try store.put("k\(index)", value)
                acknowledged.append("k\(index)")
            } catch {
                #expect((error as? KVError)?.isDiskFull == true, "\(error)")
                break
            }
        }
        store.simulateCrash()
        #expect(acknowledged.count > 50 && acknowledged.count < 2000, "\(acknowledged.count)")
        // Whatever room the failed commit left, take it too.
        let filler = open(disk.path + "/filler", O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 1, count: 4096)
        while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
        close(filler)

        let before = try directoryListing(path)
        let reading = try Store(directory: path, options: options)
        #expect(reading.recoveryReport.openedReadOnly?.isDiskFull == true, "\(reading.recoveryReport)")
        #expect(reading.recoveryReport.commitsHeldInMemory > 0)
        for key in acknowledged { #expect(try reading.string(key) == value, "\(key)") }
        // The commit that failed may be there too: its record can reach the log before the
        // write of the zeros after it fails (Durability.md, "I/O errors").
        let version = try reading.stats().commitVersion
        #expect(version == UInt64(acknowledged.count) || version == UInt64(acknowledged.count) + 1, "\(version)")
        do {
            try reading.put("new", "x")
            Issue.record("a commit succeeded on a store opened for reading")
        } catch {
            #expect((error as? KVError)?.isDiskFull == true, "\(error)")
            #expect("\(error)".contains("the disk is full"), "\(error)")
        }
        reading.close()
        #expect(try directoryListing(path) == before, "opening for reading changed the store's files")

        // Space is back (the log holds megabytes that LMDB must now take).
        unlink(disk.path + "/filler")
        try disk.resize(bytes: 64 << 20)
        let reopened = try Store(directory: path, options: options)
        defer { reopened.close() }
        #expect(reopened.recoveryReport.openedReadOnly == nil)
        #expect(reopened.recoveryReport.replayedCommits == Int(version))
        for key in acknowledged { #expect(try reopened.string(key) == value, "\(key)") }
        try reopened.put("new", "x")
    }

    /// Every file of a store with its size and the first bytes of its data (what a
    /// read-only open must leave alone).
    private func directoryListing(_ path: String) throws -> [String] {
        var listing: [String] = []
        for name in ["data.mdb"] + (try PosixFileSystem().contentsOfDirectory(path + "/wal")).sorted().map({ "wal/" + $0 }) {
            let bytes = try readFile(path + "/" + name)
            listing.append("\(name) \(bytes.count) \(bytes.reduce(UInt64(0)) { $0 &* 31 &+ UInt64($1) })")
        }
        return listing
    }
}

/// An interrupted creation (a data file shorter than LMDB's meta pages, no log record) is
/// created again; a short data file of a store whose log holds commits is damage, and says so.
@Suite struct InterruptedCreationTests {
    @Test(arguments: [0, 100, 4096])
    func anInterruptedCreationIsCreatedAgain(dataFileBytes: Int) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        mkdir(directory.path + "/wal", 0o700)
        let file = open(directory.path + "/data.mdb", O_WRONLY | O_CREAT, 0o600)
        ftruncate(file, off_t(dataFileBytes))
        close(file)
        let store = try Store(directory: directory.path)
        defer { store.close() }
        #expect(store.recoveryReport.creationRedone?.contains("creation was interrupted") == true)
        try store.put("k", "v")
        #expect(try store.string("k") == "v")
    }

    @Test func aShortDataFileOfAStoreWithCommitsIsDamageNamedAsSuch() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var options = lazyOptions()
        options.segmentSize = 4 << 10
        let store = try Store(directory: directory.path, options: options)
        for index in 0..<50 { try store.put("k\(index)", String(repeating: "v", count: 200)) }
        store.simulateCrash()
        truncate(directory.path + "/data.mdb", 0)
        do {
            _ = try Store(directory: directory.path)
            Issue.record("opened a store whose data file is gone")
        } catch {
            let text = "\(error)"
            #expect(text.contains("LMDB's data file is damaged"), "\(text)")
            #expect(!text.contains("not a Cairn file"), "\(text)")
        }
    }
}
