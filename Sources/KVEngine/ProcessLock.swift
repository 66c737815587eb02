#if canImport(Glibc)
import Glibc
#endif

/// The store's `LOCK` file: one writer process (and one `Store`) at a time.
///
/// An exclusive `flock` on an open file description: it conflicts with any other open of
/// the file, in this process or another, and the kernel releases it when the process dies,
/// so a crash never leaves a stale lock. The holder's pid is written into the file so the
/// next opener can say who holds it.
final class ProcessLock {
    private let descriptor: Int32

    init(directory: String) throws(KVError) {
        let path = directory + "/LOCK"
        descriptor = try systemCall("open", path: path) { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        while flock(descriptor, LOCK_EX | LOCK_NB) == -1 {
            let code = errno
            if code == EINTR { continue }
            defer { close(descriptor) }
            if code == EWOULDBLOCK {
                var bytes = [UInt8](repeating: 0, count: 32)
                let count = pread(descriptor, &bytes, bytes.count, 0)
                let text = count > 0 ? String(decoding: bytes[0..<count], as: UTF8.self) : ""
                throw KVError.locked(path: directory, pid: Int32(text.trimmingCharacters(in: "\n ")))
            }
            throw KVError.io(errno: code, operation: "flock", path: path)
        }
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    deinit { close(descriptor) }
}

extension String {
    func trimmingCharacters(in characters: String) -> String {
        let set = Set(characters)
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
