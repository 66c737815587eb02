import CairnTestSupport
import Foundation
import KVEngine

/// Options that make the applier and the log's segment rotation busy in small tests.
func busyOptions() -> Store.Options {
    var options = Store.Options()
    options.applyInterval = 0.002
    options.applyThreshold = 4096
    options.segmentSize = 16 << 10
    options.mapSize = 64 << 20
    return options
}

/// Options that keep commits in the overlay (the applier waits a long time).
func lazyOptions() -> Store.Options {
    var options = Store.Options()
    options.applyInterval = 3600
    options.applyThreshold = Int.max
    options.mapSize = 64 << 20
    return options
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

/// Runs `body` with a store in a fresh directory, then closes it and removes the directory.
func withStore<Result>(
    _ options: Store.Options = Store.Options(),
    fileSystem: (any FileSystem)? = nil,
    _ body: (Store, TemporaryDirectory) throws -> Result
) throws -> Result {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let store = try Store(directory: directory.path, options: options, fileSystem: fileSystem ?? PosixFileSystem())
    defer { store.close() }
    return try body(store, directory)
}

/// Runs `body` with a copy of the store in `directory` as its writer, killed now, would leave
/// it (LMDB, the published page and the log as they are), for a reader that follows the log
/// without a writer appending under it.
func withCopy<Result>(of directory: TemporaryDirectory, _ body: (String) throws -> Result) throws -> Result {
    let copy = try TemporaryDirectory(prefix: "cairn-store-copy")
    defer { copy.remove() }
    let files = FileManager.default
    try files.createDirectory(atPath: copy.path + "/wal", withIntermediateDirectories: true)
    for name in ["data.mdb", "published"] {
        try files.copyItem(atPath: directory.path + "/" + name, toPath: copy.path + "/" + name)
    }
    for name in try files.contentsOfDirectory(atPath: directory.path + "/wal") {
        try files.copyItem(atPath: directory.path + "/wal/" + name, toPath: copy.path + "/wal/" + name)
    }
    return try body(copy.path)
}

/// A read-only store on `path`, with the map size of `lazyOptions`.
func openReader(_ path: String) throws -> Store {
    var options = Store.Options()
    options.readOnly = true
    options.mapSize = lazyOptions().mapSize
    return try Store(directory: path, options: options)
}

extension Store {
    /// Commits one put of UTF-8 strings.
    @discardableResult
    func put(_ key: String, _ value: String, in table: String = WriteBatch.defaultTable,
             if condition: Condition? = nil) throws -> CommitInfo {
        var batch = WriteBatch()
        batch.put(value, forKey: key, in: table, if: condition)
        return try commit(batch)
    }

    /// The latest value of a UTF-8 key as a string.
    func string(_ key: String, in table: String = WriteBatch.defaultTable) throws -> String? {
        let snapshot = try self.snapshot()
        defer { snapshot.close() }
        return text(try snapshot.get(key, in: table)?.value)
    }
}

/// Where `needle` first occurs in `haystack` (tests that find a value in LMDB's data file).
func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard needle.count <= haystack.count, let first = needle.first else { return nil }
    for start in 0...(haystack.count - needle.count) where haystack[start] == first {
        if Array(haystack[start..<start + needle.count]) == needle { return start }
    }
    return nil
}
