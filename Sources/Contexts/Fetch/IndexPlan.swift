import Foundation
import Policies

/// How a root context reads one request through an index: byte ranges of the index table, and
/// whether walking them gives the first sort descriptor's order.
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

    let index: IndexLayout
    /// Sorted, disjoint.
    let ranges: [KeyRange]
    /// The ranges hold exactly the stored objects the predicate matches: `count(for:)` counts
    /// their entries without reading a record.
    let exact: Bool
    /// Walking the (single) range in this direction gives the first sort descriptor's order;
    /// `sortValues` leading values of a key decide it.
    let order: (ascending: Bool, sortValues: Int)?
    /// For explanations: one per constrained attribute, as values; the text is made only when
    /// asked for, since rendering the constants cost about a third of planning a fetch.
    let constrained: [Condition]

    /// For explanations: one text per constrained attribute.
    var conditions: [String] { constrained.map(\.text) }

    /// What the plan holds one attribute to.
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

    /// The plan for `request` on `entity`, or nil when no index helps (a scan).
    /// The request must be valid (``FetchRequest/validate(against:)``).
    static func make(for request: FetchRequest, entity: EntityDescription) -> IndexPlan? {
        let indexes = entity.layout.indexes
        guard !indexes.isEmpty else { return nil }
        var conjuncts: [FetchPredicate] = []
        if let predicate = request.predicate { flatten(predicate, into: &conjuncts) }
        // By attribute position: a plan looks attributes up by the index's positions, with no
        // hashing of names.
        var constraints = Constraints()
        for conjunct in conjuncts { add(conjunct, entity, to: &constraints) }

        var best: (plan: IndexPlan, score: Int)? = nil
        for index in indexes {
            guard let candidate = plan(index, constraints, conjuncts.count, request) else { continue }
            if candidate.score > (best?.score ?? 0) { best = candidate }
        }
        if let best { return best.plan }
        // No constrained index: a sort with a limit can still read just the first entries.
        guard let first = request.sortDescriptors.first, request.fetchLimit != nil,
              let index = indexes.first(where: { $0.attributeNames[0] == first.attribute }) else { return nil }
        return IndexPlan(
            index: index, ranges: [KeyRange(lower: [], upper: nil)], exact: conjuncts.isEmpty,
            order: (first.ascending, 1), constrained: [])
    }

    // MARK: - Constraints

    /// What the indexable conjuncts say of one attribute.
    private struct Constraint {
        var points: [AttributeValue]? = nil
        var pointConjuncts = 0
        var lower: (value: AttributeValue, inclusive: Bool)? = nil
        var upper: (value: AttributeValue, inclusive: Bool)? = nil
        var rangeConjuncts = 0
    }

    /// The constraints by attribute position: a predicate constrains few attributes, so a
    /// short list searched in order, not a table sized for every attribute.
    private struct Constraints {
        private var held: [(position: Int, constraint: Constraint)] = []

        subscript(position: Int) -> Constraint? {
            get { held.first { $0.position == position }?.constraint }
            set {
                if let index = held.firstIndex(where: { $0.position == position }) {
                    if let newValue { held[index].constraint = newValue } else { held.remove(at: index) }
                } else if let newValue {
                    held.append((position, newValue))
                }
            }
        }
    }

    private static func flatten(_ predicate: FetchPredicate, into conjuncts: inout [FetchPredicate]) {
        if case .and(let parts) = predicate {
            for part in parts { flatten(part, into: &conjuncts) }
        } else {
            conjuncts.append(predicate)
        }
    }

    /// Whether `value` can be looked up in an index on an attribute of `type`: its own type (no
    /// int/double mixing, which the encoding keeps apart), or null for equality; never NaN.
    private static func indexable(_ value: AttributeValue, _ type: AttributeType, allowNull: Bool) -> Bool {
        switch value {
        case .null: return allowNull
        case .double(let number): return type == .double && !number.isNaN
        case .date(let date): return type == .date && !date.timeIntervalSinceReferenceDate.isNaN
        default: return type.accepts(value)
        }
    }

    private static func add(_ conjunct: FetchPredicate, _ entity: EntityDescription, to constraints: inout Constraints) {
        switch conjunct {
        case let .compare(attribute, comparison, constant):
            guard let position = entity.layout.index(of: attribute) else { return }
            let type = entity.layout.attributes[position].type
            var constraint = constraints[position] ?? Constraint()
            switch comparison {
            case .equal:
                guard indexable(constant, type, allowNull: true), constraint.points == nil else { return }
                constraint.points = [constant]
                constraint.pointConjuncts += 1
            case .lessThan, .lessThanOrEqual:
                guard indexable(constant, type, allowNull: false) else { return }
                let bound = (constant, comparison == .lessThanOrEqual)
                if constraint.upper.map({ tighter(bound, than: $0, upper: true) }) ?? true { constraint.upper = bound }
                constraint.rangeConjuncts += 1
            case .greaterThan, .greaterThanOrEqual:
                guard indexable(constant, type, allowNull: false) else { return }
                let bound = (constant, comparison == .greaterThanOrEqual)
                if constraint.lower.map({ tighter(bound, than: $0, upper: false) }) ?? true { constraint.lower = bound }
                constraint.rangeConjuncts += 1
            case .notEqual:
                return
            }
            constraints[position] = constraint
        case let .isIn(attribute, constants):
            guard let position = entity.layout.index(of: attribute) else { return }
            let type = entity.layout.attributes[position].type
            guard constants.allSatisfy({ indexable($0, type, allowNull: true) }) else { return }
            var constraint = constraints[position] ?? Constraint()
            guard constraint.points == nil else { return }
            constraint.points = constants
            constraint.pointConjuncts += 1
            constraints[position] = constraint
        default:
            return
        }
    }

    private static func tighter(
        _ bound: (value: AttributeValue, inclusive: Bool), than other: (value: AttributeValue, inclusive: Bool), upper: Bool
    ) -> Bool {
        let order = AttributeOrder.compare(bound.value, other.value) ?? 0
        if order == 0 { return !bound.inclusive }
        return upper ? order < 0 : order > 0
    }

    // MARK: - Ranges

    /// Most key ranges one plan reads (an IN of an IN …): more is left to a scan.
    private static let maxRanges = 1024

    private static func plan(
        _ index: IndexLayout, _ constraints: Constraints, _ conjunctCount: Int, _ request: FetchRequest
    ) -> (plan: IndexPlan, score: Int)? {
        /// What the predicate says of the index's attribute at `position`.
        func heldConstraint(_ position: Int) -> Constraint? {
            let attribute = index.positions[position]
            return attribute >= 0 ? constraints[attribute] : nil
        }
        // An index whose first attribute the predicate does not hold to points or a range
        // scores 0 below: say so before building its prefixes.
        guard let leading = heldConstraint(0), leading.points != nil || leading.rangeConjuncts > 0 else {
            return nil
        }
        let cap = index.contentCap
        var prefixes: [[UInt8]] = [[]]
        var complete = true
        var consumed = 0
        var conditions: [Condition] = []
        var position = 0
        // Leading attributes held to points: every combination is one prefix.
        while position < index.attributeNames.count, let held = heldConstraint(position), let points = held.points {
            let name = index.attributeNames[position]
            if points.count == 1 {
                // One point (`==`, the usual lookup) extends every prefix in place: no list of
                // encodings to combine.
                for prefix in prefixes.indices where !IndexKeyEncoding.append(points[0], to: &prefixes[prefix], cap: cap) {
                    complete = false
                }
                consumed += held.pointConjuncts
                conditions.append(.points(name, points))
                position += 1
                continue
            }
            var encoded: [[UInt8]] = []
            for point in points {
                var bytes: [UInt8] = []
                if !IndexKeyEncoding.append(point, to: &bytes, cap: cap) { complete = false }
                encoded.append(bytes)
            }
            if encoded.count > 1 { encoded = Array(Set(encoded)).sorted { $0.lexicographicallyPrecedes($1) } }
            guard prefixes.count * max(encoded.count, 1) <= maxRanges else { break }
            prefixes = prefixes.flatMap { prefix in encoded.map { prefix + $0 } }
            consumed += held.pointConjuncts
            conditions.append(.points(name, points))
            position += 1
        }
        var ranges: [KeyRange] = []
        var score = 2 * position
        if position < index.attributeNames.count, let constraint = heldConstraint(position),
           constraint.points == nil, constraint.rangeConjuncts > 0 {
            let name = index.attributeNames[position]
            let tag = IndexKeyEncoding.tag(of: index.types[position])
            var lowerBytes: [UInt8] = [tag], lowerInclusive = true
            var upperBytes: [UInt8]? = nil, upperInclusive = true
            if let lower = constraint.lower {
                lowerBytes = []
                if !IndexKeyEncoding.append(lower.value, to: &lowerBytes, cap: cap) { complete = false; lowerInclusive = true } else { lowerInclusive = lower.inclusive }
            }
            if let upper = constraint.upper {
                var bytes: [UInt8] = []
                if !IndexKeyEncoding.append(upper.value, to: &bytes, cap: cap) { complete = false; upperInclusive = true } else { upperInclusive = upper.inclusive }
                upperBytes = bytes
            } else if index.types[position] == .double || index.types[position] == .date {
                // Up to +infinity: NaN, above it in the encoding, is greater than nothing.
                var bytes: [UInt8] = []
                IndexKeyEncoding.append(index.types[position] == .double ? .double(.infinity) : .date(Date(timeIntervalSinceReferenceDate: .infinity)), to: &bytes, cap: cap)
                upperBytes = bytes
            }
            for prefix in prefixes {
                let lower = lowerInclusive ? prefix + lowerBytes : (IndexKeyEncoding.successor(ofPrefix: prefix + lowerBytes) ?? [])
                let upper: [UInt8]? = upperBytes.map { upperInclusive ? IndexKeyEncoding.successor(ofPrefix: prefix + $0) : prefix + $0 }
                    ?? IndexKeyEncoding.successor(ofPrefix: prefix + [tag])
                if let upper, !lower.lexicographicallyPrecedes(upper) { continue }  // empty
                ranges.append(KeyRange(lower: lower, upper: upper))
            }
            consumed += constraint.rangeConjuncts
            conditions.append(.range(name, lower: constraint.lower, upper: constraint.upper))
            score += 1
            position += 1
        } else {
            ranges = prefixes.map { KeyRange(lower: $0, upper: $0.isEmpty ? nil : IndexKeyEncoding.successor(ofPrefix: $0)) }
        }
        guard score > 0 else { return nil }
        // A sort on the attribute after the leading points, one range: walk in sort order.
        var order: (ascending: Bool, sortValues: Int)? = nil
        let pointCount = score / 2
        if request.fetchLimit != nil, let first = request.sortDescriptors.first, prefixes.count == 1,
           pointCount < index.attributeNames.count, index.attributeNames[pointCount] == first.attribute {
            order = (first.ascending, pointCount + 1)
        }
        return (IndexPlan(index: index, ranges: ranges, exact: complete && consumed == conjunctCount,
                          order: order, constrained: conditions), score)
    }
}
