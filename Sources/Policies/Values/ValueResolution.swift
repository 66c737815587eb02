/// What a ``ValueMergePolicy`` decides for one conflicting key.
///
/// ```swift
/// func resolve(_ conflicts: [ValueConflict]) -> [ValueResolution] {
///     conflicts.map { $0.isWrittenHere ? .ours : .theirs }
/// }
/// ```
public enum ValueResolution: Sendable, Hashable {
    /// Commit ours: the transaction's value (or its delete). For a key the transaction only read,
    /// this writes the ancestor back, undoing the other writer's change.
    ///
    /// ```swift
    /// conflict.isChangedHere ? .ours : .theirs
    /// ```
    case ours

    /// Keep theirs: nothing is written for the key; the transaction's writes to it are dropped.
    ///
    /// ```swift
    /// conflicts.map { _ in .theirs }   // a rollback policy
    /// ```
    case theirs

    /// Commit this value instead of either side's.
    ///
    /// ```swift
    /// .merged(Array("18".utf8))   // ancestor 10, ours 13, theirs 15: both increments kept
    /// ```
    case merged([UInt8])

    /// Delete the key.
    ///
    /// ```swift
    /// conflict.theirs == nil ? .delete : .theirs   // deletions win
    /// ```
    case delete

    /// Fail the transaction: nothing of it is written, and it throws `KVError.conditionFailed`
    /// listing the keys answered `.fail`, as a transaction without a policy does.
    ///
    /// ```swift
    /// conflicts.map { _ in .fail }   // the error policy
    /// ```
    case fail
}
