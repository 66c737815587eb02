/// Decides, for the conflicting keys of one failed commit of a plain key-value transaction
/// (`StoreQueue`), what each key ends up holding: the whole-value peer of ``MergePolicy``.
///
/// The queue calls ``resolve(_:)`` once per failed commit attempt with every conflicting key of
/// that attempt, then commits again with the resolutions applied; another writer may move a key
/// again meanwhile, so a policy can be asked more than once for one transaction (with the same
/// ancestor and ours, and the newer theirs). It must be deterministic and have no side effects.
/// The five built-ins (``WholeValuePolicy``) implement this same protocol.
///
/// ```swift
/// /// A counter stored as decimal text: both sides' increments are kept.
/// struct AddingDeltas: ValueMergePolicy {
///     var name: String { "addingDeltas" }
///     func resolve(_ conflicts: [ValueConflict]) -> [ValueResolution] {
///         conflicts.map { conflict in
///             let number = { (bytes: [UInt8]?) in bytes.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0 }
///             let merged = number(conflict.theirs) + number(conflict.ours) - number(conflict.ancestor)
///             return .merged(Array(String(merged).utf8))
///         }
///     }
/// }
/// ```
public protocol ValueMergePolicy: Sendable {
    /// A short, stable name for logs and errors.
    ///
    /// ```swift
    /// WholeValuePolicy.storeTrump.name   // "storeTrump"
    /// ```
    var name: String { get }

    /// Returns one resolution per conflict, in the same order as `conflicts`.
    ///
    /// ```swift
    /// let resolutions = try policy.resolve(conflicts)
    /// ```
    ///
    /// - Throws: any error, to fail the transaction with that error (nothing is written).
    ///   Answering ``ValueResolution/fail`` instead fails it with the engine's
    ///   `KVError.conditionFailed`.
    func resolve(_ conflicts: [ValueConflict]) throws -> [ValueResolution]
}

extension ValueMergePolicy {
    /// Calls ``resolve(_:)`` and checks that it kept its promise of one resolution per conflict.
    ///
    /// The queue calls this instead of ``resolve(_:)``, so that a buggy policy fails the
    /// transaction with a clear error rather than misaligning keys and values.
    ///
    /// ```swift
    /// let resolutions = try queue.mergePolicy.resolutions(for: conflicts)
    /// ```
    ///
    /// - Throws: whatever ``resolve(_:)`` throws, or ``ResolutionCountMismatch`` when the count
    ///   of resolutions differs from the count of conflicts.
    public func resolutions(for conflicts: [ValueConflict]) throws -> [ValueResolution] {
        let resolutions = try resolve(conflicts)
        guard resolutions.count == conflicts.count else {
            throw ResolutionCountMismatch(
                policyName: name, conflictCount: conflicts.count, resolutionCount: resolutions.count)
        }
        return resolutions
    }
}
