import Locking

/// The checked requests of one store by shape (``FetchShape``), each with its ``PlanTemplate``:
/// a request of a shape met before skips validation and the choice of index, and only binds its
/// constants (planning was about a sixth of a fetch by an indexed attribute).
///
/// Invariant: a shape is kept only after a request of it passed `validate(against:)`, and
/// validation reads a request only through its shape, so every request that matches a kept
/// shape is valid; the template is the one `PlanTemplate.make` gives any request of the shape.
/// The schema of a store never changes while it is open, so nothing here goes stale.
///
/// Most used first (a hit moves its shape up one place, a new shape comes in first), at most
/// `capacity` shapes, the last one dropped for a new one: an application asks a handful of
/// shapes over and over, and matching a request against a shape it is not fails at once
/// (another entity, another first attribute).
///
/// `Sendable`: the list is behind its lock.
final class FetchPlanCache: Sendable {
    struct Entry: Sendable {
        let shape: FetchShape
        /// nil: no index serves the shape (a scan).
        let template: PlanTemplate?
    }

    static let capacity = 32

    private let entries = ConditionLock<[Entry]>([])

    /// The template for `request` (of `entity`), checking the request first when its shape is
    /// new. The request must have its relationship paths resolved.
    ///
    /// - Throws: what ``FetchRequest/validate(against:)`` throws.
    func template(for request: FetchRequest, entity: EntityDescription) throws(ContextError) -> PlanTemplate? {
        let found = entries.withLock { entries -> PlanTemplate?? in
            guard let position = entries.firstIndex(where: { $0.shape.matches(request) }) else { return nil }
            if position > 0 { entries.swapAt(position, position - 1) }  // up one place per hit
            return .some(entries[position > 0 ? position - 1 : 0].template)
        }
        if let found { return found }
        try request.validate(against: entity)
        let template = PlanTemplate.make(for: request, entity: entity)
        if let shape = FetchShape(request) {
            entries.withLock { entries in
                // Another context may have kept it meanwhile.
                guard !entries.contains(where: { $0.shape.matches(request) }) else { return }
                if entries.count >= Self.capacity { entries.removeLast() }
                entries.insert(Entry(shape: shape, template: template), at: 0)
            }
        }
        return template
    }

    /// How many shapes are kept (for tests).
    var count: Int { entries.withLock { $0.count } }

    /// Whether the shape of `request` is kept (for tests).
    func holds(_ request: FetchRequest) -> Bool { entries.withLock { $0.contains { $0.shape.matches(request) } } }
}
