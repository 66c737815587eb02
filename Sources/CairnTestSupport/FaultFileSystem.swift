import KVEngine
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// An in-memory file system for the log that remembers which bytes and directory entries
/// were made durable, fails chosen operations on demand, and can "lose power": the
/// surviving state keeps only what was synced, optionally plus a torn prefix (or garbage)
/// of what was not.
///
/// ```swift
/// let fileSystem = FaultFileSystem()
/// fileSystem.inject(.sync, at: 3, errno: EIO)     // the 3rd fdatasync fails
/// fileSystem.freeze(afterOperations: 40)          // power fails after 40 mutations
/// let survivor = fileSystem.afterPowerLoss(.dropUnsynced, seed: 7)
/// ```
///
/// `@unchecked Sendable`: every field is reached only under `lock`.
public final class FaultFileSystem: FileSystem, @unchecked Sendable {
    /// What a power loss leaves of bytes that were written but not synced.
    public enum PowerLoss: Sendable, CaseIterable {
        /// Nothing unsynced survives; files and entries created since the last directory
        /// sync vanish, removed ones come back.
        case dropUnsynced
        /// A random prefix of each file's unsynced bytes (from its first changed byte to
        /// its last) survives.
        case tornPrefix
        /// A random prefix survives, followed by a run of random garbage bytes.
        case tornGarbage
    }

    /// The operations that can be failed.
    public enum Operation: Sendable, Hashable, CaseIterable {
        case open, write, sync, truncate, remove, syncDirectory
    }

    struct FileState {
        var current: [UInt8] = []
        var durable: [UInt8] = []

        /// Where `current` differs from `durable`, from the first differing byte to the last
        /// (or to the end of `current` when it grew); nil when nothing differs, or when the
        /// file shrank (a power loss keeps the durable bytes then).
        var unsyncedRange: Range<Int>? {
            guard current.count >= durable.count else { return nil }
            let common = durable.count
            let first = (0..<common).first { current[$0] != durable[$0] } ?? common
            guard first < current.count else { return nil }
            if current.count > common { return first..<current.count }
            let last = (first..<common).last { current[$0] != durable[$0] }!
            return first..<(last + 1)
        }
    }

    struct State {
        var files: [String: FileState] = [:]
        /// Paths whose existence is durable (their directory was synced since creation).
        var durableEntries: Set<String> = []
        /// Removed files whose removal is not durable yet, with their durable bytes.
        var pendingRemovals: [String: [UInt8]] = [:]
        var directories: Set<String> = []
        var counts: [Operation: Int] = [:]
        var faults: [Operation: [Int: Int32]] = [:]
        var mutations = 0
        var freezeAfter: Int? = nil
        var frozenImage: State.Image? = nil

        /// A copy of what is on "disk" at one moment.
        struct Image {
            var files: [String: FileState]
            var durableEntries: Set<String>
            var pendingRemovals: [String: [UInt8]]
            var directories: Set<String>
        }
    }

    /// Guards `state` (an unused Int: see ConditionLock on zero-sized values under TSan).
    private let lock = ConditionLock<Int>(0)
    private var state = State()

    public init() {}

    private init(state: State) { self.state = state }

    /// Fails the `occurrence`-th call (1-based, counted from now) of `operation` with `errno`.
    public func inject(_ operation: Operation, at occurrence: Int, errno code: Int32) {
        lock.withLock { _ in
            let base = state.counts[operation, default: 0]
            state.faults[operation, default: [:]][base + occurrence] = code
        }
    }

    /// After `count` more mutating operations (writes, syncs, truncations, removals,
    /// directory syncs), the disk freezes: its image is kept for `afterPowerLoss`, and
    /// every later operation fails with EIO, as if the machine had lost power.
    public func freeze(afterOperations count: Int) {
        lock.withLock { _ in state.freezeAfter = state.mutations + count }
    }

    /// Freezes now.
    public func freezeNow() {
        lock.withLock { _ in
            state.freezeAfter = state.mutations
            if state.frozenImage == nil { state.frozenImage = image() }
        }
    }

    /// Whether the disk has frozen.
    public var isFrozen: Bool { lock.withLock { _ in state.frozenImage != nil } }

    /// How many times each operation ran.
    public func count(of operation: Operation) -> Int { lock.withLock { _ in state.counts[operation, default: 0] } }

    /// The file system a machine would boot with after losing power now (or at the freeze).
    public func afterPowerLoss(_ loss: PowerLoss, seed: UInt64) -> FaultFileSystem {
        var random = SeededRandom(seed: seed)
        let frozen = lock.withLock { _ in state.frozenImage ?? image() }
        var survivor = State()
        survivor.directories = frozen.directories
        for (path, file) in frozen.files {
            guard frozen.durableEntries.contains(path) else { continue }
            var bytes = file.durable
            if loss != .dropUnsynced, let unsynced = file.unsyncedRange {
                // A prefix of the unsynced range keeps what was written there.
                let kept = Int(random.next(upTo: UInt64(unsynced.count + 1)))
                let keptEnd = unsynced.lowerBound + kept
                if bytes.count < keptEnd { bytes += [UInt8](repeating: 0, count: keptEnd - bytes.count) }
                bytes.replaceSubrange(unsynced.lowerBound..<keptEnd, with: file.current[unsynced.lowerBound..<keptEnd])
                if loss == .tornGarbage && kept < unsynced.count {
                    let garbageCount = Int(random.next(upTo: UInt64(Swift.min(unsynced.count - kept, 64) + 1)))
                    for index in keptEnd..<(keptEnd + garbageCount) {
                        let garbage = UInt8(truncatingIfNeeded: random.next())
                        if index < bytes.count { bytes[index] = garbage } else { bytes.append(garbage) }
                    }
                }
            }
            survivor.files[path] = FileState(current: bytes, durable: bytes)
            survivor.durableEntries.insert(path)
        }
        for (path, bytes) in frozen.pendingRemovals where survivor.files[path] == nil {
            survivor.files[path] = FileState(current: bytes, durable: bytes)
            survivor.durableEntries.insert(path)
        }
        return FaultFileSystem(state: survivor)
    }

    /// The current bytes of a file (tests that corrupt files by hand).
    public func contents(of path: String) -> [UInt8]? { lock.withLock { _ in state.files[path]?.current } }

    /// Replaces a file's bytes, durably (tests that corrupt files by hand).
    public func setContents(of path: String, to bytes: [UInt8]) {
        lock.withLock { _ in
            state.files[path] = FileState(current: bytes, durable: bytes)
            state.durableEntries.insert(path)
        }
    }

    /// Paths of every file.
    public var paths: [String] { lock.withLock { _ in state.files.keys.sorted() } }

    private func image() -> State.Image {
        State.Image(files: state.files, durableEntries: state.durableEntries,
                    pendingRemovals: state.pendingRemovals, directories: state.directories)
    }

    /// Counts an operation; throws its injected fault or, once frozen, EIO. Under `lock`.
    private func step(_ operation: Operation, path: String, mutates: Bool) throws(KVError) {
        state.counts[operation, default: 0] += 1
        if state.frozenImage != nil {
            throw KVError.io(errno: EIO, operation: "\(operation)", path: path)
        }
        if let code = state.faults[operation]?[state.counts[operation]!] {
            throw KVError.io(errno: code, operation: "\(operation)", path: path)
        }
        if mutates {
            if let limit = state.freezeAfter, state.mutations >= limit {
                state.frozenImage = image()
                throw KVError.io(errno: EIO, operation: "\(operation)", path: path)
            }
            state.mutations += 1
        }
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    // MARK: FileSystem

    package func open(_ path: String, create: Bool) throws(KVError) -> any LogFile {
        try lock.withLock { (_) throws(KVError) in
            try step(.open, path: path, mutates: create && state.files[path] == nil)
            if state.files[path] == nil {
                guard create else { throw KVError.io(errno: ENOENT, operation: "open", path: path) }
                guard state.directories.contains(FaultFileSystem.parent(of: path)) else {
                    throw KVError.io(errno: ENOENT, operation: "open", path: path)
                }
                state.files[path] = FileState()
            }
        }
        return FaultFile(fileSystem: self, path: path)
    }

    package func contentsOfDirectory(_ path: String) throws(KVError) -> [String] {
        try lock.withLock { (_) throws(KVError) in
            guard state.directories.contains(path) else { throw KVError.io(errno: ENOENT, operation: "opendir", path: path) }
            return state.files.keys.filter { FaultFileSystem.parent(of: $0) == path }
                .map { String($0.dropFirst(path.count + 1)) }
        }
    }

    package func createDirectory(_ path: String) throws(KVError) {
        lock.withLock { _ in _ = state.directories.insert(path) }
    }

    package func remove(_ path: String) throws(KVError) {
        try lock.withLock { (_) throws(KVError) in
            try step(.remove, path: path, mutates: true)
            guard let file = state.files.removeValue(forKey: path) else {
                throw KVError.io(errno: ENOENT, operation: "unlink", path: path)
            }
            if state.durableEntries.remove(path) != nil { state.pendingRemovals[path] = file.durable }
        }
    }

    package func syncDirectory(_ path: String) throws(KVError) {
        try lock.withLock { (_) throws(KVError) in
            try step(.syncDirectory, path: path, mutates: true)
            for file in state.files.keys where FaultFileSystem.parent(of: file) == path {
                state.durableEntries.insert(file)
            }
            for file in state.pendingRemovals.keys where FaultFileSystem.parent(of: file) == path {
                state.pendingRemovals[file] = nil
            }
        }
    }

    package func exists(_ path: String) -> Bool {
        lock.withLock { _ in state.files[path] != nil || state.directories.contains(path) }
    }

    // MARK: File operations, for FaultFile

    fileprivate func size(_ path: String) throws(KVError) -> Int {
        try lock.withLock { (_) throws(KVError) in
            guard let file = state.files[path] else { throw KVError.io(errno: EBADF, operation: "fstat", path: path) }
            return file.current.count
        }
    }

    fileprivate func read(_ path: String, at offset: Int, count: Int) throws(KVError) -> [UInt8] {
        try lock.withLock { (_) throws(KVError) in
            guard let file = state.files[path] else { throw KVError.io(errno: EBADF, operation: "pread", path: path) }
            let start = min(offset, file.current.count)
            return Array(file.current[start..<min(start + count, file.current.count)])
        }
    }

    fileprivate func write(_ path: String, _ bytes: UnsafeRawBufferPointer, at offset: Int) throws(KVError) {
        try lock.withLock { (_) throws(KVError) in
            try step(.write, path: path, mutates: true)
            guard state.files[path] != nil else { throw KVError.io(errno: EBADF, operation: "pwrite", path: path) }
            let end = offset + bytes.count
            if state.files[path]!.current.count < end {
                state.files[path]!.current += [UInt8](repeating: 0, count: end - state.files[path]!.current.count)
            }
            state.files[path]!.current.withUnsafeMutableBytes { raw in
                UnsafeMutableRawBufferPointer(rebasing: raw[offset..<end]).copyMemory(from: bytes)
            }
        }
    }

    fileprivate func truncate(_ path: String, to length: Int) throws(KVError) {
        try lock.withLock { (_) throws(KVError) in
            try step(.truncate, path: path, mutates: true)
            guard state.files[path] != nil else { throw KVError.io(errno: EBADF, operation: "ftruncate", path: path) }
            let file = state.files[path]!
            state.files[path]!.current = length <= file.current.count
                ? Array(file.current.prefix(length))
                : file.current + [UInt8](repeating: 0, count: length - file.current.count)
        }
    }

    fileprivate func sync(_ path: String) throws(KVError) {
        try lock.withLock { (_) throws(KVError) in
            try step(.sync, path: path, mutates: true)
            guard state.files[path] != nil else { throw KVError.io(errno: EBADF, operation: "fdatasync", path: path) }
            state.files[path]!.durable = state.files[path]!.current
        }
    }
}

/// An open file of a `FaultFileSystem`.
final class FaultFile: LogFile, @unchecked Sendable {
    let fileSystem: FaultFileSystem
    let path: String

    init(fileSystem: FaultFileSystem, path: String) {
        self.fileSystem = fileSystem
        self.path = path
    }

    func size() throws(KVError) -> Int { try fileSystem.size(path) }
    func read(at offset: Int, count: Int) throws(KVError) -> [UInt8] { try fileSystem.read(path, at: offset, count: count) }
    /// No holes in memory: all of the file is data.
    func dataEnd() throws(KVError) -> Int { try fileSystem.size(path) }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(KVError) { try fileSystem.write(path, bytes, at: offset) }
    func truncate(to length: Int) throws(KVError) { try fileSystem.truncate(path, to: length) }
    func sync() throws(KVError) { try fileSystem.sync(path) }
    func close() {}
}
