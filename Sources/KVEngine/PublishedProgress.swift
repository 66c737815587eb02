import CLMDB
#if canImport(Glibc)
import Glibc
#endif

// The writer's acknowledged log position, published to reader processes through a shared
// mapping of the store's `published` file. Docs/LogFormat.md describes it with the log.
//
//    0               8          12         16                 24                 32                 40
//   +---------------+----------+----------+------------------+------------------+------------------+
//   | magic         | format   | reserved | generation       | acknowledged     | start version    |
//   | "CAIRNPUB"    | u32 = 1  | u32 = 0  | u64              | u64              | u64              |
//   +---------------+----------+----------+------------------+------------------+------------------+
//
// The file is one page (4096 bytes). `generation` counts the writer opens that published
// (0: none yet); `acknowledged` is the newest commit version the writer has acknowledged
// (durably appended for `.full`, written for `.normal`); `start version` is the version the
// generation's writer opened at, which LMDB held then: a reader that saw a newer version of
// an older generation saw a commit that reopening lost (a power loss, a recovery cut). Both words are read and written
// with atomic loads and stores in the machine's byte order (little-endian on every platform
// Cairn builds for). FROZEN: offsets, magic and format are read by other processes.
// Nothing here is durable: after a crash, the next writer publishes afresh. From offset 64, the
// writer's marks of where records sit in the log (LogMarks.swift).

/// The published log position: written by the writer process, read by reader processes.
///
/// `@unchecked Sendable`: the mapping is immutable after init, and its two words are only
/// touched by atomic loads and stores (`cairn_load_acquire_u64`, `cairn_store_release_u64`).
package final class PublishedProgress: @unchecked Sendable {
    static let fileName = "published"
    static let size = 4096
    static let magic: [UInt8] = Array("CAIRNPUB".utf8)
    static let format: UInt32 = 1
    static let generationOffset = 16
    static let acknowledgedOffset = 24
    static let startOffset = 32

    private let base: UnsafeMutableRawPointer
    let writable: Bool

    private init(base: UnsafeMutableRawPointer, writable: Bool) {
        self.base = base
        self.writable = writable
    }

    deinit { munmap(base, PublishedProgress.size) }

    /// Opens the file for the writer: created and allocated (so a store through the mapping
    /// can never meet a full disk with SIGBUS), headed, and mapped read-write.
    package static func openForWriting(directory: String) throws(KVError) -> PublishedProgress {
        let path = directory + "/" + fileName
        let descriptor = try StoreFiles.open(path, flags: O_RDWR | O_CREAT)
        defer { Glibc.close(descriptor) }
        var code = posix_fallocate(descriptor, 0, off_t(size))
        while code == EINTR { code = posix_fallocate(descriptor, 0, off_t(size)) }
        if code != 0 { throw KVError.io(errno: code, operation: "posix_fallocate", path: path) }
        let progress = try map(descriptor, path: path, writable: true)
        if !progress.hasHeader {
            var header = ByteWriter()
            header.u32(format)
            header.u32(0)
            header.bytes.withUnsafeBytes { progress.base.advanced(by: 8).copyMemory(from: $0.baseAddress!, byteCount: 8) }
            magic.withUnsafeBytes { progress.base.copyMemory(from: $0.baseAddress!, byteCount: 8) }
        }
        return progress
    }

    /// Opens the file for a reader, creating it empty when no writer has yet (a store last
    /// written by a Cairn without readers): it then reads as generation 0 until one publishes.
    /// nil when it can neither be opened nor created (a read-only file system).
    package static func openForReading(directory: String) throws(KVError) -> PublishedProgress? {
        let path = directory + "/" + fileName
        let descriptor: Int32
        do throws(KVError) {
            descriptor = try StoreFiles.open(path, flags: O_RDWR | O_CREAT)
        } catch .io(let code, _, _) where code == EROFS || code == EACCES {
            guard let readable = try? StoreFiles.open(path, flags: O_RDONLY) else { return nil }
            descriptor = readable
        }
        defer { Glibc.close(descriptor) }
        var info = stat()
        try systemCall("fstat", path: path) { fstat(descriptor, &info) }
        if Int(info.st_size) < size {
            // Zeros: a hole is enough, the reader never writes through its mapping.
            guard ftruncate(descriptor, off_t(size)) == 0 else { return nil }
        }
        let progress = try map(descriptor, path: path, writable: false)
        if progress.hasHeader {
            let format = progress.base.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
            guard UInt32(littleEndian: format) == PublishedProgress.format else {
                throw KVError.wrongFormat(file: path, reason: "unknown published-progress format \(UInt32(littleEndian: format))")
            }
        }
        return progress
    }

    private static func map(_ descriptor: Int32, path: String, writable: Bool) throws(KVError) -> PublishedProgress {
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let base = mmap(nil, size, protection, MAP_SHARED, descriptor, 0), base != MAP_FAILED else {
            throw KVError.io(errno: errno, operation: "mmap", path: path)
        }
        return PublishedProgress(base: base, writable: writable)
    }

    private var hasHeader: Bool {
        PublishedProgress.magic.withUnsafeBytes { memcmp(base, $0.baseAddress!, 8) == 0 }
    }

    func word(_ offset: Int) -> UnsafeMutablePointer<UInt64> {
        base.advanced(by: offset).assumingMemoryBound(to: UInt64.self)
    }

    /// The generation and acknowledged version, in that order: a reader that sees a new
    /// generation rebuilds its view, so an acknowledged version read with an older
    /// generation only ever delays it. (0, 0) while no writer has published.
    package func read() -> (generation: UInt64, acknowledged: UInt64) {
        guard hasHeader else { return (0, 0) }
        let generation = cairn_load_acquire_u64(word(PublishedProgress.generationOffset))
        return (generation, cairn_load_acquire_u64(word(PublishedProgress.acknowledgedOffset)))
    }

    /// The version the current generation's writer opened at (see the layout).
    package var startVersion: UInt64 {
        hasHeader ? cairn_load_acquire_u64(word(PublishedProgress.startOffset)) : 0
    }

    /// A writer's open: its log ends at `acknowledged`, all of it in LMDB (recovery has
    /// finished); readers of the previous generation rebuild their views from LMDB and this log.
    package func begin(acknowledged: UInt64) {
        precondition(writable, "PublishedProgress.begin on a reader's mapping")
        let generation = cairn_load_acquire_u64(word(PublishedProgress.generationOffset))
        cairn_store_release_u64(word(PublishedProgress.startOffset), acknowledged)
        cairn_store_release_u64(word(PublishedProgress.acknowledgedOffset), acknowledged)
        cairn_store_release_u64(word(PublishedProgress.generationOffset), generation &+ 1)
    }

    /// Publishes that every commit through `version` is acknowledged (called by the commit
    /// leader after the group's append, and its sync when it has one, before any waiter of
    /// the group is told).
    package func publish(_ version: UInt64) {
        cairn_store_release_u64(word(PublishedProgress.acknowledgedOffset), version)
    }
}
