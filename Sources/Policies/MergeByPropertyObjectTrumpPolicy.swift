/// Merges property by property, and the context wins where both sides changed a property.
///
/// | conflict | outcome |
/// |---|---|
/// | update/update | per property: our changes, plus the store's changes to properties we left alone |
/// | update/delete | the object is re-inserted with our values (same object ID) |
/// | delete/update | our delete wins |
/// | constraint | upsert: merged into the stored object, ours winning on every property we set |
///
/// ```swift
/// // ancestor {age: 30, city: "Oslo"}; we set city Rome and age 40; the store set age 31.
/// context.mergePolicy = .objectTrump
/// try context.save()   // store: {age: 40, city: "Rome"}
/// ```
public struct MergeByPropertyObjectTrumpPolicy: MergePolicy {
    /// Creates the policy.
    ///
    /// ```swift
    /// let policy = MergeByPropertyObjectTrumpPolicy()
    /// ```
    public init() {}

    /// `"objectTrump"`.
    ///
    /// ```swift
    /// MergeByPropertyObjectTrumpPolicy().name   // "objectTrump"
    /// ```
    public var name: String { "objectTrump" }

    /// Resolves each conflict as the table above says; never throws.
    ///
    /// ```swift
    /// MergeByPropertyObjectTrumpPolicy().resolve([deleteUpdateConflict])   // [.delete]
    /// ```
    public func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
        conflicts.map { conflict in
            switch conflict.kind {
            case .updateUpdate:
                PropertyMerge.objectTrump.resolve(conflict)
            case .updateDelete:
                // Re-inserting is the contract's choice: our object is all the context has, so
                // it wins over the store's delete. The precondition of MergeConflict guarantees
                // ourValues here; the fallback only keeps this total.
                .write(conflict.ourValues ?? conflict.ancestorValues)
            case .deleteUpdate:
                .delete
            case .constraint:
                ConstraintMerge.objectTrump(conflict)
            }
        }
    }
}

extension MergePolicy where Self == MergeByPropertyObjectTrumpPolicy {
    /// The policy that merges by property with the context winning.
    ///
    /// ```swift
    /// context.mergePolicy = .objectTrump
    /// ```
    public static var objectTrump: MergeByPropertyObjectTrumpPolicy { MergeByPropertyObjectTrumpPolicy() }

    /// Core Data's Swift name for ``objectTrump`` (`NSMergePolicy.mergeByPropertyObjectTrump`).
    ///
    /// ```swift
    /// context.mergePolicy = .mergeByPropertyObjectTrump
    /// ```
    public static var mergeByPropertyObjectTrump: MergeByPropertyObjectTrumpPolicy { MergeByPropertyObjectTrumpPolicy() }
}
