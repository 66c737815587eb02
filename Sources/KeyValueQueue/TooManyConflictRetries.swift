import Policies

/// A StoreQueue transaction met a conflict on every one of its commit attempts: its merge
/// policy resolved each time, and each time another writer moved a key again before the commit.
/// Nothing of the transaction is written.
///
/// ```swift
/// do {
///     try queue.inTransaction { db, _ in try db.put("1", forKey: "hot") }
/// } catch let error as TooManyConflictRetries {
///     print(error)   // the transaction met conflicts on all 8 commit attempts …
/// }
/// ```
public struct TooManyConflictRetries: Error, Sendable, Hashable, CustomStringConvertible {
    /// How many commits were tried (the queue's ``StoreQueue/maxCommitAttempts``).
    ///
    /// ```swift
    /// error.attempts   // 8
    /// ```
    public let attempts: Int

    /// The ``ValueMergePolicy/name`` of the policy that resolved the conflicts.
    ///
    /// ```swift
    /// error.policyName   // "storeTrump"
    /// ```
    public let policyName: String

    /// The conflicts of the last attempt.
    ///
    /// ```swift
    /// error.conflicts.map(\.key)
    /// ```
    public let conflicts: [ValueConflict]

    /// Creates the error.
    ///
    /// ```swift
    /// TooManyConflictRetries(attempts: 8, policyName: "storeTrump", conflicts: [])
    /// ```
    public init(attempts: Int, policyName: String, conflicts: [ValueConflict]) {
        self.attempts = attempts
        self.policyName = policyName
        self.conflicts = conflicts
    }

    /// The attempts, the policy and the keys of the last conflicts.
    ///
    /// ```swift
    /// print(error.description)
    /// ```
    public var description: String {
        let keys = conflicts.prefix(5).map { "\($0.table)/\(String(decoding: $0.key, as: UTF8.self))" }
        return "the transaction met conflicts on all \(attempts) commit attempts (policy \"\(policyName)\"); "
            + "last on \(keys.joined(separator: ", "))\(conflicts.count > 5 ? " and \(conflicts.count - 5) more" : ""); "
            + "nothing was written"
    }
}
