/// The ways a built-in policy merges our object into the stored object of a constraint
/// conflict; custom policies can use them too.
///
/// For a constraint conflict (``ConflictKind/constraint``) the resolutions mean: `.write(values)`
/// merges our object into the stored one, which keeps its object ID and takes `values` (nothing
/// is written when they are the stored values already); `.takeStore` discards our insert or
/// change; `.delete` deletes our object (an insert is just dropped).
///
/// ```swift
/// struct UpsertOrFail: MergePolicy {
///     var name: String { "upsertOrFail" }
///     func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution] {
///         try conflicts.map { conflict in
///             guard conflict.kind == .constraint else { throw MergeError(conflicts: [conflict]) }
///             return ConstraintMerge.objectTrump(conflict)
///         }
///     }
/// }
/// ```
public enum ConstraintMerge {
    /// Upsert: the stored object with every property we set (for an insert, every property,
    /// an unset optional one as null) taking our value.
    ///
    /// ```swift
    /// // stored {email: "a@x", name: "Anne", city: "Oslo"}, we insert {email: "a@x", name: "Ann"}
    /// ConstraintMerge.objectTrump(conflict)   // .write({email: "a@x", name: "Ann"})
    /// ```
    public static func objectTrump(_ conflict: MergeConflict) -> Resolution {
        let ours = conflict.ourValues ?? [:]
        if conflict.isInsertion { return wholeObject(ours, over: conflict.storeValues ?? [:]) }
        var merged = conflict.storeValues ?? [:]
        for property in conflict.changedProperties { merged[property] = ours.value(of: property) }
        return .write(merged.filter { $0.value != .null })
    }

    /// The stored object keeps its values; ours fill only the properties it has null.
    ///
    /// ```swift
    /// // stored {email: "a@x", name: "Anne"}, we insert {email: "a@x", name: "Ann", city: "Rome"}
    /// ConstraintMerge.storeTrump(conflict)   // .write({email: "a@x", name: "Anne", city: "Rome"})
    /// ```
    public static func storeTrump(_ conflict: MergeConflict) -> Resolution {
        var merged = conflict.storeValues ?? [:]
        for (property, value) in conflict.ourValues ?? [:] where value != .null && merged.value(of: property) == .null {
            merged[property] = value
        }
        return .write(merged)
    }

    /// The stored object takes our whole state, property for property.
    ///
    /// ```swift
    /// ConstraintMerge.overwrite(conflict)   // .write(conflict.ourValues!)
    /// ```
    public static func overwrite(_ conflict: MergeConflict) -> Resolution {
        wholeObject(conflict.ourValues ?? [:], over: conflict.storeValues ?? [:])
    }

    /// Every property of either side with our value (null where we have none).
    private static func wholeObject(_ ours: PropertyValues, over theirs: PropertyValues) -> Resolution {
        var merged = PropertyValues()
        for property in Set(theirs.keys).union(ours.keys) where ours.value(of: property) != .null {
            merged[property] = ours.value(of: property)
        }
        return .write(merged)
    }
}
