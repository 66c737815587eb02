/// How a fetch request runs in a context: which index and which ranges it reads, or a scan of
/// the entity's table. ``ObjectContext/explain(_:)`` makes one; the result never depends on it.
///
/// ```swift
/// let plan = try context.explain(FetchRequest(entityName: "Person", predicate: .compare("name", .equal, .string("Ann"))))
/// print(plan)   // index Person(name): name == "Ann"
/// ```
public struct FetchPlan: Sendable, Hashable, CustomStringConvertible {
    /// What the fetch reads.
    public enum Access: Sendable, Hashable {
        /// Every record of the entity (or, in a child context, its parent's view of them).
        case scan
        /// The entries of the index on these attributes, within `conditions`.
        case index(attributes: [String])
    }

    /// What the fetch reads.
    ///
    /// ```swift
    /// plan.access   // .index(attributes: ["name"])
    /// ```
    public let access: Access

    /// The constraints the index ranges come from, one per attribute (`18 <= age < 65`,
    /// `city IN ["Oslo", "Rome"]`); empty for a scan or a whole index read in sort order.
    ///
    /// ```swift
    /// plan.conditions   // ["name == \"Ann\""]
    /// ```
    public let conditions: [String]

    /// Whether the index is walked in the first sort descriptor's order and stops after the
    /// offset and limit (plus ties): a sorted page reads about that many entries.
    ///
    /// ```swift
    /// plan.readsInSortOrder   // true for sort by an indexed attribute with a fetchLimit
    /// ```
    public let readsInSortOrder: Bool

    /// Whether `count(for:)` counts index entries without reading any record: the ranges hold
    /// exactly what the predicate matches.
    ///
    /// ```swift
    /// plan.countsIndexEntries   // true for .compare("age", .greaterThan, .int(30)) on an age index
    /// ```
    public let countsIndexEntries: Bool

    /// Why the fetch scans (nil when it reads an index).
    ///
    /// ```swift
    /// plan.reason   // "a child context reads its parent's view, which has no index"
    /// ```
    public let reason: String?

    init(access: Access, conditions: [String], readsInSortOrder: Bool, countsIndexEntries: Bool, reason: String?) {
        self.access = access
        self.conditions = conditions
        self.readsInSortOrder = readsInSortOrder
        self.countsIndexEntries = countsIndexEntries
        self.reason = reason
    }

    /// One line: `index Person(city, age): city == "Oslo", 30 < age; in sort order` or
    /// `scan of Person: <reason>`.
    ///
    /// ```swift
    /// print(plan)
    /// ```
    public var description: String { text }

    private var text: String {
        switch access {
        case .scan:
            return "scan" + (reason.map { ": " + $0 } ?? "")
        case .index(let attributes):
            var line = "index (\(attributes.joined(separator: ", ")))"
            line += conditions.isEmpty ? ": every entry" : ": " + conditions.joined(separator: ", ")
            if readsInSortOrder { line += "; in sort order, stopping after the limit" }
            if countsIndexEntries { line += "; count(for:) counts entries" }
            return line
        }
    }
}

extension ObjectContext {
    /// How `fetch(request)` and `count(for: request)` run here: an index and its ranges, or a
    /// scan and why. Checks the request as a fetch does.
    ///
    /// ```swift
    /// print(try context.explain(request))   // index (age): 18 <= age < 65; count(for:) counts entries
    /// ```
    ///
    /// - Throws: ``ContextError/unknownEntity(_:)``, ``ContextError/unknownAttribute(entity:attribute:)``,
    ///   ``ContextError/predicateTypeMismatch(entity:attribute:expected:found:)``.
    public func explain(_ request: FetchRequest) throws(ContextError) -> FetchPlan {
        checkQueue()
        let entity = try core.entity(named: request.entityName)
        let request = try resolvingRelationshipPaths(request, entity: entity)
        if let plan = try checkedPlan(for: request, entity: entity) {
            return FetchPlan(
                access: .index(attributes: plan.index.attributeNames),
                conditions: plan.template.conditions(request.predicate).map(\.text),
                readsInSortOrder: plan.order != nil, countsIndexEntries: plan.exact, reason: nil)
        }
        let reason: String
        if parent != nil {
            reason = "a child context reads its parent's view, which has no index"
        } else if !request.usesIndexes {
            reason = "indexes turned off for this request"
        } else if entity.layout.indexes.isEmpty {
            reason = "\(entity.name) has no index"
        } else {
            reason = "no index of \(entity.name) leads with an attribute the predicate constrains with ==, IN, <, <=, >, >= "
                + "(or, with a fetchLimit, with the first sort attribute)"
        }
        return FetchPlan(access: .scan, conditions: [], readsInSortOrder: false, countsIndexEntries: false, reason: reason)
    }
}

extension FetchRequest {
    /// How the request runs in `context` (on its queue): ``ObjectContext/explain(_:)``.
    ///
    /// ```swift
    /// print(try request.explain(in: context))
    /// ```
    public func explain(in context: ObjectContext) throws(ContextError) -> FetchPlan {
        try context.explain(self)
    }
}
