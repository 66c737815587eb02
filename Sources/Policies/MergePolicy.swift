/// Decides, for the conflicts of one failed save, what happens to each conflicting object.
///
/// The context calls ``resolve(_:)`` once per failed save attempt with every conflict of that
/// attempt, then retries the save with the resolutions applied. The built-in policies implement
/// this same protocol; there is no private path, so a policy of your own is a peer of theirs.
///
/// ```swift
/// /// Keeps every deletion and otherwise takes the store's state.
/// struct DeletesWin: MergePolicy {
///     var name: String { "deletesWin" }
///     func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
///         conflicts.map { $0.kind == .deleteUpdate ? .delete : .takeStore }
///     }
/// }
/// ```
public protocol MergePolicy: Sendable {
    /// A short, stable name for logs, scenarios and `BuiltInPolicies.named(_:)`.
    ///
    /// ```swift
    /// MergeByPropertyObjectTrumpPolicy().name   // "objectTrump"
    /// ```
    var name: String { get }

    /// Returns one resolution per conflict, in the same order as `conflicts`.
    ///
    /// ```swift
    /// let resolutions = try policy.resolve(conflicts)
    /// for (conflict, resolution) in zip(conflicts, resolutions) { /* apply */ }
    /// ```
    ///
    /// - Throws: any error, to make the save fail; the context then writes nothing and keeps
    ///   its pending changes. ``ErrorMergePolicy`` throws ``MergeError``.
    func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution]
}

extension MergePolicy {
    /// Calls ``resolve(_:)`` and checks that it kept its promise of one resolution per conflict.
    ///
    /// Contexts call this instead of ``resolve(_:)`` so that a buggy custom policy fails the save
    /// with a clear error rather than silently dropping or misaligning objects.
    ///
    /// ```swift
    /// let resolutions = try context.mergePolicy.resolutions(for: conflicts)
    /// ```
    ///
    /// - Throws: whatever ``resolve(_:)`` throws, or ``ResolutionCountMismatch`` when the count
    ///   of resolutions differs from the count of conflicts.
    public func resolutions(for conflicts: [MergeConflict]) throws -> [Resolution] {
        let resolutions = try resolve(conflicts)
        guard resolutions.count == conflicts.count else {
            throw ResolutionCountMismatch(
                policyName: name, conflictCount: conflicts.count, resolutionCount: resolutions.count)
        }
        return resolutions
    }
}
