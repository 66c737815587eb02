/// One end of a many-to-many pair (a to-many whose inverse is a to-many), resolved by ``Schema``.
///
/// The fact is the set of links, stored as entries of two tables, one per end
/// (`link:<Entity>:<relationship>`, StorageMapping.swift): the link between `a` and `b` is the key
/// a's primary key + b's in `linkTable` and b's + a's in `inverseLinkTable`, both with an empty
/// value, written unversioned in the commit that writes (and version-checks) both ends' records.
/// So an end's members are one range of its table, and adding one link writes two entries and two
/// records, whatever the number of members.
///
/// An **ordered** end (`isOrdered` on its relationship) keeps its own order of its members: each
/// link's value in `linkTable` is the link's order key at this end (OrderKeys.swift), and
/// `orderTable` holds one entry per placed link, keyed by owner, order key and member, so the
/// owner's last key is one entry away and an append, an insert or a move writes one link's
/// entries whatever the number of members (ContextLinks+Order.swift). `Sendable`: immutable.
struct ManyToManyEnd: Sendable, Hashable {
    /// The relationship's name.
    let name: String
    /// The entity the relationship belongs to.
    let entity: String
    /// The destination entity's name.
    let destination: String
    /// The inverse's name on the destination.
    let inverse: String
    /// What deleting an object of `entity` does to its members.
    let deleteRule: RelationshipDescription.DeleteRule
    /// This end's table: keys of `entity` primary key + `destination` primary key.
    let linkTable: String
    /// The inverse end's table (the same table for a relationship that is its own inverse).
    let inverseLinkTable: String
    /// This end's order entries when the end is ordered (`order:<Entity>:<relationship>`); nil otherwise.
    var orderTable: String? = nil

    /// Whether this end keeps its members in order.
    var isOrdered: Bool { orderTable != nil }

    /// The inverse end, as seen from the destination.
    func inverseEnd(_ schema: Schema) -> ManyToManyEnd {
        schema.manyToManyEnd(destination, inverse)!
    }
}
