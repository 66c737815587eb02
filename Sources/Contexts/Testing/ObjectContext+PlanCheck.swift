import Policies

// A hook for tests: a request's plan as a fetch binds it from the store's cache of shapes, and
// as planned afresh. `package`: not public API.

extension ObjectContext {
    /// The plan `fetch(request)` reads with here (the cached template of the request's shape,
    /// bound to its constants) and the plan made afresh for it, each described in full: index,
    /// ranges' bytes, exactness, order and conditions ("scan" for none); whether the request's
    /// shape was kept before, and how many shapes the store's cache holds after the lookup.
    ///
    /// ```swift
    /// let plans = try context.boundAndFreshPlans(request)
    /// #expect(plans.bound == plans.fresh)
    /// ```
    package func boundAndFreshPlans(
        _ request: FetchRequest
    ) throws(ContextError) -> (bound: String, fresh: String, wasKept: Bool, cachedShapes: Int) {
        checkQueue()
        let entity = try core.entity(named: request.entityName)
        let request = try resolvingRelationshipPaths(request, entity: entity)
        let wasKept = core.fetchPlans.holds(request)
        let bound = try checkedPlan(for: request, entity: entity)
        let fresh = indexPlan(for: request, entity: entity)
        func describe(_ plan: IndexPlan?) -> String {
            guard let plan else { return "scan" }
            let ranges = plan.ranges.map { "\($0.lower)..<\($0.upper.map { "\($0)" } ?? "end")" }
            let conditions = plan.template.conditions(request.predicate).map(\.text)
            return "\(plan.index.tableName) \(ranges) exact \(plan.exact) order \(String(describing: plan.order)) \(conditions)"
        }
        return (describe(bound), describe(fresh), wasKept, core.fetchPlans.count)
    }
}
