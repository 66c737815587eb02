import CairnTestSupport
import KVEngine

/// A table and key of the model.
struct ModelKey: Hashable, Comparable, CustomStringConvertible {
    var table: String
    var key: String

    static func < (left: ModelKey, right: ModelKey) -> Bool { (left.table, left.key) < (right.table, right.key) }

    var description: String { "\(table)/\(key)" }
}

/// A record of the model: value and record version.
struct ModelRecord: Hashable {
    var value: [UInt8]
    var version: UInt64
}

/// A deterministic single-writer workload (commits with puts, deletes and version
/// conditions; checkpoints; flushes), with the exact state after every commit, so that a
/// store recovered at commit version R can be compared with `states[R]` key by key.
///
/// The applier only runs when a checkpoint or flush asks it to, so a run's I/O sequence is
/// the same every time: crash point N of one run is crash point N of the next.
struct ScriptedWorkload {
    enum Step {
        case commit(WriteBatch, Durability)
        case checkpoint
        case flush
    }

    let seed: UInt64
    let options: Store.Options
    let steps: [Step]
    /// `states[v]`: the state after commit version v (`states[0]` is empty).
    let states: [[ModelKey: ModelRecord]]

    static let tables = ["t", "u"]

    init(seed: UInt64, commits: Int) {
        self.seed = seed
        var random = SeededRandom(seed: seed)
        var options = Store.Options()
        options.applyInterval = 3600
        options.applyThreshold = Int.max
        options.mapSize = 64 << 20
        options.segmentSize = random.int(in: 400...4000)
        options.durability = .full
        self.options = options
        var steps: [Step] = []
        var state: [ModelKey: ModelRecord] = [:]
        var states = [state]
        // A key's last record version, deleted or not: a put after a delete continues from
        // the tombstone's version (versions never repeat).
        var lastVersion: [ModelKey: UInt64] = [:]
        let normalShare = random.int(4)  // 0…3 in 8 commits are .normal
        while states.count <= commits {
            if random.chance(1, in: 9) {
                steps.append(.checkpoint)
                continue
            }
            if random.chance(1, in: 30) {
                steps.append(.flush)
                continue
            }
            var batch = WriteBatch()
            var next = state
            for operation in 0..<random.int(in: 1...3) {
                let key = ModelKey(table: random.pick(Self.tables), key: "k\(random.int(12))")
                let current = next[key]
                if let current, random.chance(1, in: 4) {
                    batch.delete(Array(key.key.utf8), in: key.table, if: .version(current.version))
                    next[key] = nil
                } else {
                    let value = Array("c\(states.count)-\(operation)-".utf8)
                        + [UInt8](repeating: UInt8(97 + random.int(26)), count: random.int(360))
                    batch.put(value, forKey: Array(key.key.utf8), in: key.table,
                              if: current.map { .version($0.version) } ?? .absent)
                    let version = lastVersion[key, default: 0] + 1
                    next[key] = ModelRecord(value: value, version: version)
                    lastVersion[key] = version
                }
            }
            state = next
            states.append(state)
            steps.append(.commit(batch, random.int(8) < normalShare ? .normal : .full))
        }
        self.steps = steps
        self.states = states
    }

    /// The number of commits.
    var commitCount: Int { states.count - 1 }

    /// What a run did.
    struct Run {
        /// Acknowledged commits: version and durability.
        var acknowledged: [(version: UInt64, durability: Durability)] = []
        /// The highest commit version that was tried (acknowledged or not).
        var attempted: UInt64 = 0
        /// Every error the workload saw, with the step that saw it.
        var errors: [(step: String, error: KVError)] = []
        /// The open store, unless opening failed.
        var store: Store?
        /// Whether an operation after the first error failed with `poisoned`.
        var sawPoisoned = false
        /// Whether an operation after the first error succeeded.
        var succeededAfterError = false
        /// Whether a commit after the first error succeeded.
        var committedAfterError = false

        /// The highest version acknowledged with `.full`: it and everything before it must survive.
        var mustSurvive: UInt64 {
            acknowledged.filter { $0.durability == .full }.map(\.version).max() ?? 0
        }
    }

    /// Opens the store and runs the steps. Stops at the first error that poisons the store
    /// (after trying one more commit to see it refused); other errors are retried once, as
    /// an application would. `retryOpen` opens once more when opening fails.
    func run(directory: String, fileSystem: ClassifyingFileSystem, retryOpen: Bool = false) -> Run {
        var run = Run()
        fileSystem.setPhase(.opening)
        var store: Store
        do {
            store = try Store(directory: directory, options: options, fileSystem: fileSystem)
        } catch {
            run.errors.append(("open", error))
            guard retryOpen else { return run }
            do {
                store = try Store(directory: directory, options: options, fileSystem: fileSystem)
                run.succeededAfterError = true
            } catch {
                run.errors.append(("open again", error))
                return run
            }
        }
        run.store = store
        var version: UInt64 = 0
        var stepIndex = 0
        var retried = false
        while stepIndex < steps.count {
            let step = steps[stepIndex]
            do {
                switch step {
                case let .commit(batch, durability):
                    fileSystem.setPhase(.committing)
                    run.attempted = max(run.attempted, version + 1)
                    let info = try store.commit(batch, durability: durability)
                    version += 1
                    precondition(info.version == version, "script commit got version \(info.version), \(version) expected")
                    run.acknowledged.append((info.version, durability))
                    if !run.errors.isEmpty { run.committedAfterError = true }
                case .checkpoint:
                    fileSystem.setPhase(.checkpointing)
                    try store.checkpoint()
                case .flush:
                    fileSystem.setPhase(.checkpointing)
                    try store.flush()
                }
                if !run.errors.isEmpty { run.succeededAfterError = true }
                stepIndex += 1
                retried = false
            } catch {
                run.errors.append(("step \(stepIndex)", error))
                if case .poisoned = error { run.sawPoisoned = true }
                if run.sawPoisoned || retried { break }
                // Once more: a poisoned store must refuse it; a sound one may do it now.
                retried = true
                if case .commit = step {} else { stepIndex += 1 }
            }
        }
        fileSystem.setPhase(.committing)
        return run
    }

    /// Compares a reopened store with `states[version]`; returns the differences.
    static func differences(_ store: Store, from expected: [ModelKey: ModelRecord],
                            tables: [String] = ScriptedWorkload.tables) throws -> [String] {
        var found: [ModelKey: ModelRecord] = [:]
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        for table in tables {
            try snapshot.forEach(in: table) { key, value, version in
                found[ModelKey(table: table, key: String(decoding: key, as: UTF8.self))] = ModelRecord(value: Array(value), version: version)
                return true
            }
        }
        var differences: [String] = []
        for key in Set(found.keys).union(expected.keys).sorted() where found[key] != expected[key] {
            let describe = { (record: ModelRecord?) in
                record.map { "version \($0.version), \($0.value.count) bytes \"\(String(decoding: $0.value.prefix(12), as: UTF8.self))…\"" } ?? "absent"
            }
            differences.append("\(key): found \(describe(found[key])), expected \(describe(expected[key]))")
        }
        return differences
    }
}
