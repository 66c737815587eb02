/// A custom-policy example built from closures: chosen properties are merged by your own
/// function, everything else by a fallback policy.
///
/// For an update/update conflict, each property that has a resolver and changed on at least one
/// side gets the resolver's answer. The fallback policy then decides the rest:
///
/// 1. If only resolver properties changed, the fallback is not consulted at all; the result is
///    the store's values with the resolved properties on top.
/// 2. Otherwise the fallback resolves the conflict (all such conflicts in one call, so an
///    ``ErrorMergePolicy`` fallback lists them all) and the resolved properties are laid over
///    its answer: over its values for `.write`, over the store's for `.takeStore`. A `.delete`
///    stays a delete.
/// 3. Deletion conflicts (update/delete, delete/update) go to the fallback unchanged.
///
/// As everywhere, a merged result equal to the store's values becomes ``Resolution/takeStore``.
///
/// ```swift
/// // Titles: keep the longer one. Everything else: object trump.
/// let policy = PropertyResolverPolicy(
///     resolvers: ["title": { _, ours, theirs in
///         ours.description.count >= theirs.description.count ? ours : theirs
///     }],
///     otherwise: .objectTrump)
/// ```
public struct PropertyResolverPolicy: MergePolicy {
    /// Merges one property: given the ancestor's, our and the store's value (`.null` when
    /// absent), returns the value to keep. Throw to fail the save.
    ///
    /// ```swift
    /// let keepMax: PropertyResolverPolicy.Resolver = { _, ours, theirs in
    ///     if case let (.int(a), .int(b)) = (ours, theirs) { return .int(max(a, b)) }
    ///     return theirs
    /// }
    /// ```
    public typealias Resolver = @Sendable (
        _ ancestor: AttributeValue, _ ours: AttributeValue, _ theirs: AttributeValue
    ) throws -> AttributeValue

    static let defaultName = "propertyResolver"

    /// The name given at creation, `"propertyResolver"` unless chosen.
    ///
    /// ```swift
    /// PropertyResolverPolicy.addingDeltas(for: ["likes"], otherwise: .objectTrump).name   // "addingDeltas"
    /// ```
    public let name: String

    /// The resolver for each property it owns.
    ///
    /// ```swift
    /// policy.resolvers.keys   // ["title"]
    /// ```
    public let resolvers: [String: Resolver]

    /// The policy that decides deletions and every property without a resolver.
    ///
    /// ```swift
    /// policy.fallback.name   // "objectTrump"
    /// ```
    public let fallback: any MergePolicy

    /// Creates the policy from per-property resolvers and a fallback policy.
    ///
    /// ```swift
    /// let policy = PropertyResolverPolicy(
    ///     name: "maxScore",
    ///     resolvers: ["score": keepMax],
    ///     otherwise: .storeTrump)
    /// ```
    public init(name: String = "propertyResolver", resolvers: [String: Resolver], otherwise fallback: some MergePolicy) {
        self.name = name
        self.resolvers = resolvers
        self.fallback = fallback
    }

    /// Resolves the conflicts by the numbered rules above.
    ///
    /// ```swift
    /// let resolutions = try policy.resolve(conflicts)
    /// ```
    ///
    /// - Throws: what a resolver throws, what the fallback throws, or ``ResolutionCountMismatch``
    ///   when the fallback breaks the one-resolution-per-conflict rule.
    public func resolve(_ conflicts: [MergeConflict]) throws -> [Resolution] {
        var resolutions = [Resolution?](repeating: nil, count: conflicts.count)
        var forFallback: [Int] = []
        // The resolver-owned properties of conflicts that also need the fallback, by index.
        var resolvedByIndex: [Int: PropertyValues] = [:]

        for (index, conflict) in conflicts.enumerated() {
            guard conflict.kind == .updateUpdate, let ours = conflict.ourValues, let theirs = conflict.storeValues
            else {
                forFallback.append(index)
                continue
            }
            let touched = conflict.changedProperties.union(conflict.storeChangedProperties)
            var resolved = PropertyValues()
            for property in touched {
                guard let resolver = resolvers[property] else { continue }
                resolved[property] = try resolver(
                    conflict.ancestorValues.value(of: property), ours.value(of: property), theirs.value(of: property))
            }
            if !touched.isEmpty, resolved.count == touched.count {
                // Rule 1: every other property is unchanged on both sides, so theirs is also ours.
                resolutions[index] = PropertyMerge.resolution(writing: theirs.merging(resolved) { $1 }, for: conflict)
            } else {
                forFallback.append(index)
                if !resolved.isEmpty { resolvedByIndex[index] = resolved }
            }
        }

        if !forFallback.isEmpty {
            let fallbackResolutions = try fallback.resolutions(for: forFallback.map { conflicts[$0] })
            for (index, fallbackResolution) in zip(forFallback, fallbackResolutions) {
                let conflict = conflicts[index]
                guard let resolved = resolvedByIndex[index], let theirs = conflict.storeValues else {
                    resolutions[index] = fallbackResolution
                    continue
                }
                switch fallbackResolution {
                case .write(let values):
                    resolutions[index] = PropertyMerge.resolution(writing: values.merging(resolved) { $1 }, for: conflict)
                case .takeStore:
                    resolutions[index] = PropertyMerge.resolution(writing: theirs.merging(resolved) { $1 }, for: conflict)
                case .delete:
                    resolutions[index] = .delete
                }
            }
        }
        // Every index was filled by exactly one of the two passes.
        return resolutions.map { $0! }
    }
}
