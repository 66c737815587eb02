#if canImport(Glibc)
import Glibc
#endif

/// Sleeps until a directory's entries change (inotify), a timeout passes, or ``signal()`` is
/// called: what the remote-change watcher waits on. Without the directory (or without
/// inotify) it only times out and is signalled, and the watcher polls.
///
/// `@unchecked Sendable`: the descriptors are immutable after init, and the calls made on them
/// from other threads (`signal`'s write to a pipe) are safe on any thread. `close` runs once, after the
/// waiting thread has ended.
final class DirectoryWatch: @unchecked Sendable {
    private let inotify: Int32
    /// A pipe: `signal` writes a byte, `wait` polls the read end.
    private let wakeupRead: Int32
    private let wakeupWrite: Int32

    init(directory: String?) {
        var inotify: Int32 = -1
        if let directory {
            inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            // Appends to a segment (IN_MODIFY), new and renamed segments, and their removal.
            let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE)
            if inotify >= 0, inotify_add_watch(inotify, directory, mask) < 0 {
                Glibc.close(inotify)
                inotify = -1
            }
        }
        self.inotify = inotify
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
        } else {
            ends = [-1, -1]
        }
        wakeupRead = ends[0]
        wakeupWrite = ends[1]
    }

    /// Whether changes of the directory wake ``wait(timeout:)`` (else only its timeout does).
    var watchesDirectory: Bool { inotify >= 0 }

    /// Waits up to `timeout` seconds; true when the directory changed or `signal` was called.
    func wait(timeout: Double) -> Bool {
        var descriptors = [pollfd(fd: wakeupRead, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)]
        let count: nfds_t = inotify >= 0 ? 2 : 1
        var ready: Int32
        if timeout < 0.001 {
            // poll counts whole milliseconds: a shorter wait sleeps, then looks without waiting.
            ready = poll(&descriptors, count, 0)
            if ready == 0 {
                usleep(useconds_t(max(0, timeout) * 1e6))
                ready = poll(&descriptors, count, 0)
            }
        } else {
            ready = poll(&descriptors, count, Int32(min(timeout * 1000, 60_000).rounded(.up)))
        }
        guard ready > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        for descriptor in descriptors where descriptor.fd >= 0 && descriptor.revents != 0 {
            // Drain: the events themselves do not matter, only that something changed.
            while buffer.withUnsafeMutableBytes({ read(descriptor.fd, $0.baseAddress, $0.count) }) > 0 {}
        }
        return true
    }

    /// Wakes a ``wait(timeout:)`` now, or the next one at once.
    func signal() {
        var byte: UInt8 = 1
        _ = write(wakeupWrite, &byte, 1)  // a full pipe already wakes the waiter
    }

    func close() {
        if inotify >= 0 { Glibc.close(inotify) }
        if wakeupRead >= 0 { Glibc.close(wakeupRead) }
        if wakeupWrite >= 0 { Glibc.close(wakeupWrite) }
    }
}
