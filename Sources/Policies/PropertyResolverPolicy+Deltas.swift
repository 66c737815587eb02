extension PropertyResolverPolicy {
    static let addingDeltasName = "addingDeltas"

    /// A resolver for counters: the store's value plus our change, `theirs + (ours − ancestor)`.
    ///
    /// Ints (exact, failing on Int64 overflow) and doubles are added. For any other values, the
    /// side that changed wins when only one did; when both changed, the save fails with
    /// ``UnmergeableDelta`` because no sum means anything.
    ///
    /// ```swift
    /// let add = PropertyResolverPolicy.addingDelta(for: "likes")
    /// try add(.int(10), .int(13), .int(15))   // .int(18)
    /// ```
    public static func addingDelta(for property: String) -> Resolver {
        { ancestor, ours, theirs in
            switch (ancestor, ours, theirs) {
            case let (.int(ancestor), .int(ours), .int(theirs)):
                // Wide arithmetic so a large intermediate difference cannot trap; only a result
                // outside Int64 is an error.
                let sum = Int128(theirs) + (Int128(ours) - Int128(ancestor))
                guard let exact = Int64(exactly: sum) else {
                    throw UnmergeableDelta(
                        property: property, ancestor: .int(ancestor), ours: .int(ours), theirs: .int(theirs))
                }
                return .int(exact)
            case let (.double(ancestor), .double(ours), .double(theirs)):
                return .double(theirs + (ours - ancestor))
            default:
                if ours == ancestor { return theirs }
                if theirs == ancestor { return ours }
                throw UnmergeableDelta(property: property, ancestor: ancestor, ours: ours, theirs: theirs)
            }
        }
    }

    /// Both sides changed a delta-merged property, but its values cannot be added.
    ///
    /// ```swift
    /// catch let error as PropertyResolverPolicy.UnmergeableDelta { print(error) }
    /// ```
    public struct UnmergeableDelta: Error, Sendable, Hashable, CustomStringConvertible {
        /// The property being merged.
        ///
        /// ```swift
        /// error.property   // "likes"
        /// ```
        public let property: String
        /// The ancestor's value.
        ///
        /// ```swift
        /// error.ancestor   // .null
        /// ```
        public let ancestor: AttributeValue
        /// Our value.
        ///
        /// ```swift
        /// error.ours   // .int(3)
        /// ```
        public let ours: AttributeValue
        /// The store's value.
        ///
        /// ```swift
        /// error.theirs   // .int(5)
        /// ```
        public let theirs: AttributeValue

        /// Creates the error.
        ///
        /// ```swift
        /// UnmergeableDelta(property: "likes", ancestor: .null, ours: .int(3), theirs: .int(5))
        /// ```
        public init(property: String, ancestor: AttributeValue, ours: AttributeValue, theirs: AttributeValue) {
            self.property = property
            self.ancestor = ancestor
            self.ours = ours
            self.theirs = theirs
        }

        /// Names the property and the three values.
        ///
        /// ```swift
        /// print(error)
        /// ```
        public var description: String {
            "cannot add deltas for \"\(property)\": ancestor \(ancestor), ours \(ours), theirs \(theirs); "
                + "all three must be ints, or all doubles, and the sum must fit"
        }
    }
}

extension MergePolicy where Self == PropertyResolverPolicy {
    /// A policy that merges the given numeric properties by adding both sides' deltas, and
    /// everything else with `fallback`; named `"addingDeltas"`.
    ///
    /// Two contexts that each add to a counter both keep their increments: ancestor 10, ours 13,
    /// theirs 15 gives 18.
    ///
    /// ```swift
    /// context.mergePolicy = .addingDeltas(for: ["likes"], otherwise: .objectTrump)
    /// let policy = PropertyResolverPolicy.addingDeltas(for: ["likes"], otherwise: .objectTrump)
    /// ```
    public static func addingDeltas(for properties: Set<String>, otherwise fallback: some MergePolicy) -> PropertyResolverPolicy {
        var resolvers: [String: PropertyResolverPolicy.Resolver] = [:]
        for property in properties {
            resolvers[property] = PropertyResolverPolicy.addingDelta(for: property)
        }
        return PropertyResolverPolicy(name: PropertyResolverPolicy.addingDeltasName, resolvers: resolvers, otherwise: fallback)
    }
}
