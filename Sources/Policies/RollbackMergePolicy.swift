/// Discards the conflicting objects' local changes: each one takes the store's state.
///
/// Only the conflicting objects are rolled back; the other objects of the same save are written.
///
/// | conflict | outcome |
/// |---|---|
/// | update/update | our changes dropped; the object holds the store's values |
/// | update/delete | the object is deleted in the context |
/// | delete/update | our delete is cancelled; the object holds the store's values |
/// | constraint | our insert (or change) is discarded; the stored object stays as it is |
///
/// ```swift
/// // ancestor {age: 30, city: "Oslo"}; we set city Rome; the store set age 31.
/// context.mergePolicy = .rollback
/// try context.save()   // store: {age: 31, city: "Oslo"}, our object is clean
/// ```
public struct RollbackMergePolicy: MergePolicy {
    /// Creates the policy.
    ///
    /// ```swift
    /// let policy = RollbackMergePolicy()
    /// ```
    public init() {}

    /// `"rollback"`.
    ///
    /// ```swift
    /// RollbackMergePolicy().name   // "rollback"
    /// ```
    public var name: String { "rollback" }

    /// Resolves every conflict to ``Resolution/takeStore``; never throws.
    ///
    /// ```swift
    /// RollbackMergePolicy().resolve(conflicts)   // [.takeStore, .takeStore, …]
    /// ```
    public func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
        conflicts.map { conflict in
            switch conflict.kind {
            // Through the shared per-property rule (every property: theirs), so update/update
            // follows the same path as storeTrump and objectTrump; it always yields .takeStore.
            case .updateUpdate: PropertyMerge.rollback.resolve(conflict)
            // A constraint conflict's takeStore discards our insert or change.
            case .updateDelete, .deleteUpdate, .constraint: .takeStore
            }
        }
    }
}

extension MergePolicy where Self == RollbackMergePolicy {
    /// The policy that discards the conflicting objects' local changes.
    ///
    /// ```swift
    /// context.mergePolicy = .rollback
    /// ```
    public static var rollback: RollbackMergePolicy { RollbackMergePolicy() }
}
