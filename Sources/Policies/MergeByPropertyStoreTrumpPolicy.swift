/// Merges property by property, and the store wins where both sides changed a property.
///
/// | conflict | outcome |
/// |---|---|
/// | update/update | per property: store's changes, plus our changes to properties the store left alone |
/// | update/delete | the store's delete stands; the object is deleted in the context |
/// | delete/update | our delete is cancelled; the object holds the store's values |
/// | constraint | merged into the stored object, which keeps its values; ours fill its nulls |
///
/// ```swift
/// // ancestor {age: 30, city: "Oslo"}; we set city Rome and age 40; the store set age 31.
/// context.mergePolicy = .storeTrump
/// try context.save()   // store: {age: 31, city: "Rome"}
/// ```
public struct MergeByPropertyStoreTrumpPolicy: MergePolicy {
    /// Creates the policy.
    ///
    /// ```swift
    /// let policy = MergeByPropertyStoreTrumpPolicy()
    /// ```
    public init() {}

    /// `"storeTrump"`.
    ///
    /// ```swift
    /// MergeByPropertyStoreTrumpPolicy().name   // "storeTrump"
    /// ```
    public var name: String { "storeTrump" }

    /// Resolves each conflict as the table above says; never throws.
    ///
    /// ```swift
    /// MergeByPropertyStoreTrumpPolicy().resolve([updateDeleteConflict])   // [.takeStore]
    /// ```
    public func resolve(_ conflicts: [MergeConflict]) -> [Resolution] {
        conflicts.map { conflict in
            switch conflict.kind {
            case .updateUpdate: PropertyMerge.storeTrump.resolve(conflict)
            // The store's side of a deletion conflict wins outright: its delete stands, or its
            // update survives our delete.
            case .updateDelete, .deleteUpdate: .takeStore
            case .constraint: ConstraintMerge.storeTrump(conflict)
            }
        }
    }
}

extension MergePolicy where Self == MergeByPropertyStoreTrumpPolicy {
    /// The policy that merges by property with the store winning.
    ///
    /// ```swift
    /// context.mergePolicy = .storeTrump
    /// ```
    public static var storeTrump: MergeByPropertyStoreTrumpPolicy { MergeByPropertyStoreTrumpPolicy() }

    /// Core Data's Swift name for ``storeTrump`` (`NSMergePolicy.mergeByPropertyStoreTrump`).
    ///
    /// ```swift
    /// context.mergePolicy = .mergeByPropertyStoreTrump
    /// ```
    public static var mergeByPropertyStoreTrump: MergeByPropertyStoreTrumpPolicy { MergeByPropertyStoreTrumpPolicy() }
}
