#if canImport(Glibc)
import Glibc
#endif

/// The file operations the write-ahead log needs, and nothing more.
///
/// All log I/O goes through this protocol so that tests can substitute a file system that
/// fails on demand or forgets unsynced bytes, the way power loss does. LMDB does its own
/// I/O and is not covered: its commits are fully synced, so its durable state is its
/// committed state.
package protocol FileSystem: Sendable {
    /// Opens a file for reading and writing; `create` makes it (mode 0600) if missing.
    func open(_ path: String, create: Bool) throws(KVError) -> any LogFile
    /// The names (not paths) of the entries of a directory.
    func contentsOfDirectory(_ path: String) throws(KVError) -> [String]
    /// Creates a directory (mode 0700) if it does not exist.
    func createDirectory(_ path: String) throws(KVError)
    /// Removes a file.
    func remove(_ path: String) throws(KVError)
    /// Makes the creation and removal of the directory's entries durable.
    func syncDirectory(_ path: String) throws(KVError)
    /// Whether a file or directory exists.
    func exists(_ path: String) -> Bool
}

/// An open file of the log: positional reads and writes, truncation and fdatasync.
package protocol LogFile: AnyObject, Sendable {
    /// The file's current size in bytes.
    func size() throws(KVError) -> Int
    /// Where the file's last data ends: past it the file is a hole that reads as zeros (or
    /// the file ends). Lets recovery skip the never-written part of a segment.
    func dataEnd() throws(KVError) -> Int
    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file.
    func read(at offset: Int, count: Int) throws(KVError) -> [UInt8]
    /// Writes all of `bytes` at `offset`, extending the file if they reach past its end.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(KVError)
    /// Sets the file's size to `length` bytes: cuts it, or extends it with zeros.
    func truncate(to length: Int) throws(KVError)
    /// Makes every byte written so far durable (fdatasync).
    func sync() throws(KVError)
    /// Closes the file; further calls are programming errors.
    func close()
}

/// The real file system, through POSIX calls.
package struct PosixFileSystem: FileSystem {
    package init() {}

    /// Refuses a file that is not a regular file, and never keeps one on descriptors 0-2
    /// (see `StoreFiles`).
    package func open(_ path: String, create: Bool) throws(KVError) -> any LogFile {
        let descriptor = try StoreFiles.open(path, flags: O_RDWR | (create ? O_CREAT : 0))
        return PosixLogFile(descriptor: descriptor, path: path)
    }

    package func contentsOfDirectory(_ path: String) throws(KVError) -> [String] {
        guard let directory = opendir(path) else {
            throw KVError.io(errno: errno, operation: "opendir", path: path)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    package func createDirectory(_ path: String) throws(KVError) {
        if mkdir(path, 0o700) == -1 && errno != EEXIST {
            throw KVError.io(errno: errno, operation: "mkdir", path: path)
        }
    }

    package func remove(_ path: String) throws(KVError) {
        try systemCall("unlink", path: path) { unlink(path) }
    }

    package func syncDirectory(_ path: String) throws(KVError) {
        let descriptor = try systemCall("open", path: path) {
            Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        defer { Glibc.close(descriptor) }
        try systemCall("fsync", path: path) { fsync(descriptor) }
    }

    package func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }
}

/// A log file backed by a POSIX file descriptor.
///
/// `@unchecked Sendable`: the descriptor is immutable after init and the kernel serialises
/// the calls; the log writer's lock orders the appends.
package final class PosixLogFile: LogFile, @unchecked Sendable {
    let descriptor: Int32
    let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    package func size() throws(KVError) -> Int {
        var info = stat()
        try systemCall("fstat", path: path) { fstat(descriptor, &info) }
        return Int(info.st_size)
    }

    /// Linux's SEEK_DATA and SEEK_HOLE (Glibc exports them only under _GNU_SOURCE).
    static let seekData: Int32 = 3, seekHole: Int32 = 4

    package func dataEnd() throws(KVError) -> Int {
        let size = try self.size()
        // Walk the data regions; SEEK_DATA fails with ENXIO past the last one.
        var position: off_t = 0, end: off_t = 0
        while position < size {
            let data = lseek(descriptor, position, PosixLogFile.seekData)
            if data == -1 {
                if errno == ENXIO { break }
                return size  // No hole support: everything may be data.
            }
            let hole = lseek(descriptor, data, PosixLogFile.seekHole)
            if hole == -1 { return size }
            end = hole
            position = hole
        }
        return Int(end)
    }

    package func read(at offset: Int, count: Int) throws(KVError) -> [UInt8] {
        // Not zeroed first: only the bytes read are kept (zeroing was most of a small read).
        var failure: Int32 = 0
        let buffer = [UInt8](unsafeUninitializedCapacity: count) { raw, initialized in
            var done = 0
            while done < count {
                let got = pread(descriptor, raw.baseAddress! + done, count - done, off_t(offset + done))
                if got == -1 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                if got == 0 { break }
                done += got
            }
            initialized = done
        }
        if failure != 0 { throw KVError.io(errno: failure, operation: "pread", path: path) }
        return buffer
    }

    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(KVError) {
        var done = 0
        while done < bytes.count {
            let wrote = try systemCall("pwrite", path: path) {
                pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            }
            done += wrote
        }
    }

    package func truncate(to length: Int) throws(KVError) {
        try systemCall("ftruncate", path: path) { ftruncate(descriptor, off_t(length)) }
    }

    package func sync() throws(KVError) {
        try systemCall("fdatasync", path: path) { fdatasync(descriptor) }
    }

    package func close() {
        Glibc.close(descriptor)
    }
}
