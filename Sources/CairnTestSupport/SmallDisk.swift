#if canImport(Glibc)
import Glibc
#endif
import KVEngine

/// A real, small file system: a private tmpfs of a given size mounted on a fresh temporary
/// directory, for tests that fill a disk for real (ENOSPC from the kernel, and SIGBUS where
/// a mapped file has no space behind it). Needs root (`mount(2)`); `unavailableReason` says
/// why it cannot run otherwise, and tests print it and skip.
///
/// ```swift
/// guard let disk = try SmallDisk(bytes: 16 << 10) else { return }  // printed why
/// defer { disk.remove() }
/// ```
public final class SmallDisk: Sendable {
    /// The mount point.
    public let path: String
    private let scratch: TemporaryDirectory

    /// Why small disks cannot be mounted here, or nil when they can.
    public static var unavailableReason: String? {
        geteuid() == 0 ? nil : "skipped: mounting a small tmpfs needs root (running as uid \(geteuid()))"
    }

    /// Mounts a tmpfs of `bytes` (rounded up by the kernel to whole pages). nil, with the
    /// reason printed, when not root.
    public init?(bytes: Int, prefix: String = "cairn-small-disk") throws {
        if let reason = SmallDisk.unavailableReason {
            print(reason)
            return nil
        }
        scratch = try TemporaryDirectory(prefix: prefix)
        path = scratch.path
        let options = "size=\(bytes),mode=0700"
        guard mount("tmpfs", path, "tmpfs", 0, options) == 0 else {
            let code = errno
            scratch.remove()
            throw KVError.io(errno: code, operation: "mount(tmpfs, \(options))", path: path)
        }
    }

    /// Changes the size (space freed, or taken away): `mount -o remount,size=`.
    public func resize(bytes: Int) throws {
        let options = "size=\(bytes)"
        guard mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT), options) == 0 else {
            throw KVError.io(errno: errno, operation: "mount(remount, \(options))", path: path)
        }
    }

    /// Bytes still free.
    public var freeBytes: Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bfree) * Int(info.f_frsize)
    }

    /// Unmounts (lazily, should a file still be open) and removes the mount point.
    public func remove() {
        umount2(path, Int32(MNT_DETACH))
        scratch.remove()
    }
}
