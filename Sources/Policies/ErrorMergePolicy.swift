/// Fails the save on any conflict, listing every conflict in a ``MergeError``; the default policy.
///
/// Nothing is written and the context keeps its pending changes, so the caller decides: refresh
/// the objects (`refresh(_:mergeChanges: true)`) and save again, or give up.
///
/// ```swift
/// context.mergePolicy = .error
/// do { try context.save() } catch let error as MergeError { print(error) }
/// ```
public struct ErrorMergePolicy: MergePolicy {
    /// Creates the policy.
    ///
    /// ```swift
    /// let policy = ErrorMergePolicy()
    /// ```
    public init() {}

    /// `"error"`.
    ///
    /// ```swift
    /// ErrorMergePolicy().name   // "error"
    /// ```
    public var name: String { "error" }

    /// Throws a ``MergeError`` listing all `conflicts`; returns `[]` when there are none.
    ///
    /// ```swift
    /// try ErrorMergePolicy().resolve([])          // []
    /// try ErrorMergePolicy().resolve(conflicts)   // throws MergeError(conflicts: conflicts)
    /// ```
    ///
    /// - Throws: ``MergeError`` whenever `conflicts` is not empty.
    public func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution] {
        // One error for the whole batch, so the caller sees every conflict at once instead of
        // fixing them one failed save at a time.
        guard conflicts.isEmpty else { throw MergeError(conflicts: conflicts) }
        return []
    }
}

extension MergePolicy where Self == ErrorMergePolicy {
    /// The policy that fails the save on any conflict.
    ///
    /// ```swift
    /// context.mergePolicy = .error
    /// ```
    public static var error: ErrorMergePolicy { ErrorMergePolicy() }
}
