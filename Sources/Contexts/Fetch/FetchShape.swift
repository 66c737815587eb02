import Foundation
import Policies

/// What of a fetch request decides whether it is valid and which ``PlanTemplate`` it gets: its
/// entity, its predicate's structure (and/or/not, each comparison's attribute and operator, each
/// constant's kind: its type, null or NaN, an IN list's length and kinds), its sort and whether
/// it has a limit. Not the constants' values: requests that differ only in those share a shape.
///
/// A request is matched against a shape by walking both, with no allocation and no hashing
/// (``matches(_:)``): the cache's lookup.
struct FetchShape: Sendable {
    /// One node of the predicate, in preorder.
    private enum Node: Equatable {
        case and(Int)
        case or(Int)
        case not
        case compare(String, FetchPredicate.Operator, kind: UInt8)
        /// The constants' count and the set of their kinds (bit per kind).
        case isIn(String, count: Int, kinds: UInt16)
        /// `.matching` and `.objectIn`: neither validated nor planned.
        case opaque
    }

    /// Shapes larger than this are not cached (an IN of many owners, a long generated `.or`):
    /// matching them would cost about what planning them does.
    static let maxNodes = 32
    static let maxConstants = 64

    let entityName: String
    private let nodes: [Node]
    private let sortDescriptors: [FetchRequest.SortDescriptor]
    private let limited: Bool

    /// The shape of `request`, or nil when it is too large to cache or holds a member count
    /// (which validation refuses once relationship paths are resolved).
    init?(_ request: FetchRequest) {
        var nodes: [Node] = []
        var constants = 0
        if let predicate = request.predicate {
            guard Self.collect(predicate, into: &nodes, constants: &constants) else { return nil }
        }
        entityName = request.entityName
        self.nodes = nodes
        sortDescriptors = request.sortDescriptors
        limited = request.fetchLimit != nil
    }

    private static func collect(_ predicate: FetchPredicate, into nodes: inout [Node], constants: inout Int) -> Bool {
        guard nodes.count < maxNodes else { return false }
        switch predicate {
        case let .compare(attribute, comparison, constant):
            nodes.append(.compare(attribute, comparison, kind: kind(of: constant)))
            constants += 1
        case let .isIn(attribute, list):
            constants += list.count
            guard constants <= maxConstants else { return false }
            nodes.append(.isIn(attribute, count: list.count, kinds: kinds(of: list)))
        case .and(let parts), .or(let parts):
            if case .and = predicate { nodes.append(.and(parts.count)) } else { nodes.append(.or(parts.count)) }
            for part in parts where !collect(part, into: &nodes, constants: &constants) { return false }
        case .not(let part):
            nodes.append(.not)
            return collect(part, into: &nodes, constants: &constants)
        case .matching, .objectIn:
            nodes.append(.opaque)
        case .memberCount:
            return false
        }
        return constants <= maxConstants
    }

    /// A constant's kind: its type, with null and NaN (double or date) apart, since each
    /// decides differently whether an index can serve it.
    @inline(__always)
    static func kind(of value: AttributeValue) -> UInt8 {
        switch value {
        case .null: return 0
        case .bool: return 1
        case .int: return 2
        case .double(let number): return number.isNaN ? 4 : 3
        case .string: return 5
        case .bytes: return 6
        case .date(let date): return date.timeIntervalSinceReferenceDate.isNaN ? 8 : 7
        }
    }

    private static func kinds(of list: [AttributeValue]) -> UInt16 {
        var kinds: UInt16 = 0
        for value in list { kinds |= 1 << UInt16(kind(of: value)) }
        return kinds
    }

    /// Whether `request` has this shape.
    func matches(_ request: FetchRequest) -> Bool {
        guard entityName == request.entityName, limited == (request.fetchLimit != nil),
              sortDescriptors == request.sortDescriptors else { return false }
        guard let predicate = request.predicate else { return nodes.isEmpty }
        var walk = Walk(nodes: nodes)
        return walk.match(predicate) && walk.position == nodes.count
    }

    /// A walk of the nodes beside a predicate (a struct, so its position is no captured
    /// variable checked for exclusive access at run time).
    private struct Walk {
        let nodes: [Node]
        var position = 0

        mutating func match(_ predicate: FetchPredicate) -> Bool {
            guard position < nodes.count else { return false }
            let node = nodes[position]
            position += 1
            switch (predicate, node) {
            case let (.compare(attribute, comparison, constant), .compare(name, expected, kind)):
                return comparison == expected && kind == FetchShape.kind(of: constant) && attribute == name
            case let (.isIn(attribute, list), .isIn(name, count, kinds)):
                return list.count == count && attribute == name && FetchShape.kinds(of: list) == kinds
            case let (.and(parts), .and(count)), let (.or(parts), .or(count)):
                guard parts.count == count else { return false }
                for part in parts where !match(part) { return false }
                return true
            case let (.not(part), .not):
                return match(part)
            case (.matching, .opaque), (.objectIn, .opaque):
                return true
            default:
                return false
            }
        }
    }
}
