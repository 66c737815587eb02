/// The order of an ordered to-many's members: each member keeps an order key, an int stored
/// beside its to-one (the hidden attribute `<toOne>#order`), and the to-one's system index is
/// on (to-one, order key), so an owner's members are one range of it, in order.
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
}
