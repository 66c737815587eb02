/// The five built-in policies for plain key-value work: the contexts' built-ins applied to a
/// key's whole value, as if the value were one property (Docs/MergePolicies.md, "Plain
/// key-value work").
///
/// Where the value changed, compared with the ancestor (the value the transaction read):
///
/// | changed | error | storeTrump | objectTrump | overwrite | rollback |
/// |---|---|---|---|---|---|
/// | only here | fail | ours | ours | ours | theirs |
/// | only in the store | fail | theirs | theirs | ours (the ancestor back) | theirs |
/// | on both sides | fail | theirs | ours | ours | theirs |
/// | on neither (same bytes, new version) | fail | theirs | theirs | ours | theirs |
///
/// A delete is a change to "absent", so the table covers deletions too. Except for overwrite
/// (which always writes), an answer of ours that equals theirs is given as theirs: nothing is
/// written for the key, so its record version does not move and other readers see no change.
///
/// ```swift
/// let queue = StoreQueue(store: store, mergePolicy: .storeTrump)
/// ```
public struct WholeValuePolicy: ValueMergePolicy {
    /// Which side wins in each row of the table.
    fileprivate enum Side { case ours, theirs, fail }

    /// The policy's name: `error`, `storeTrump`, `objectTrump`, `overwrite` or `rollback`.
    ///
    /// ```swift
    /// WholeValuePolicy.rollback.name   // "rollback"
    /// ```
    public let name: String
    private let onlyHere: Side
    private let onlyInStore: Side
    private let onBothSides: Side
    private let onNeither: Side
    /// Whether ours is written even when it equals theirs (overwrite's promise to always write).
    private let writesEqualValues: Bool

    fileprivate init(_ name: String, onlyHere: Side, onlyInStore: Side, onBothSides: Side, onNeither: Side,
                     writesEqualValues: Bool = false) {
        self.name = name
        self.onlyHere = onlyHere
        self.onlyInStore = onlyInStore
        self.onBothSides = onBothSides
        self.onNeither = onNeither
        self.writesEqualValues = writesEqualValues
    }

    /// The five, in the order of the contexts' built-ins (`BuiltInPolicies.all`).
    ///
    /// ```swift
    /// WholeValuePolicy.all.map(\.name)   // ["error", "storeTrump", "objectTrump", "overwrite", "rollback"]
    /// ```
    public static let all: [WholeValuePolicy] = [.error, .storeTrump, .objectTrump, .overwrite, .rollback]

    /// The built-in with this name (case-sensitive), or nil.
    ///
    /// ```swift
    /// WholeValuePolicy.named("overwrite")?.name   // "overwrite"
    /// ```
    public static func named(_ name: String) -> WholeValuePolicy? {
        all.first { $0.name == name }
    }

    /// Resolves each conflict as the table above says; never throws.
    ///
    /// ```swift
    /// WholeValuePolicy.objectTrump.resolve(conflicts)
    /// ```
    public func resolve(_ conflicts: [ValueConflict]) -> [ValueResolution] {
        conflicts.map { conflict in
            let side: Side
            switch (conflict.isChangedHere, conflict.isChangedInStore) {
            case (true, false): side = onlyHere
            case (false, true): side = onlyInStore
            case (true, true): side = onBothSides
            case (false, false): side = onNeither
            }
            switch side {
            case .fail: return .fail
            case .theirs: return .theirs
            case .ours:
                // Writing what is already there would only bump the version; overwrite writes anyway.
                return conflict.ours == conflict.theirs && !writesEqualValues ? .theirs : .ours
            }
        }
    }
}

extension ValueMergePolicy where Self == WholeValuePolicy {
    /// Fails the transaction on any conflict with `KVError.conditionFailed`: the default, and
    /// what a transaction did before policies existed.
    ///
    /// ```swift
    /// StoreQueue(store: store, mergePolicy: .error)
    /// ```
    public static var error: WholeValuePolicy {
        WholeValuePolicy("error", onlyHere: .fail, onlyInStore: .fail, onBothSides: .fail, onNeither: .fail)
    }

    /// The other writer's value wins where it changed the key; ours is kept where only we did.
    ///
    /// ```swift
    /// try queue.inTransaction(mergePolicy: .storeTrump) { db, _ in try db.put("1", forKey: "k") }
    /// ```
    public static var storeTrump: WholeValuePolicy {
        WholeValuePolicy("storeTrump", onlyHere: .ours, onlyInStore: .theirs, onBothSides: .theirs, onNeither: .theirs)
    }

    /// Our value wins where we changed the key; theirs is kept where only the other writer did.
    ///
    /// ```swift
    /// try queue.inTransaction(mergePolicy: .objectTrump) { db, _ in try db.put("1", forKey: "k") }
    /// ```
    public static var objectTrump: WholeValuePolicy {
        WholeValuePolicy("objectTrump", onlyHere: .ours, onlyInStore: .theirs, onBothSides: .ours, onNeither: .theirs)
    }

    /// Our state of every conflicting key is written, including keys we only read (their
    /// ancestor goes back), which undoes the other writer's change.
    ///
    /// ```swift
    /// try queue.inTransaction(mergePolicy: .overwrite) { db, _ in try db.put("1", forKey: "k") }
    /// ```
    public static var overwrite: WholeValuePolicy {
        WholeValuePolicy("overwrite", onlyHere: .ours, onlyInStore: .ours, onBothSides: .ours, onNeither: .ours,
                         writesEqualValues: true)
    }

    /// Our writes to every conflicting key are dropped and the other writer's state stays; the
    /// transaction's writes to keys without a conflict are still committed.
    ///
    /// ```swift
    /// try queue.inTransaction(mergePolicy: .rollback) { db, _ in try db.put("1", forKey: "k") }
    /// ```
    public static var rollback: WholeValuePolicy {
        WholeValuePolicy("rollback", onlyHere: .theirs, onlyInStore: .theirs, onBothSides: .theirs, onNeither: .theirs)
    }
}
