#if canImport(Glibc)
import Glibc
#endif

// Opening the store's own files: what every open of a store file must check, in one place.
//
// Two hazards of the process the store runs in, not of the store's bytes:
//
// - **A closed standard descriptor.** `open` returns the lowest free descriptor, so in a
//   process started with descriptor 0, 1 or 2 closed (`cairn ingest S >&-`) the next file
//   opened takes that number, and everything the process later writes to "standard output"
//   lands in the store file. No store file is ever kept on descriptors 0-2: the engine's
//   own opens move the descriptor above 2 (`F_DUPFD_CLOEXEC`), and LMDB, which opens its
//   files itself, opens them while every closed standard descriptor is held by /dev/null.
// - **A file that is not a regular file.** A FIFO under a store file's name blocks a
//   read-only `open` until a writer comes (a hang), and a device or directory reads as
//   nonsense. Every store file is opened with O_NONBLOCK (no effect on regular files) and
//   checked with `fstat` before it is used; LMDB's files are checked with `stat` before
//   LMDB opens them. Either way the error is `KVError.wrongFormat` naming the file and
//   what it is.

package enum StoreFiles {
    /// Opens a store file (creating it with mode 0600 when `flags` has O_CREAT), refusing
    /// anything but a regular file, on a descriptor above 2, close-on-exec.
    package static func open(_ path: String, flags: Int32) throws(KVError) -> Int32 {
        let opened: Int32
        do throws(KVError) {
            opened = try systemCall("open", path: path) { Glibc.open(path, flags | O_NONBLOCK | O_CLOEXEC, 0o600) }
        } catch .io(EISDIR, _, _) {
            // Opening a directory for writing fails before fstat could say what it is.
            throw KVError.wrongFormat(file: path, reason: "it is \(describe(S_IFDIR)), not a regular file")
        }
        var descriptor = opened
        do throws(KVError) {
            var info = stat()
            try systemCall("fstat", path: path) { fstat(opened, &info) }
            try requireRegular(info, path: path)
            // Back to blocking I/O: O_NONBLOCK was only for the open.
            let status = try systemCall("fcntl(F_GETFL)", path: path) { fcntl(opened, F_GETFL) }
            try systemCall("fcntl(F_SETFL)", path: path) { fcntl(opened, F_SETFL, status & ~O_NONBLOCK) }
            if opened <= STDERR_FILENO {
                descriptor = try systemCall("fcntl(F_DUPFD_CLOEXEC)", path: path) {
                    fcntl(opened, F_DUPFD_CLOEXEC, STDERR_FILENO + 1)
                }
                Glibc.close(opened)
            }
        } catch {
            Glibc.close(opened)
            throw error
        }
        return descriptor
    }

    /// Throws `wrongFormat` when `path` exists and is not a regular file (following
    /// symbolic links). For files another library opens (LMDB's), checked before it does.
    package static func requireRegularIfPresent(_ path: String) throws(KVError) {
        var info = stat()
        if stat(path, &info) == -1 {
            let code = errno
            if code == ENOENT { return }
            throw KVError.io(errno: code, operation: "stat", path: path)
        }
        try requireRegular(info, path: path)
    }

    private static func requireRegular(_ info: stat, path: String) throws(KVError) {
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFREG else { return }
        throw KVError.wrongFormat(file: path, reason: "it is \(describe(kind)), not a regular file")
    }

    /// "a FIFO (named pipe)", "a directory", ...: the file type of `st_mode & S_IFMT`.
    static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        case S_IFLNK: return "a symbolic link"
        default: return "a file of unknown type \(String(kind, radix: 8))"
        }
    }

    /// Runs `body` (which opens files through a library that calls `open` itself) while
    /// every closed descriptor among 0, 1 and 2 is held open on /dev/null, so that none of
    /// the files it opens can take one of those numbers; releases them afterwards, leaving
    /// the process's standard descriptors as they were.
    package static func withStandardDescriptorsHeld<Result>(
        _ body: () throws(KVError) -> Result
    ) throws(KVError) -> Result {
        var held: [Int32] = []
        defer { for descriptor in held { Glibc.close(descriptor) } }
        for descriptor in STDIN_FILENO...STDERR_FILENO where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            // The lowest free number: this one, or a lower one closed meanwhile (held too).
            let placeholder = Glibc.open("/dev/null", O_RDWR | O_CLOEXEC)
            if placeholder == -1 {
                throw KVError.io(errno: errno, operation: "open (to hold closed descriptor \(descriptor))", path: "/dev/null")
            }
            if placeholder > STDERR_FILENO {
                Glibc.close(placeholder)
            } else {
                held.append(placeholder)
            }
        }
        return try body()
    }
}
