import KVEngine
import Policies

// Committing a StoreQueue transaction under a merge policy.
//
//   attempt 1: the transaction's batch (read checks at the versions read, then its writes)
//   on KVError.conditionFailed:
//     - a failed key with a conditioned write (`put(…, if:)`) ends it: the caller's explicit
//       condition is a promise no policy may override; the engine's error is rethrown
//     - otherwise each failed key becomes a ValueConflict: ancestor and ours from the
//       transaction, theirs (value, version) from a fresh snapshot
//     - the policy answers each; any `.fail` rethrows the engine's error for those keys, so
//       the error policy behaves exactly as a transaction did before policies existed
//     - attempt n + 1: the same batch, each resolved key checked at the version the policy
//       saw and written as it decided
//   after `maxAttempts` failed attempts: TooManyConflictRetries
//   when the answers leave nothing to write (all theirs), nothing is committed
//
// Ancestor and ours never change between attempts; only theirs does, so a policy that merges
// (a counter adding deltas) applies our change exactly once to whatever the store holds.

/// A key a merge policy decided: what the next attempt checks and writes for it.
struct ResolvedKey {
    enum FinalWrite {
        case none
        case put([UInt8])
        case delete
    }

    /// The record version the policy saw as theirs (0: absent); the next attempt requires it.
    let requiredVersion: UInt64
    let write: FinalWrite
}

extension KeyValueTransaction {
    /// Commits the transaction, resolving conflicts with `policy`, in at most `maxAttempts`
    /// commits.
    ///
    /// - Throws: `KVError` from the engine (`.conditionFailed` when the policy answers `.fail`
    ///   or a conditioned write failed), what the policy throws, ``TooManyConflictRetries``.
    func commit(to store: Store, durability: Durability?, policy: any ValueMergePolicy, maxAttempts: Int) throws {
        var resolved: [TableKey: ResolvedKey] = [:]
        var attempts = 0
        while true {
            guard let batch = batch(resolving: resolved) else { return }
            attempts += 1
            guard let failures = try Self.failedConditions(committing: batch, to: store, durability: durability) else {
                return
            }
            var failedKeys: [TableKey] = []
            var seen = Set<TableKey>()
            for failure in failures {
                let stored = TableKey(table: failure.table, key: failure.key)
                if seen.insert(stored).inserted { failedKeys.append(stored) }
            }
            guard failedKeys.allSatisfy({ reads[$0] != nil && !hasConditionedWrite($0) }) else {
                throw KVError.conditionFailed(failures)
            }
            let conflicts = try conflicts(of: failedKeys, in: store)
            let answers = try policy.resolutions(for: conflicts)
            let refused = Set(zip(failedKeys, answers).compactMap { $1 == .fail ? $0 : nil })
            guard refused.isEmpty else {
                throw KVError.conditionFailed(failures.filter { refused.contains(TableKey(table: $0.table, key: $0.key)) })
            }
            guard attempts < maxAttempts else {
                throw TooManyConflictRetries(attempts: attempts, policyName: policy.name, conflicts: conflicts)
            }
            for (conflict, answer) in zip(conflicts, answers) {
                let write: ResolvedKey.FinalWrite
                switch answer {
                case .ours: write = conflict.ours.map { .put($0) } ?? .delete
                case .theirs: write = .none
                case .merged(let value): write = .put(value)
                case .delete: write = .delete
                case .fail: preconditionFailure("refused keys were thrown above")
                }
                resolved[TableKey(table: conflict.table, key: conflict.key)] = ResolvedKey(
                    requiredVersion: conflict.theirsVersion, write: write)
            }
        }
    }

    /// Commits `batch`: nil when it was written, its failed conditions when it was refused.
    private static func failedConditions(
        committing batch: WriteBatch, to store: Store, durability: Durability?
    ) throws(KVError) -> [FailedCondition]? {
        do {
            try store.commit(batch, durability: durability)
            return nil
        } catch {
            guard case .conditionFailed(let failures) = error else { throw error }
            return failures
        }
    }

    /// The conflicts of `keys`: ancestor and ours from the transaction, theirs from the latest
    /// commit.
    private func conflicts(of keys: [TableKey], in store: Store) throws(KVError) -> [ValueConflict] {
        let latest = try store.snapshot()
        defer { latest.close() }
        return try keys.map { (stored) throws(KVError) -> ValueConflict in
            let theirs: Record?
            do {
                theirs = try latest.get(stored.key, in: stored.table)
            } catch {
                throw KeyValueDatabase.kvError(error)
            }
            let ancestor = reads[stored]!
            let ours = buffered(stored)
            return ValueConflict(
                table: stored.table, key: stored.key, ancestor: ancestor.value, ancestorVersion: ancestor.version,
                ours: ours.map(\.value) ?? ancestor.value, isWrittenHere: ours != nil,
                theirs: theirs?.value, theirsVersion: theirs?.version ?? 0)
        }
    }
}
