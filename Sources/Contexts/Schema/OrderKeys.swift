/// The order of an ordered to-many's members. In a one-to-many each member keeps an order key,
/// an int stored beside its to-one (the hidden attribute `<toOne>#order`), and the to-one's
/// system index is on (to-one, order key), so an owner's members are one range of it, in order.
/// An ordered many-to-many end keeps each link's key with the link (ManyToManyEnd.swift). Both
/// choose keys here.
///
/// Keys are gapped: a member added at the end takes the last key plus `step`, one placed
/// between two takes the key halfway between theirs, so an insert or a move writes the member
/// alone (and its owners). Only when two neighbours' keys are adjacent are the owner's members
/// given fresh keys, `step` apart (every member is written then: after about 20 inserts at one
/// spot). Ties (two contexts placing members in one gap alike) are broken by primary key.
/// A member without a key (added before the to-many was ordered) comes first.
enum OrderKeys {
    /// The distance between neighbours' keys when they are made.
    static let step: Int64 = 1 << 20

    /// The hidden attribute holding a member's key: `#` is in no identifier, so no declared
    /// attribute can take the name.
    static func attributeName(of toOne: String) -> String {
        toOne + "#order"
    }

    /// Whether `name` is such a hidden attribute.
    static func isOrderKey(_ name: String) -> Bool {
        name.hasSuffix("#order")
    }

    /// How a to-many's member fetch sorts: by the members' order key when it is ordered.
    static func sort(_ toMany: RelationshipLayout) -> [FetchRequest.SortDescriptor] {
        toMany.description.isOrdered ? [.ascending(attributeName(of: toMany.description.inverse))] : []
    }

    /// A key after `last` (nil: the first member's).
    static func after(_ last: Int64?) -> Int64 {
        guard let last else { return 0 }
        return last > Int64.max - step ? last : last + step
    }

    /// A key before `first`.
    static func before(_ first: Int64) -> Int64 {
        first < Int64.min + step ? first : first - step
    }

    /// A key strictly between `lower` and `upper`, or nil when they are adjacent (renumber).
    static func between(_ lower: Int64, _ upper: Int64) -> Int64? {
        guard upper > lower else { return nil }
        let (gap, overflow) = upper.subtractingReportingOverflow(lower)
        if overflow { return lower / 2 + upper / 2 }
        return gap >= 2 ? lower + gap / 2 : nil
    }

    /// The key for the member at `index` of a list whose members' keys are `keys` (in list
    /// order, that member's included): after its predecessor's, before its successor's, or
    /// between the two; nil when there is no room (or a neighbour has no key): then the whole
    /// list takes `renumbered` keys.
    static func placing(at index: Int, among keys: [Int64?]) -> Int64? {
        let hasLower = index > 0, hasUpper = index + 1 < keys.count
        let lower = hasLower ? keys[index - 1] : nil, upper = hasUpper ? keys[index + 1] : nil
        let placed: Int64?
        switch (hasLower, hasUpper) {
        case (false, false): placed = 0
        case (true, false): placed = lower.map(after)
        case (false, true): placed = upper.map(before)
        case (true, true): placed = lower.flatMap { lower in upper.flatMap { between(lower, $0) } }
        }
        guard let placed, placed != lower, placed != upper else { return nil }
        return placed
    }

    /// Whether `keys` already give a list its order: every one set, each above the one before.
    static func areIncreasing(_ keys: [Int64?]) -> Bool {
        !keys.contains(nil) && zip(keys, keys.dropFirst()).allSatisfy { $0.0! < $0.1! }
    }

    /// The fresh key of the member at `rank` of a renumbered list.
    static func renumbered(_ rank: Int) -> Int64 {
        Int64(rank) * step
    }
}
