/// Writes the context's whole in-memory object over the store, property changes and deletes alike.
///
/// Unlike ``MergeByPropertyObjectTrumpPolicy`` it writes every property, also those the context
/// never touched, so the store's changes to them are overwritten with the ancestor's values.
///
/// | conflict | outcome |
/// |---|---|
/// | update/update | all our values written, the store's changes lost |
/// | update/delete | the object is re-inserted with our values (same object ID) |
/// | delete/update | our delete wins |
/// | constraint | the stored object takes our whole state and keeps its object ID |
///
/// ```swift
/// // ancestor {age: 30, city: "Oslo"}; we set city Rome; the store set age 31.
/// context.mergePolicy = .overwrite
/// try context.save()   // store: {age: 30, city: "Rome"}
/// ```
public struct OverwriteMergePolicy: MergePolicy {
    /// Creates the policy.
    ///
    /// ```swift
    /// let policy = OverwriteMergePolicy()
    /// ```
    public init() {}

    /// `"overwrite"`.
    ///
    /// ```swift
    /// OverwriteMergePolicy().name   // "overwrite"
    /// ```
    public var name: String { "overwrite" }

    /// Resolves each conflict as the table above says; never throws.
    ///
    /// ```swift
    /// OverwriteMergePolicy().resolve([conflict])   // [.write(conflict.ourValues!)]
    /// ```
    public func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
        conflicts.map { conflict in
            // Always .write, never collapsed to .takeStore: "the entire object" is the promise,
            // and writing also moves the record version past every concurrent reader's.
            switch conflict.kind {
            case .updateUpdate, .updateDelete:
                // MergeConflict's precondition guarantees ourValues for these kinds.
                .write(conflict.ourValues ?? conflict.ancestorValues)
            case .deleteUpdate:
                .delete
            case .constraint:
                ConstraintMerge.overwrite(conflict)
            }
        }
    }
}

extension MergePolicy where Self == OverwriteMergePolicy {
    /// The policy that writes the whole in-memory object.
    ///
    /// ```swift
    /// context.mergePolicy = .overwrite
    /// ```
    public static var overwrite: OverwriteMergePolicy { OverwriteMergePolicy() }
}
