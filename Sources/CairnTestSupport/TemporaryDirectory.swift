#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp (or under `parent`), removed (with everything in it) by
/// `remove()`.
///
/// ```swift
/// let directory = try TemporaryDirectory()
/// defer { directory.remove() }
/// let store = try Store(directory: directory.path)
/// ```
///
/// An exit test's child process stops before it can remove anything, so the test makes a
/// directory in the parent, removes it there, and the child makes its own inside it:
///
/// ```swift
/// let scratch = try TemporaryDirectory()
/// defer { scratch.remove() }
/// await #expect(processExitsWith: .failure) { [parent = scratch.path as String] in
///     let directory = try TemporaryDirectory(in: parent)
///     ...
/// }
/// ```
public struct TemporaryDirectory: Sendable {
    /// The directory's path.
    public let path: String

    public init(prefix: String = "cairn-test", in parent: String = "/tmp") throws {
        var template = Array("\(parent)/\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw KVError.io(errno: errno, operation: "mkdtemp", path: parent)
        }
        path = String(cString: made)
    }

    /// An existing directory, to remove later.
    init(existing path: String) {
        self.path = path
    }

    /// Removes the directory and its contents.
    public func remove() {
        _ = removeTree(path)
    }
}

import KVEngine

@discardableResult
func removeTree(_ path: String) -> Bool {
    guard let directory = opendir(path) else { return unlink(path) == 0 }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        if name == "." || name == ".." { continue }
        let child = path + "/" + name
        if entry.pointee.d_type == UInt8(DT_DIR) { removeTree(child) } else { unlink(child) }
    }
    closedir(directory)
    return rmdir(path) == 0
}
