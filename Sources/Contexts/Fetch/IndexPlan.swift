import Policies

/// How a root context reads one request through an index: byte ranges of the index table, and
/// whether walking them gives the first sort descriptor's order. A ``PlanTemplate`` (the choice
/// of index, made from the request's shape) bound to the request's constants.
///
/// The ranges cover every stored object the predicate can match (a superset when `exact` is
/// false); each object read is still tested against the whole predicate, so a plan changes
/// what is read, never what matches.
struct IndexPlan {
    struct KeyRange {
        var lower: [UInt8]
        /// Exclusive; nil: to the end of the table.
        var upper: [UInt8]?
    }

    let template: PlanTemplate
    /// Sorted, disjoint.
    let ranges: [KeyRange]
    /// The ranges hold exactly the stored objects the predicate matches: `count(for:)` counts
    /// their entries without reading a record.
    let exact: Bool
    /// Walking the (single) range in this direction gives the first sort descriptor's order;
    /// `sortValues` leading values of a key decide it.
    let order: (ascending: Bool, sortValues: Int)?

    var index: IndexLayout { template.index }

    /// What the plan holds one attribute to, for explanations.
    enum Condition {
        case points(String, [AttributeValue])
        case range(String, lower: (value: AttributeValue, inclusive: Bool)?, upper: (value: AttributeValue, inclusive: Bool)?)

        var text: String {
            switch self {
            case let .points(name, points):
                return points.count == 1 ? "\(name) == \(points[0])" : "\(name) IN \(points)"
            case let .range(name, lower, upper):
                var text = name
                if let lower { text = "\(lower.value) \(lower.inclusive ? "<=" : "<") " + text }
                if let upper { text += " \(upper.inclusive ? "<=" : "<") \(upper.value)" }
                return text
            }
        }
    }

    /// The plan for `request` on `entity`, or nil when no index helps (a scan), made afresh
    /// (contexts take their templates from the store's ``FetchPlanCache``).
    /// The request must be valid (``FetchRequest/validate(against:)``).
    static func make(for request: FetchRequest, entity: EntityDescription) -> IndexPlan? {
        PlanTemplate.make(for: request, entity: entity)?.bind(request.predicate)
    }
}
