import Locking
#if canImport(Glibc)
import Glibc
#endif

/// The store's `LOCK` file: one writer process (and one `Store`) at a time.
///
/// Across processes: a POSIX record lock (`F_SETLK`) on the whole file. It belongs to the
/// process, so the kernel drops it when the process dies (no stale lock after a crash),
/// and, unlike `flock`, a child that a fork or `posix_spawn` creates does not share it,
/// so a child that has not yet exec'd cannot keep the store locked after we close it.
/// Record locks do not conflict inside one process, so a registry of locked directories
/// catches a second `Store` in this process. `F_GETLK` names the holder's pid.
final class ProcessLock {
    private static let lockedDirectories = ConditionLock<Set<String>>([])
    private let descriptor: Int32
    private let key: String

    /// Takes the store's lock for a writer; `reading`: only this process's registry entry,
    /// for a read-only `Store`, which takes no lock other processes could see (readers never
    /// keep a writer out). The entry matters for readers too: LMDB's liveness lock on
    /// lock.mdb belongs to the process, and a second environment of the same store in one
    /// process would drop it on close, letting a writer reclaim the first one's reader slots.
    init(directory: String, reading: Bool = false) throws(KVError) {
        // Acquired before `self` exists: a class whose init throws after its stored
        // properties are set still runs deinit, which would release what it never held.
        let key = ProcessLock.canonical(directory)
        try ProcessLock.lockedDirectories.withLock { (locked) throws(KVError) in
            if locked.contains(key) { throw KVError.locked(path: directory, pid: getpid()) }
            locked.insert(key)
        }
        if reading {
            descriptor = -1
        } else {
            do {
                descriptor = try ProcessLock.acquire(directory: directory)
            } catch {
                ProcessLock.lockedDirectories.withLock { _ = $0.remove(key) }
                throw error
            }
        }
        self.key = key
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        ProcessLock.lockedDirectories.withLock { _ = $0.remove(key) }
    }

    /// The pid of the process holding `directory`'s lock (a writer), or nil when none does.
    /// Never call it for a directory this process has open: closing its descriptor of
    /// `LOCK` would drop this process's lock (the registry refuses such opens first).
    static func holder(directory: String) -> Int32? {
        let descriptor = Glibc.open(directory + "/LOCK", O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var holder = flock()
        holder.l_type = Int16(F_WRLCK)
        holder.l_whence = Int16(SEEK_SET)
        guard fcntl(descriptor, F_GETLK, &holder) == 0, holder.l_type != Int16(F_UNLCK) else { return nil }
        return holder.l_pid
    }

    private static func canonical(_ directory: String) -> String {
        guard let resolved = realpath(directory, nil) else { return directory }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func acquire(directory: String) throws(KVError) -> Int32 {
        let path = directory + "/LOCK"
        let descriptor = try StoreFiles.open(path, flags: O_RDWR | O_CREAT)
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        while fcntl(descriptor, F_SETLK, &request) == -1 {
            let code = errno
            if code == EINTR { continue }
            defer { close(descriptor) }
            if code == EACCES || code == EAGAIN {
                var holder = flock()
                holder.l_type = Int16(F_WRLCK)
                holder.l_whence = Int16(SEEK_SET)
                let known = fcntl(descriptor, F_GETLK, &holder) == 0 && holder.l_type != Int16(F_UNLCK)
                throw KVError.locked(path: directory, pid: known ? holder.l_pid : nil)
            }
            throw KVError.io(errno: code, operation: "fcntl(F_SETLK)", path: path)
        }
        // The pid in the file is for people looking at the directory; F_GETLK is the truth.
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return descriptor
    }
}
