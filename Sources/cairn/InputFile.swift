#if canImport(Glibc)
import Glibc
#endif

/// Reading a whole file the user named (a scenario file): only a regular file, at most
/// `limit` bytes, with the system's reason when it cannot be read. A FIFO would block
/// Foundation's reader forever, a directory gave "NSCocoaErrorDomain error 256", and a
/// huge file would be read whole before the parser refused it.
enum InputFile {
    /// The largest scenario file read: far above any real one.
    static let scenarioLimit = 16 << 20

    /// Why a file cannot be read, as a sentence fragment: "is a directory, not a file".
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(description: "cannot open it: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw Failure(description: "cannot stat it: \(String(cString: strerror(errno)))")
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG else {
            throw Failure(description: "it is \(fileKind(kind)), not a regular file")
        }
        guard Int(info.st_size) <= limit else {
            throw Failure(description: "it is \(info.st_size) bytes; the limit is \(limit) bytes")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
            if count == -1 {
                if errno == EINTR { continue }
                throw Failure(description: "cannot read it: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            // The file may grow while it is read.
            guard bytes.count + count <= limit else {
                throw Failure(description: "it is more than the limit of \(limit) bytes")
            }
            bytes += chunk[..<count]
        }
    }

    /// "a directory", "a FIFO (named pipe)", ... for `st_mode & S_IFMT`.
    static func fileKind(_ kind: mode_t) -> String {
        switch kind {
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file (type \(String(kind, radix: 8)))"
        }
    }
}
