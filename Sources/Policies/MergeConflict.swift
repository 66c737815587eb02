/// One object whose save found the store moved on since the context last read it, or whose
/// values of a uniqueness constraint another stored object already holds (kind ``ConflictKind/constraint``).
///
/// It carries the three states a policy needs: the ancestor (what the context last read or saved),
/// ours (the context's in-memory values, or nil when deleted here) and theirs (the store's record
/// now, or nil when deleted there).
///
/// ```swift
/// let conflict = MergeConflict(
///     objectID: "cairn://Person/p1", kind: .updateUpdate,
///     ancestorValues: ["name": .string("Ann"), "age": .int(30)], ancestorVersion: 1,
///     ourValues: ["name": .string("Ann"), "age": .int(40)],
///     storeValues: ["name": .string("Ann"), "age": .int(31)], storeVersion: 2)
/// conflict.changedProperties        // ["age"]
/// conflict.storeChangedProperties   // ["age"]
/// ```
public struct MergeConflict: Sendable, Hashable {
    /// The object's ID as an opaque URI string; policies must not parse it.
    ///
    /// ```swift
    /// print(conflict.objectID)   // "cairn://Person/p1"
    /// ```
    public let objectID: String

    /// Which side updated and which deleted.
    ///
    /// ```swift
    /// if conflict.kind == .deleteUpdate { /* we deleted, they changed */ }
    /// ```
    public let kind: ConflictKind

    /// The values the context last read or saved for the object.
    ///
    /// ```swift
    /// conflict.ancestorValues.value(of: "age")   // .int(30)
    /// ```
    public let ancestorValues: PropertyValues

    /// The record version the context last read or saved (1 for a freshly inserted record).
    ///
    /// ```swift
    /// conflict.ancestorVersion   // 1
    /// ```
    public let ancestorVersion: UInt64

    /// The context's in-memory values, or nil when the object is deleted in the context.
    ///
    /// ```swift
    /// conflict.ourValues?.value(of: "age")   // .int(40)
    /// ```
    public let ourValues: PropertyValues?

    /// The record as committed in the store now, or nil when the store deleted it.
    ///
    /// ```swift
    /// conflict.storeValues?.value(of: "age")   // .int(31)
    /// ```
    public let storeValues: PropertyValues?

    /// The store's record version now, 0 when the store deleted the record.
    ///
    /// ```swift
    /// conflict.storeVersion   // 2
    /// ```
    public let storeVersion: UInt64

    /// For a constraint conflict, the stored object that already holds the constrained values
    /// (its URI string, opaque like ``objectID``); nil for the other kinds. ``storeValues`` and
    /// ``storeVersion`` are that object's record.
    ///
    /// ```swift
    /// conflict.storedObjectID   // "cairn://Person/3"
    /// ```
    public let storedObjectID: String?

    /// For a constraint conflict, the constraint's attributes, in declared order; empty for the
    /// other kinds.
    ///
    /// ```swift
    /// conflict.constraint   // ["email"]
    /// ```
    public let constraint: [String]

    /// For a constraint conflict, the values both objects hold for ``constraint``.
    ///
    /// ```swift
    /// conflict.constraintValues   // ["email": .string("ann@example.com")]
    /// ```
    public var constraintValues: PropertyValues {
        var values = PropertyValues()
        for attribute in constraint { values[attribute] = ourValues?.value(of: attribute) ?? .null }
        return values
    }

    /// For a constraint conflict, whether our object is new (an insert, ancestor version 0)
    /// rather than a stored object whose change collides.
    ///
    /// ```swift
    /// conflict.isInsertion   // true: ancestorValues is empty
    /// ```
    public var isInsertion: Bool { kind == .constraint && ancestorVersion == 0 }

    /// Creates a conflict; the optional sides must agree with `kind` and `storeVersion`.
    ///
    /// ```swift
    /// let gone = MergeConflict(
    ///     objectID: "cairn://Person/p1", kind: .updateDelete,
    ///     ancestorValues: ["age": .int(30)], ancestorVersion: 1,
    ///     ourValues: ["age": .int(40)], storeValues: nil, storeVersion: 0)
    /// ```
    ///
    /// A mismatch (for example `.updateUpdate` with nil `storeValues`, or a deleted store record
    /// with a non-zero version) is a programming error in the caller and stops the process with
    /// a message naming the rule, because a policy would otherwise resolve a conflict that
    /// cannot exist. Both sides deleted is not a conflict: do not build one for it. A constraint
    /// conflict is made with ``init(constraint:objectID:storedObjectID:ancestorValues:ancestorVersion:ourValues:storeValues:storeVersion:)``.
    public init(
        objectID: String,
        kind: ConflictKind,
        ancestorValues: PropertyValues,
        ancestorVersion: UInt64,
        ourValues: PropertyValues?,
        storeValues: PropertyValues?,
        storeVersion: UInt64
    ) {
        switch kind {
        case .updateUpdate:
            precondition(
                ourValues != nil && storeValues != nil,
                "MergeConflict \(objectID): an update/update conflict needs both ourValues and storeValues"
            )
        case .updateDelete:
            precondition(
                ourValues != nil && storeValues == nil,
                "MergeConflict \(objectID): an update/delete conflict needs ourValues and nil storeValues"
            )
        case .deleteUpdate:
            precondition(
                ourValues == nil && storeValues != nil,
                "MergeConflict \(objectID): a delete/update conflict needs nil ourValues and storeValues"
            )
        case .constraint:
            preconditionFailure(
                "MergeConflict \(objectID): make a constraint conflict with init(constraint:objectID:storedObjectID:...)"
            )
        }
        precondition(
            (storeValues == nil) == (storeVersion == 0),
            "MergeConflict \(objectID): storeVersion must be 0 exactly when the store deleted the record"
        )
        self.objectID = objectID
        self.kind = kind
        self.ancestorValues = ancestorValues
        self.ancestorVersion = ancestorVersion
        self.ourValues = ourValues
        self.storeValues = storeValues
        self.storeVersion = storeVersion
        storedObjectID = nil
        constraint = []
    }

    /// Creates a constraint conflict: our object (new when `ancestorVersion` is 0, with empty
    /// `ancestorValues`) holds the values of `constraint` that the stored object
    /// `storedObjectID` (`storeValues` at `storeVersion`) already holds.
    ///
    /// ```swift
    /// let duplicate = MergeConflict(
    ///     constraint: ["email"], objectID: "cairn://Person/t1", storedObjectID: "cairn://Person/3",
    ///     ancestorValues: [:], ancestorVersion: 0,
    ///     ourValues: ["email": .string("ann@example.com"), "name": .string("Ann")],
    ///     storeValues: ["email": .string("ann@example.com"), "name": .string("Anne")], storeVersion: 1)
    /// ```
    ///
    /// An empty `constraint` or a `storeVersion` of 0 (the stored object must exist) is a
    /// programming error in the caller and stops the process with a message naming the rule.
    public init(
        constraint: [String],
        objectID: String,
        storedObjectID: String,
        ancestorValues: PropertyValues,
        ancestorVersion: UInt64,
        ourValues: PropertyValues,
        storeValues: PropertyValues,
        storeVersion: UInt64
    ) {
        precondition(!constraint.isEmpty, "MergeConflict \(objectID): a constraint conflict needs the constraint's attributes")
        precondition(storeVersion != 0, "MergeConflict \(objectID): a constraint conflict needs the stored object's version")
        self.objectID = objectID
        kind = .constraint
        self.ancestorValues = ancestorValues
        self.ancestorVersion = ancestorVersion
        self.ourValues = ourValues
        self.storeValues = storeValues
        self.storeVersion = storeVersion
        self.storedObjectID = storedObjectID
        self.constraint = constraint
    }

    /// The properties whose in-memory value differs from the ancestor's; empty when deleted here.
    ///
    /// ```swift
    /// // ancestor {age: 30, city: "Oslo"}, ours {age: 30, city: "Rome"}
    /// conflict.changedProperties   // ["city"]
    /// ```
    public var changedProperties: Set<String> {
        // A deleted side has no values to compare; the kind already says it was deleted.
        ourValues?.differingProperties(from: ancestorValues) ?? []
    }

    /// The properties whose store value differs from the ancestor's; empty when deleted in the store.
    ///
    /// ```swift
    /// // ancestor {age: 30, city: "Oslo"}, theirs {age: 31, city: "Oslo"}
    /// conflict.storeChangedProperties   // ["age"]
    /// ```
    public var storeChangedProperties: Set<String> {
        storeValues?.differingProperties(from: ancestorValues) ?? []
    }
}
