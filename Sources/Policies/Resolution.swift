/// What a policy decides for one conflicting object.
///
/// For a constraint conflict the same three answers mean: merge our object into the stored one
/// with these values, delete ours, or discard our insert or change (``ConstraintMerge``).
///
/// ```swift
/// func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
///     conflicts.map { $0.kind == .deleteUpdate ? .delete : .takeStore }
/// }
/// ```
public enum Resolution: Sendable, Hashable {
    /// Commit these values for the object; the context re-inserts it (same object ID) when the
    /// store had deleted it.
    ///
    /// ```swift
    /// .write(["name": .string("Ann"), "age": .int(40)])
    /// ```
    case write(PropertyValues)

    /// Delete the object in the store.
    ///
    /// ```swift
    /// conflict.kind == .deleteUpdate ? .delete : .takeStore
    /// ```
    case delete

    /// Drop the local changes: the object holds the store's state (or is deleted in the context
    /// when the store deleted it), is no longer dirty, and nothing is written for it.
    ///
    /// ```swift
    /// conflicts.map { _ in .takeStore }   // a rollback policy
    /// ```
    case takeStore
}
