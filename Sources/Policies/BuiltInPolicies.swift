/// The five built-in policies, by name, for tools and settings that pick a policy from text.
///
/// ```swift
/// guard let policy = BuiltInPolicies.named("storeTrump") else { fatalError("unknown policy") }
/// for policy in BuiltInPolicies.all { print(policy.name) }
/// ```
public enum BuiltInPolicies {
    /// The five built-ins, in the order of the contract's tables.
    ///
    /// ```swift
    /// BuiltInPolicies.all.map(\.name)   // ["error", "storeTrump", "objectTrump", "overwrite", "rollback"]
    /// ```
    public static let all: [any MergePolicy] = [
        ErrorMergePolicy(),
        MergeByPropertyStoreTrumpPolicy(),
        MergeByPropertyObjectTrumpPolicy(),
        OverwriteMergePolicy(),
        RollbackMergePolicy(),
    ]

    /// The built-ins' names, in the order of ``all``.
    ///
    /// ```swift
    /// BuiltInPolicies.names.contains("rollback")   // true
    /// ```
    public static var names: [String] { all.map(\.name) }

    /// The names of the example policies the library ships, which need parameters and so cannot
    /// be made from a name alone.
    ///
    /// Tools use this to tell "needs parameters" from "unknown".
    ///
    /// ```swift
    /// BuiltInPolicies.exampleNames   // ["lastWriterWins", "propertyResolver", "addingDeltas"]
    /// BuiltInPolicies.named("lastWriterWins")   // nil: build LastWriterWinsPolicy(timestampProperty:)
    /// ```
    public static let exampleNames: [String] = [
        LastWriterWinsPolicy.policyName,
        PropertyResolverPolicy.defaultName,
        PropertyResolverPolicy.addingDeltasName,
    ]

    /// The built-in policy with this name (case-sensitive), or nil for any other name, including
    /// the ``exampleNames``.
    ///
    /// ```swift
    /// BuiltInPolicies.named("overwrite")?.name   // "overwrite"
    /// BuiltInPolicies.named("Overwrite")         // nil
    /// ```
    public static func named(_ name: String) -> (any MergePolicy)? {
        all.first { $0.name == name }
    }
}
