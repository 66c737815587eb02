import Foundation

/// A typed fetch, as SwiftData's `FetchDescriptor`: a Foundation `#Predicate`, Foundation
/// `SortDescriptor`s, a limit and an offset.
///
/// ```swift
/// var descriptor = FetchDescriptor<Person>(
///     predicate: #Predicate { $0.age >= 18 && $0.city != "Oslo" },
///     sortBy: [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.name)])
/// descriptor.fetchLimit = 20
/// let page = try context.fetch(descriptor)
/// ```
///
/// Comparisons of a declared attribute with a constant (`==`, `!=`, `<`, `<=`, `>`, `>=`, with
/// `&&`, `||`, `!`, and `constants.contains($0.attribute)`) run in the store, where an index
/// can serve them; anything else is evaluated on the objects after a broader fetch. The result
/// is the same either way (Docs/Contexts.md, "Typed models"). ``translation`` tells which.
public struct FetchDescriptor<Model: CairnModel> {
    /// Which objects match; nil matches all.
    ///
    /// ```swift
    /// descriptor.predicate = #Predicate { $0.name == "Ann" }
    /// ```
    public var predicate: Predicate<Model>?

    /// The order of the results, first descriptor first; ties keep the base order (primary
    /// key, then pending inserts in insertion order).
    ///
    /// ```swift
    /// descriptor.sortBy = [SortDescriptor(\.name)]
    /// ```
    public var sortBy: [SortDescriptor<Model>]

    /// At most this many objects (after the offset); nil for no limit.
    ///
    /// ```swift
    /// descriptor.fetchLimit = 20
    /// ```
    public var fetchLimit: Int?

    /// Skips this many matching objects first; nil (or 0) skips none.
    ///
    /// ```swift
    /// descriptor.fetchOffset = 40
    /// ```
    public var fetchOffset: Int?

    /// Whether the predicate and sorts are translated for the store (false: everything is
    /// evaluated on the objects). For tests that compare both ways; `package`: not public API.
    package var translates = true

    /// Whether the translated fetch may read through an index. For tests; `package`.
    package var usesIndexes = true

    /// Creates a descriptor; every part is optional.
    ///
    /// ```swift
    /// let everyone = FetchDescriptor<Person>()
    /// let adults = FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 18 }, sortBy: [SortDescriptor(\.name)])
    /// ```
    public init(predicate: Predicate<Model>? = nil, sortBy: [SortDescriptor<Model>] = [], fetchLimit: Int? = nil, fetchOffset: Int? = nil) {
        self.predicate = predicate
        self.sortBy = sortBy
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
    }

    /// How the fetch runs: the store's request, and what is left to evaluate on the objects.
    ///
    /// ```swift
    /// let translation = FetchDescriptor<Person>(predicate: #Predicate { $0.age > 30 }).translation
    /// translation.request.predicate          // .compare("age", .greaterThan, .int(30))
    /// translation.evaluatesPredicateOnObjects // false
    /// ```
    public var translation: FetchTranslation {
        let entity = Model.entity
        let filter = translates ? predicate.map { PredicateTranslation($0, entity: entity) } : nil
        let evaluates = predicate != nil && !(filter?.isExact ?? false)
        var sorts: [FetchRequest.SortDescriptor]? = translates ? [] : nil
        for descriptor in sortBy {
            guard descriptor.stringComparator == nil, let keyPath = descriptor.keyPath,
                let attribute = entity.attribute(for: keyPath), attribute.isNativelyOrdered
            else {
                sorts = nil
                break
            }
            sorts?.append(FetchRequest.SortDescriptor(attribute: attribute.name, ascending: descriptor.order == .forward))
        }
        let sortsOnObjects = sorts == nil && !sortBy.isEmpty
        let inStore = !evaluates && !sortsOnObjects
        var request = FetchRequest(
            entityName: entity.name, predicate: filter?.predicate, sortDescriptors: sorts ?? [],
            fetchLimit: inStore ? fetchLimit : nil, fetchOffset: inStore ? max(fetchOffset ?? 0, 0) : 0)
        request.usesIndexes = usesIndexes
        return FetchTranslation(request: request, evaluatesPredicateOnObjects: evaluates, sortsOnObjects: sortsOnObjects)
    }
}

/// `Sendable` like SwiftData's: a `Predicate` and `SortDescriptor`s are values.
extension FetchDescriptor: Sendable {}

/// How a ``FetchDescriptor`` runs: the request the store answers, and what is then done on the
/// objects (which also takes over the offset and limit).
///
/// ```swift
/// let translation = descriptor.translation
/// print(try context.explain(translation.request))   // index (age): 30 < age
/// ```
public struct FetchTranslation: Sendable {
    /// The untyped request the store runs: the translated part of the predicate, the sorts
    /// when all translate, and the offset and limit when nothing is left for the objects.
    ///
    /// ```swift
    /// descriptor.translation.request.predicate
    /// ```
    public let request: FetchRequest

    /// Whether part of the predicate is evaluated on the fetched objects
    /// (`predicate.evaluate(value)`).
    ///
    /// ```swift
    /// FetchDescriptor<Person>(predicate: #Predicate { $0.name.starts(with: "A") }).translation.evaluatesPredicateOnObjects   // true
    /// ```
    public let evaluatesPredicateOnObjects: Bool

    /// Whether the sort runs on the fetched objects (a `String` comparator, or a key path that
    /// is not a natively ordered attribute).
    ///
    /// ```swift
    /// FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name, comparator: .lexical)]).translation.sortsOnObjects   // true
    /// ```
    public let sortsOnObjects: Bool
}
