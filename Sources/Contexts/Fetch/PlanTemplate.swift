import Foundation
import Policies

/// Everything of an ``IndexPlan`` that a request's shape decides (``FetchShape``): which index,
/// which conjuncts hold its leading attributes to points and the next one to a range, whether
/// they are the whole predicate, and whether the walk can follow the sort. ``bind(_:)`` turns
/// it into key ranges with one request's constants, so one template serves every request of a
/// shape (``FetchPlanCache``), as a prepared statement serves its bindings.
///
/// Invariant: the choice reads the constants only through their kinds (null, NaN, type) and an
/// IN list's length, which the shape holds, so a template made for one request binds any
/// request of its shape to the plan made afresh for it. Pinned by
/// `FetchPlanCacheTests.aTemplateBindsEveryRequestOfItsShapeAsAFreshPlan`.
///
/// `Sendable`: immutable.
final class PlanTemplate: Sendable {
    /// An attribute held to points by a conjunct, `==` or `IN`.
    struct PointSlot {
        let conjunct: Int
        let name: String
    }

    /// The attribute after the points, held to a range by these conjuncts (`>`, `>=` below and
    /// `<`, `<=` above); the tightest bound of each side is the one bound.
    struct RangeSlot {
        let name: String
        let type: AttributeType
        let lower: [Int]
        let upper: [Int]
    }

    let index: IndexLayout
    let points: [PointSlot]
    let range: RangeSlot?
    /// The slots hold every conjunct of the predicate: the plan is exact unless a value is cut
    /// at the index's cap.
    let holdsEveryConjunct: Bool
    /// Walking the range gives the first sort descriptor's order, when the points bind to one
    /// prefix.
    let order: (ascending: Bool, sortValues: Int)?
    /// The ranges of a template without slots (a whole index read in sort order), made once.
    private let wholeIndex: [IndexPlan.KeyRange]

    private init(
        index: IndexLayout, points: [PointSlot], range: RangeSlot?, holdsEveryConjunct: Bool,
        order: (ascending: Bool, sortValues: Int)?
    ) {
        self.index = index
        self.points = points
        self.range = range
        self.holdsEveryConjunct = holdsEveryConjunct
        self.order = order
        wholeIndex = points.isEmpty && range == nil ? [IndexPlan.KeyRange(lower: [], upper: nil)] : []
    }

    // MARK: - Choosing the index

    /// The template for `request` on `entity`, or nil when no index helps (a scan).
    /// The request must be valid (``FetchRequest/validate(against:)``).
    static func make(for request: FetchRequest, entity: EntityDescription) -> PlanTemplate? {
        let indexes = entity.layout.indexes
        guard !indexes.isEmpty else { return nil }
        var conjuncts: [FetchPredicate] = []
        if let predicate = request.predicate { flatten(predicate, into: &conjuncts) }
        // By attribute position: a plan looks attributes up by the index's positions, with no
        // hashing of names.
        var constraints = Constraints()
        for (number, conjunct) in conjuncts.enumerated() { add(conjunct, number, entity, to: &constraints) }

        var best: (template: PlanTemplate, score: Int)? = nil
        for index in indexes {
            guard let candidate = template(index, constraints, conjuncts.count, request) else { continue }
            if candidate.score > (best?.score ?? 0) { best = candidate }
        }
        if let best { return best.template }
        // No constrained index: a sort with a limit can still read just the first entries.
        guard let first = request.sortDescriptors.first, request.fetchLimit != nil,
              let index = indexes.first(where: { $0.attributeNames[0] == first.attribute }) else { return nil }
        return PlanTemplate(index: index, points: [], range: nil, holdsEveryConjunct: conjuncts.isEmpty, order: (first.ascending, 1))
    }

    /// What the indexable conjuncts say of one attribute, as conjunct numbers.
    private struct Constraint {
        var pointConjunct: Int? = nil
        /// The points' count (an IN list's length, equal constants not yet merged).
        var pointCount = 0
        var lower: [Int] = []
        var upper: [Int] = []
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

    static func flatten(_ predicate: FetchPredicate, into conjuncts: inout [FetchPredicate]) {
        if case .and(let parts) = predicate {
            for part in parts { flatten(part, into: &conjuncts) }
        } else {
            conjuncts.append(predicate)
        }
    }

    /// Whether `value` can be looked up in an index on an attribute of `type`: its own type (no
    /// int/double mixing, which the encoding keeps apart), or null for equality; never NaN.
    /// (A shape's constant kinds decide it.)
    private static func indexable(_ value: AttributeValue, _ type: AttributeType, allowNull: Bool) -> Bool {
        switch value {
        case .null: return allowNull
        case .double(let number): return type == .double && !number.isNaN
        case .date(let date): return type == .date && !date.timeIntervalSinceReferenceDate.isNaN
        default: return type.accepts(value)
        }
    }

    private static func add(_ conjunct: FetchPredicate, _ number: Int, _ entity: EntityDescription, to constraints: inout Constraints) {
        switch conjunct {
        case let .compare(attribute, comparison, constant):
            guard let position = entity.layout.index(of: attribute) else { return }
            let type = entity.layout.attributes[position].type
            var constraint = constraints[position] ?? Constraint()
            switch comparison {
            case .equal:
                guard indexable(constant, type, allowNull: true), constraint.pointConjunct == nil else { return }
                constraint.pointConjunct = number
                constraint.pointCount = 1
            case .lessThan, .lessThanOrEqual:
                guard indexable(constant, type, allowNull: false) else { return }
                constraint.upper.append(number)
            case .greaterThan, .greaterThanOrEqual:
                guard indexable(constant, type, allowNull: false) else { return }
                constraint.lower.append(number)
            case .notEqual:
                return
            }
            constraints[position] = constraint
        case let .isIn(attribute, constants):
            guard let position = entity.layout.index(of: attribute) else { return }
            let type = entity.layout.attributes[position].type
            guard constants.allSatisfy({ indexable($0, type, allowNull: true) }) else { return }
            var constraint = constraints[position] ?? Constraint()
            guard constraint.pointConjunct == nil else { return }
            constraint.pointConjunct = number
            constraint.pointCount = constants.count
            constraints[position] = constraint
        default:
            return
        }
    }

    /// Most key ranges one plan reads (an IN of an IN …): more is left to a scan. Counted
    /// from the lists' lengths, so a shape decides it.
    private static let maxRanges = 1024

    private static func template(
        _ index: IndexLayout, _ constraints: Constraints, _ conjunctCount: Int, _ request: FetchRequest
    ) -> (template: PlanTemplate, score: Int)? {
        /// What the predicate says of the index's attribute at `position`.
        func heldConstraint(_ position: Int) -> Constraint? {
            let attribute = index.positions[position]
            return attribute >= 0 ? constraints[attribute] : nil
        }
        guard let leading = heldConstraint(0), leading.pointConjunct != nil || !leading.lower.isEmpty || !leading.upper.isEmpty else {
            return nil
        }
        var points: [PointSlot] = []
        var prefixes = 1
        var consumed = 0
        var position = 0
        // Leading attributes held to points: every combination is one prefix.
        while position < index.attributeNames.count, let held = heldConstraint(position), let conjunct = held.pointConjunct {
            if held.pointCount != 1 {
                guard prefixes * max(held.pointCount, 1) <= maxRanges else { break }
                prefixes *= held.pointCount
            }
            points.append(PointSlot(conjunct: conjunct, name: index.attributeNames[position]))
            consumed += 1
            position += 1
        }
        var range: RangeSlot? = nil
        var score = 2 * position
        if position < index.attributeNames.count, let constraint = heldConstraint(position),
           constraint.pointConjunct == nil, !constraint.lower.isEmpty || !constraint.upper.isEmpty {
            range = RangeSlot(name: index.attributeNames[position], type: index.types[position],
                              lower: constraint.lower, upper: constraint.upper)
            consumed += constraint.lower.count + constraint.upper.count
            score += 1
        }
        guard score > 0 else { return nil }
        // A sort on the attribute after the leading points: walk in sort order.
        var order: (ascending: Bool, sortValues: Int)? = nil
        if request.fetchLimit != nil, let first = request.sortDescriptors.first,
           points.count < index.attributeNames.count, index.attributeNames[points.count] == first.attribute {
            order = (first.ascending, points.count + 1)
        }
        return (PlanTemplate(index: index, points: points, range: range, holdsEveryConjunct: consumed == conjunctCount,
                             order: order), score)
    }

    // MARK: - Binding the constants

    /// The plan for a request of this template's shape whose predicate is `predicate`.
    func bind(_ predicate: FetchPredicate?) -> IndexPlan {
        var explanation: [IndexPlan.Condition]? = nil
        return bind(predicate, explaining: &explanation)
    }

    /// The conditions of `bind(predicate)`'s plan, for explanations.
    func conditions(_ predicate: FetchPredicate?) -> [IndexPlan.Condition] {
        var explanation: [IndexPlan.Condition]? = []
        _ = bind(predicate, explaining: &explanation)
        return explanation ?? []
    }

    private func bind(_ predicate: FetchPredicate?, explaining: inout [IndexPlan.Condition]?) -> IndexPlan {
        if points.isEmpty && range == nil {
            return IndexPlan(template: self, ranges: wholeIndex, exact: holdsEveryConjunct, order: order)
        }
        let conjuncts = Conjuncts(predicate)
        let cap = index.contentCap
        var complete = true
        // One prefix while every slot binds one point (`==`, the usual lookup), extended in
        // place; a list of them once an IN binds several.
        var prefix: [UInt8] = []
        var prefixes: [[UInt8]]? = nil
        for slot in points {
            let single: AttributeValue?
            let list: [AttributeValue]
            switch conjuncts[slot.conjunct] {
            case let .compare(_, _, constant):
                single = constant
                list = []
            case let .isIn(_, constants):
                single = constants.count == 1 ? constants[0] : nil
                list = constants
            default:
                preconditionFailure("a point slot's conjunct is == or IN")
            }
            if let single {
                if prefixes == nil {
                    if !IndexKeyEncoding.append(single, to: &prefix, cap: cap) { complete = false }
                } else {
                    for position in prefixes!.indices where !IndexKeyEncoding.append(single, to: &prefixes![position], cap: cap) {
                        complete = false
                    }
                }
                explaining?.append(.points(slot.name, [single]))
                continue
            }
            var encoded: [[UInt8]] = []
            for point in list {
                var bytes: [UInt8] = []
                if !IndexKeyEncoding.append(point, to: &bytes, cap: cap) { complete = false }
                encoded.append(bytes)
            }
            if encoded.count > 1 { encoded = Array(Set(encoded)).sorted { $0.lexicographicallyPrecedes($1) } }
            prefixes = (prefixes ?? [prefix]).flatMap { prefix in encoded.map { prefix + $0 } }
            explaining?.append(.points(slot.name, list))
        }
        var ranges: [IndexPlan.KeyRange] = []
        if let range {
            complete = bindRange(range, conjuncts, prefixes: prefixes ?? [prefix], into: &ranges, explaining: &explaining) && complete
        } else if let prefixes {
            ranges = prefixes.map { IndexPlan.KeyRange(lower: $0, upper: $0.isEmpty ? nil : IndexKeyEncoding.successor(ofPrefix: $0)) }
        } else {
            ranges = [IndexPlan.KeyRange(lower: prefix, upper: prefix.isEmpty ? nil : IndexKeyEncoding.successor(ofPrefix: prefix))]
        }
        return IndexPlan(template: self, ranges: ranges, exact: complete && holdsEveryConjunct,
                         order: (prefixes?.count ?? 1) == 1 ? order : nil)
    }

    /// The ranges of `range` after each prefix, empty ones left out; false when a bound was
    /// cut at the cap.
    private func bindRange(
        _ range: RangeSlot, _ conjuncts: Conjuncts, prefixes: [[UInt8]], into ranges: inout [IndexPlan.KeyRange],
        explaining: inout [IndexPlan.Condition]?
    ) -> Bool {
        var lower: (value: AttributeValue, inclusive: Bool)? = nil
        for number in range.lower {
            guard case let .compare(_, comparison, constant) = conjuncts[number] else { continue }
            let bound = (constant, comparison == .greaterThanOrEqual)
            if lower.map({ Self.tighter(bound, than: $0, upper: false) }) ?? true { lower = bound }
        }
        var upper: (value: AttributeValue, inclusive: Bool)? = nil
        for number in range.upper {
            guard case let .compare(_, comparison, constant) = conjuncts[number] else { continue }
            let bound = (constant, comparison == .lessThanOrEqual)
            if upper.map({ Self.tighter(bound, than: $0, upper: true) }) ?? true { upper = bound }
        }
        let cap = index.contentCap
        var complete = true
        let tag = IndexKeyEncoding.tag(of: range.type)
        var lowerBytes: [UInt8] = [tag], lowerInclusive = true
        var upperBytes: [UInt8]? = nil, upperInclusive = true
        if let lower {
            lowerBytes = []
            if !IndexKeyEncoding.append(lower.value, to: &lowerBytes, cap: cap) { complete = false; lowerInclusive = true } else { lowerInclusive = lower.inclusive }
        }
        if let upper {
            var bytes: [UInt8] = []
            if !IndexKeyEncoding.append(upper.value, to: &bytes, cap: cap) { complete = false; upperInclusive = true } else { upperInclusive = upper.inclusive }
            upperBytes = bytes
        } else if range.type == .double || range.type == .date {
            // Up to +infinity: NaN, above it in the encoding, is greater than nothing.
            var bytes: [UInt8] = []
            IndexKeyEncoding.append(range.type == .double ? .double(.infinity) : .date(Date(timeIntervalSinceReferenceDate: .infinity)), to: &bytes, cap: cap)
            upperBytes = bytes
        }
        for prefix in prefixes {
            let start = lowerInclusive ? prefix + lowerBytes : (IndexKeyEncoding.successor(ofPrefix: prefix + lowerBytes) ?? [])
            let end: [UInt8]? = upperBytes.map { upperInclusive ? IndexKeyEncoding.successor(ofPrefix: prefix + $0) : prefix + $0 }
                ?? IndexKeyEncoding.successor(ofPrefix: prefix + [tag])
            if let end, !start.lexicographicallyPrecedes(end) { continue }  // empty
            ranges.append(IndexPlan.KeyRange(lower: start, upper: end))
        }
        explaining?.append(.range(range.name, lower: lower, upper: upper))
        return complete
    }

    private static func tighter(
        _ bound: (value: AttributeValue, inclusive: Bool), than other: (value: AttributeValue, inclusive: Bool), upper: Bool
    ) -> Bool {
        let order = AttributeOrder.compare(bound.value, other.value) ?? 0
        if order == 0 { return !bound.inclusive }
        return upper ? order < 0 : order > 0
    }

    /// A predicate's conjuncts by number, as `make` numbered them: flattened only when it is
    /// an `.and`.
    private struct Conjuncts {
        private let single: FetchPredicate?
        private let flattened: [FetchPredicate]

        init(_ predicate: FetchPredicate?) {
            if let predicate, case .and = predicate {
                var conjuncts: [FetchPredicate] = []
                PlanTemplate.flatten(predicate, into: &conjuncts)
                single = nil
                flattened = conjuncts
            } else {
                single = predicate
                flattened = []
            }
        }

        subscript(number: Int) -> FetchPredicate { single ?? flattened[number] }
    }
}
