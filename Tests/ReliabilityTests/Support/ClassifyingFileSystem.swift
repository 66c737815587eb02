import CairnTestSupport
import KVEngine
import Locking

/// The part of the engine a mutating log I/O call belongs to, for crash-point accounting.
enum IOPhase: String, CaseIterable, Sendable {
    /// Anything while `Store.init` runs: cutting a torn tail, the fresh segment, retiring.
    case recovery
    /// Writing a group's records.
    case append
    /// The fdatasync of a `.full` commit.
    case appendSync
    /// Creating a segment: open, truncate, header write, header sync, directory sync; and
    /// the sync that seals the previous segment.
    case rotation
    /// The applier's sync before it applies, during a checkpoint or flush.
    case checkpointSync
    /// Deleting retired segments and syncing the directory after.
    case retire
}

/// What the workload is doing, set by the script so the file system can classify calls.
enum WorkloadPhase: Sendable {
    case opening, committing, checkpointing
}

/// A `FileSystem` in front of a `FaultFileSystem` that classifies every mutating call
/// (`IOPhase`), records the sequence (a clean run's crash-point map) and remembers which
/// call froze the disk.
///
/// `@unchecked Sendable`: the mutable state is behind a `ConditionLock`.
final class ClassifyingFileSystem: FileSystem, @unchecked Sendable {
    let base: FaultFileSystem
    private struct State {
        var workload: WorkloadPhase = .opening
        var trace: [IOPhase] = []
        var frozenAt: IOPhase? = nil
        var last: IOPhase? = nil
        var lastWasRemove = false
    }
    private let state = ConditionLock(State())

    init(_ base: FaultFileSystem) { self.base = base }

    /// Every mutating call so far, classified, in order.
    var trace: [IOPhase] { state.withLock { $0.trace } }

    /// The phase of the call that froze the disk, if one did.
    var frozenAt: IOPhase? { state.withLock { $0.frozenAt } }

    func setPhase(_ phase: WorkloadPhase) { state.withLock { $0.workload = phase } }

    /// Runs a mutating call of kind `kind`, classified; notes whether it froze the disk.
    fileprivate func mutation<Result>(_ kind: (WorkloadPhase, IOPhase?) -> IOPhase, isRemove: Bool = false,
                                      _ body: () throws(KVError) -> Result) throws(KVError) -> Result {
        let phase = state.withLock { state -> IOPhase in
            let phase = state.workload == .opening ? IOPhase.recovery : kind(state.workload, state.lastWasRemove ? .retire : state.last)
            state.trace.append(phase)
            state.last = phase
            state.lastWasRemove = isRemove
            return phase
        }
        let wasFrozen = base.isFrozen
        do {
            return try body()
        } catch {
            if !wasFrozen && base.isFrozen { state.withLock { if $0.frozenAt == nil { $0.frozenAt = phase } } }
            throw error
        }
    }

    func open(_ path: String, create: Bool) throws(KVError) -> any LogFile {
        let file: any LogFile
        if create && !base.exists(path) {
            file = try mutation({ _, _ in .rotation }) { () throws(KVError) in try base.open(path, create: create) }
        } else {
            file = try base.open(path, create: create)
        }
        return ClassifyingLogFile(file: file, fileSystem: self)
    }

    func contentsOfDirectory(_ path: String) throws(KVError) -> [String] { try base.contentsOfDirectory(path) }

    func createDirectory(_ path: String) throws(KVError) { try base.createDirectory(path) }

    func remove(_ path: String) throws(KVError) {
        try mutation({ _, _ in .retire }, isRemove: true) { () throws(KVError) in try base.remove(path) }
    }

    func syncDirectory(_ path: String) throws(KVError) {
        // After a remove it makes a retirement durable; otherwise a new segment's entry.
        try mutation({ _, last in last == .retire ? .retire : .rotation }) { () throws(KVError) in try base.syncDirectory(path) }
    }

    func exists(_ path: String) -> Bool { base.exists(path) }
}

/// A file of a `ClassifyingFileSystem`.
final class ClassifyingLogFile: LogFile, @unchecked Sendable {
    let file: any LogFile
    let fileSystem: ClassifyingFileSystem
    /// Whether the last mutation was part of a rotation (a header, a seal, a size change):
    /// then the next sync is too.
    private let rotating = ConditionLock(false)

    init(file: any LogFile, fileSystem: ClassifyingFileSystem) {
        self.file = file
        self.fileSystem = fileSystem
    }

    func size() throws(KVError) -> Int { try file.size() }

    func read(at offset: Int, count: Int) throws(KVError) -> [UInt8] { try file.read(at: offset, count: count) }

    func dataEnd() throws(KVError) -> Int { try file.dataEnd() }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(KVError) {
        let isHeader = offset == 0 && bytes.count == 32 && bytes.starts(with: Array("CAIRNWAL".utf8))
        // A seal: a bare record header whose length field is 0.
        let isSeal = bytes.count == 24 && bytes[4..<8].allSatisfy { $0 == 0 }
        rotating.withLock { $0 = isHeader || isSeal }
        try fileSystem.mutation({ _, _ in isHeader || isSeal ? .rotation : .append }) { () throws(KVError) in
            try file.write(bytes, at: offset)
        }
    }

    func truncate(to length: Int) throws(KVError) {
        rotating.withLock { $0 = true }
        try fileSystem.mutation({ _, _ in .rotation }) { () throws(KVError) in try file.truncate(to: length) }
    }

    func sync() throws(KVError) {
        let rotation = rotating.withLock { value in
            defer { value = false }
            return value
        }
        try fileSystem.mutation({ workload, _ in
            rotation ? .rotation : workload == .checkpointing ? .checkpointSync : .appendSync
        }) { () throws(KVError) in try file.sync() }
    }

    func close() { file.close() }
}
