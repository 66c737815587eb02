/// A policy returned a different number of resolutions than it was given conflicts.
///
/// ```swift
/// do {
///     _ = try policy.resolutions(for: conflicts)
/// } catch let mismatch as ResolutionCountMismatch {
///     print(mismatch)   // policy "mine" returned 1 resolution(s) for 2 conflict(s) …
/// }
/// ```
public struct ResolutionCountMismatch: Error, Sendable, Hashable, CustomStringConvertible {
    /// The name of the policy that broke the rule (``MergePolicy/name`` or
    /// ``ValueMergePolicy/name``).
    ///
    /// ```swift
    /// mismatch.policyName   // "mine"
    /// ```
    public let policyName: String

    /// How many conflicts the policy was given.
    ///
    /// ```swift
    /// mismatch.conflictCount   // 2
    /// ```
    public let conflictCount: Int

    /// How many resolutions it returned.
    ///
    /// ```swift
    /// mismatch.resolutionCount   // 1
    /// ```
    public let resolutionCount: Int

    /// Creates the error.
    ///
    /// ```swift
    /// ResolutionCountMismatch(policyName: "mine", conflictCount: 2, resolutionCount: 1)
    /// ```
    public init(policyName: String, conflictCount: Int, resolutionCount: Int) {
        self.policyName = policyName
        self.conflictCount = conflictCount
        self.resolutionCount = resolutionCount
    }

    /// Names the policy and both counts.
    ///
    /// ```swift
    /// print(mismatch.description)
    /// ```
    public var description: String {
        "merge policy \"\(policyName)\" returned \(resolutionCount) resolution(s) for "
            + "\(conflictCount) conflict(s); it must return exactly one per conflict, in order"
    }
}
