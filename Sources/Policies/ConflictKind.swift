/// Which side updated and which side deleted the object in a conflict, or that our object would
/// repeat the constrained values of another stored object.
///
/// Both sides deleting is not a kind: that save simply succeeds, and the context never consults
/// a policy for it. The raw values are FROZEN: they appear in scenario output and docs.
///
/// ```swift
/// switch conflict.kind {
/// case .updateUpdate: print("both changed it")
/// case .updateDelete: print("we changed it, the store deleted it")
/// case .deleteUpdate: print("we deleted it, the store changed it")
/// case .constraint: print("another stored object has the same unique values")
/// }
/// ```
public enum ConflictKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Changed here (or only marked with `detectConflicts`), changed in the store.
    ///
    /// A marked object with no local change still has this kind; its
    /// ``MergeConflict/changedProperties`` is empty.
    ///
    /// ```swift
    /// ConflictKind.updateUpdate.rawValue   // "update/update"
    /// ```
    case updateUpdate = "update/update"

    /// Changed here (or only marked with `detectConflicts`), deleted in the store.
    ///
    /// ```swift
    /// ConflictKind.updateDelete.rawValue   // "update/delete"
    /// ```
    case updateDelete = "update/delete"

    /// Deleted here, changed in the store.
    ///
    /// ```swift
    /// ConflictKind.deleteUpdate.rawValue   // "delete/update"
    /// ```
    case deleteUpdate = "delete/update"

    /// Inserted or changed here with the values of a uniqueness constraint that another stored
    /// object already holds (``MergeConflict/storedObjectID``); see ``MergeConflict/constraint``.
    ///
    /// ```swift
    /// ConflictKind.constraint.rawValue   // "constraint"
    /// ```
    case constraint = "constraint"
}
