/// A property-by-property merge rule for update/update conflicts: for each way a property can
/// have changed, which side's value to keep.
///
/// The store-trump, object-trump and rollback policies are three settings of this one rule;
/// custom policies can use it too. A property changed on neither side keeps its (shared) value.
/// When the merged values are exactly the store's, the result is ``Resolution/takeStore``: the
/// object becomes clean and nothing is written for it.
///
/// ```swift
/// // Keep local edits, but let the store win where both sides edited.
/// let resolution = PropertyMerge.storeTrump.resolve(conflict)
/// ```
public struct PropertyMerge: Sendable, Hashable {
    /// A side of a conflict whose value a property keeps.
    ///
    /// ```swift
    /// let rule = PropertyMerge(locallyOnly: .ours, inStoreOnly: .theirs, onBothSides: .ours)
    /// ```
    public enum Side: Sendable, Hashable {
        /// The context's in-memory value.
        ///
        /// ```swift
        /// PropertyMerge.objectTrump.onBothSides   // .ours
        /// ```
        case ours
        /// The store's committed value.
        ///
        /// ```swift
        /// PropertyMerge.storeTrump.onBothSides   // .theirs
        /// ```
        case theirs
    }

    /// Where a property changed, relative to the ancestor: the rows of the contract's table.
    ///
    /// ```swift
    /// PropertyMerge.change(of: "age", in: conflict)   // .onBothSides
    /// ```
    public enum Change: Sendable, Hashable, CaseIterable {
        /// Ours differs from the ancestor, theirs does not.
        ///
        /// ```swift
        /// PropertyMerge.change(of: "city", in: conflict) == .locallyOnly
        /// ```
        case locallyOnly
        /// Theirs differs from the ancestor, ours does not.
        ///
        /// ```swift
        /// PropertyMerge.change(of: "age", in: conflict) == .inStoreOnly
        /// ```
        case inStoreOnly
        /// Both differ from the ancestor (possibly to the same value).
        ///
        /// ```swift
        /// PropertyMerge.change(of: "age", in: conflict) == .onBothSides
        /// ```
        case onBothSides
        /// Neither differs from the ancestor.
        ///
        /// ```swift
        /// PropertyMerge.change(of: "name", in: conflict) == .onNeither
        /// ```
        case onNeither
    }

    /// The side kept for a property changed only in the context.
    ///
    /// ```swift
    /// PropertyMerge.rollback.locallyOnly   // .theirs: local edits are discarded
    /// ```
    public var locallyOnly: Side

    /// The side kept for a property changed only in the store.
    ///
    /// ```swift
    /// PropertyMerge.objectTrump.inStoreOnly   // .theirs
    /// ```
    public var inStoreOnly: Side

    /// The side kept for a property changed on both sides.
    ///
    /// ```swift
    /// PropertyMerge.objectTrump.onBothSides   // .ours
    /// ```
    public var onBothSides: Side

    /// Creates a rule from the side to keep for each kind of change.
    ///
    /// ```swift
    /// let mine = PropertyMerge(locallyOnly: .ours, inStoreOnly: .theirs, onBothSides: .ours)
    /// ```
    public init(locallyOnly: Side, inStoreOnly: Side, onBothSides: Side) {
        self.locallyOnly = locallyOnly
        self.inStoreOnly = inStoreOnly
        self.onBothSides = onBothSides
    }

    /// Both sides keep their own changes; where both changed a property, the store wins.
    ///
    /// ```swift
    /// PropertyMerge.storeTrump.resolve(conflict)
    /// ```
    public static let storeTrump = PropertyMerge(locallyOnly: .ours, inStoreOnly: .theirs, onBothSides: .theirs)

    /// Both sides keep their own changes; where both changed a property, the context wins.
    ///
    /// ```swift
    /// PropertyMerge.objectTrump.resolve(conflict)
    /// ```
    public static let objectTrump = PropertyMerge(locallyOnly: .ours, inStoreOnly: .theirs, onBothSides: .ours)

    /// Every property takes the store's value, so the merge always ends in ``Resolution/takeStore``.
    ///
    /// ```swift
    /// PropertyMerge.rollback.resolve(conflict)   // .takeStore
    /// ```
    public static let rollback = PropertyMerge(locallyOnly: .theirs, inStoreOnly: .theirs, onBothSides: .theirs)

    /// Where `property` changed in an update/update conflict.
    ///
    /// ```swift
    /// // ancestor {age: 30}, ours {age: 40}, theirs {age: 31}
    /// PropertyMerge.change(of: "age", in: conflict)   // .onBothSides
    /// ```
    ///
    /// A deleted side counts as unchanged here; use it on update/update conflicts.
    public static func change(of property: String, in conflict: MergeConflict) -> Change {
        let ancestor = conflict.ancestorValues.value(of: property)
        let changedLocally = conflict.ourValues.map { $0.value(of: property) != ancestor } ?? false
        let changedInStore = conflict.storeValues.map { $0.value(of: property) != ancestor } ?? false
        switch (changedLocally, changedInStore) {
        case (true, false): return .locallyOnly
        case (false, true): return .inStoreOnly
        case (true, true): return .onBothSides
        case (false, false): return .onNeither
        }
    }

    /// The merged values of an update/update conflict: every property of any side, each taken
    /// from the side this rule keeps.
    ///
    /// ```swift
    /// // ancestor {age: 30, city: "Oslo"}, ours {age: 30, city: "Rome"}, theirs {age: 31, city: "Oslo"}
    /// PropertyMerge.storeTrump.mergedValues(for: conflict)   // {age: 31, city: "Rome"}
    /// ```
    ///
    /// Only update/update conflicts have both sides to merge; calling this on another kind is a
    /// programming error and stops the process (switch on ``MergeConflict/kind`` first).
    public func mergedValues(for conflict: MergeConflict) -> PropertyValues {
        guard conflict.kind == .updateUpdate, let ours = conflict.ourValues, let theirs = conflict.storeValues
        else {
            preconditionFailure(
                "PropertyMerge needs an update/update conflict, got \(conflict.kind.rawValue) for "
                    + "\(conflict.objectID); decide deletions before merging properties"
            )
        }
        var merged = PropertyValues()
        let properties = Set(conflict.ancestorValues.keys).union(ours.keys).union(theirs.keys)
        for property in properties {
            let side: Side
            switch Self.change(of: property, in: conflict) {
            case .locallyOnly: side = locallyOnly
            case .inStoreOnly: side = inStoreOnly
            case .onBothSides: side = onBothSides
            // Both sides hold the ancestor's value; either will do.
            case .onNeither: side = .theirs
            }
            merged[property] = side == .ours ? ours.value(of: property) : theirs.value(of: property)
        }
        return merged
    }

    /// Merges an update/update conflict with this rule and turns the result into a resolution.
    ///
    /// ```swift
    /// PropertyMerge.objectTrump.resolve(conflict)   // .write([...]) or .takeStore
    /// ```
    ///
    /// Same precondition as ``mergedValues(for:)``.
    public func resolve(_ conflict: MergeConflict) -> Resolution {
        Self.resolution(writing: mergedValues(for: conflict), for: conflict)
    }

    /// `.write(values)`, or `.takeStore` when `values` are exactly the store's current values.
    ///
    /// Writing the store's own values would only bump the record version and make every other
    /// context conflict on the next save for nothing; taking the store's state has the same
    /// result and leaves the object clean.
    ///
    /// ```swift
    /// PropertyMerge.resolution(writing: conflict.storeValues!, for: conflict)   // .takeStore
    /// ```
    public static func resolution(writing values: PropertyValues, for conflict: MergeConflict) -> Resolution {
        if let theirs = conflict.storeValues, values.hasSameValues(as: theirs) {
            return .takeStore
        }
        return .write(values)
    }
}
