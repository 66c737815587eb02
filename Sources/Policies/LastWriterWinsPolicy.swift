/// A custom-policy example: the side whose timestamp property is newer wins the whole object.
///
/// Built only on the public ``MergePolicy`` protocol, like any policy of your own.
///
/// | conflict | outcome |
/// |---|---|
/// | update/update, our timestamp newer | all our values written |
/// | update/update, theirs newer, or a tie | the store's state taken |
/// | update/delete | re-inserted with our values |
/// | delete/update | our delete wins |
///
/// Rules for the timestamp, in order:
/// 1. Dates compare with dates; ints and doubles compare numerically with each other.
/// 2. A side whose timestamp is `null` (or absent) is older than a side that has one.
/// 3. Equal timestamps, or both `null`, are a tie, and a tie goes to the store, so the record
///    already committed (which other contexts may have read) is left alone.
/// 4. Any other pairing (a string, a date against a number, …) means the property is not a
///    timestamp: the save fails with ``UnorderedTimestamps`` rather than guess.
///
/// A deletion carries no timestamp, so deletion conflicts fall back to commit order: the saving
/// context is the last writer, and its side wins (update → re-insert, delete → delete). Wrap the
/// policy if deletions should be sticky instead.
///
/// ```swift
/// context.mergePolicy = .lastWriterWins(timestampProperty: "modifiedAt")
/// ```
public struct LastWriterWinsPolicy: MergePolicy {
    /// The property holding each side's modification time (a date, int or double).
    ///
    /// ```swift
    /// LastWriterWinsPolicy(timestampProperty: "modifiedAt").timestampProperty   // "modifiedAt"
    /// ```
    public let timestampProperty: String

    /// Creates the policy for the given timestamp property.
    ///
    /// ```swift
    /// let policy = LastWriterWinsPolicy(timestampProperty: "modifiedAt")
    /// ```
    public init(timestampProperty: String) {
        self.timestampProperty = timestampProperty
    }

    static let policyName = "lastWriterWins"

    /// `"lastWriterWins"`.
    ///
    /// ```swift
    /// LastWriterWinsPolicy(timestampProperty: "modifiedAt").name   // "lastWriterWins"
    /// ```
    public var name: String { Self.policyName }

    /// Resolves each conflict as the table above says.
    ///
    /// ```swift
    /// try policy.resolve([conflict])   // [.write(ours)] when our modifiedAt is newer
    /// ```
    ///
    /// - Throws: ``UnorderedTimestamps`` when an update/update conflict's two timestamps cannot
    ///   be ordered (rule 4).
    public func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution] {
        try conflicts.map { conflict in
            switch conflict.kind {
            case .updateUpdate:
                let ours = conflict.ourValues ?? conflict.ancestorValues
                let theirs = conflict.storeValues ?? conflict.ancestorValues
                let oursIsNewer = try isNewer(
                    ours.value(of: timestampProperty), than: theirs.value(of: timestampProperty),
                    objectID: conflict.objectID)
                return oursIsNewer ? PropertyMerge.resolution(writing: ours, for: conflict) : .takeStore
            case .updateDelete:
                return .write(conflict.ourValues ?? conflict.ancestorValues)
            case .deleteUpdate:
                return .delete
            case .constraint:
                // Two objects, not two versions of one: the newer one's values win the upsert.
                let oursIsNewer = try isNewer(
                    (conflict.ourValues ?? [:]).value(of: timestampProperty),
                    than: (conflict.storeValues ?? [:]).value(of: timestampProperty), objectID: conflict.objectID)
                return oursIsNewer ? ConstraintMerge.objectTrump(conflict) : ConstraintMerge.storeTrump(conflict)
            }
        }
    }

    private func isNewer(_ ours: AttributeValue, than theirs: AttributeValue, objectID: String) throws -> Bool {
        switch (ours, theirs) {
        case (.null, _): return false
        case (_, .null): return true
        case let (.date(our), .date(their)): return our > their
        case let (.int(our), .int(their)): return our > their
        case let (.double(our), .double(their)): return our > their
        // Mixed int/double compare as doubles; 2^53-sized ints may round, which only matters
        // for timestamps that differ below a unit at that magnitude.
        case let (.int(our), .double(their)): return Double(our) > their
        case let (.double(our), .int(their)): return our > Double(their)
        default:
            throw UnorderedTimestamps(objectID: objectID, property: timestampProperty, ours: ours, theirs: theirs)
        }
    }

    /// The two sides' timestamp values cannot be ordered, so no writer can be said to be last.
    ///
    /// ```swift
    /// catch let error as LastWriterWinsPolicy.UnorderedTimestamps { print(error.property) }
    /// ```
    public struct UnorderedTimestamps: Error, Sendable, Hashable, CustomStringConvertible {
        /// The conflicting object.
        ///
        /// ```swift
        /// error.objectID   // "cairn://Note/n1"
        /// ```
        public let objectID: String
        /// The timestamp property the policy was given.
        ///
        /// ```swift
        /// error.property   // "modifiedAt"
        /// ```
        public let property: String
        /// Our value of it.
        ///
        /// ```swift
        /// error.ours   // .string("yesterday")
        /// ```
        public let ours: AttributeValue
        /// The store's value of it.
        ///
        /// ```swift
        /// error.theirs   // .date(…)
        /// ```
        public let theirs: AttributeValue

        /// Creates the error.
        ///
        /// ```swift
        /// UnorderedTimestamps(objectID: "cairn://Note/n1", property: "modifiedAt",
        ///                     ours: .string("yesterday"), theirs: .int(5))
        /// ```
        public init(objectID: String, property: String, ours: AttributeValue, theirs: AttributeValue) {
            self.objectID = objectID
            self.property = property
            self.ours = ours
            self.theirs = theirs
        }

        /// Names the object, the property and both values.
        ///
        /// ```swift
        /// print(error)
        /// ```
        public var description: String {
            "lastWriterWins cannot order \(objectID)'s \"\(property)\": ours \(ours), theirs \(theirs); "
                + "it must hold dates, or ints/doubles, on both sides"
        }
    }
}

extension MergePolicy where Self == LastWriterWinsPolicy {
    /// The policy where the side with the newer `timestampProperty` wins the whole object.
    ///
    /// ```swift
    /// context.mergePolicy = .lastWriterWins(timestampProperty: "modifiedAt")
    /// ```
    public static func lastWriterWins(timestampProperty: String) -> LastWriterWinsPolicy {
        LastWriterWinsPolicy(timestampProperty: timestampProperty)
    }
}
