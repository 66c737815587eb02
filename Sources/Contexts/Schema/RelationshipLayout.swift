/// One relationship of an entity, resolved once.
///
/// A to-one is stored as a property of its object's record, at `storagePosition` among the
/// layout's attributes: the destination's object ID URI as a string, or null. So it is
/// versioned, conflict-checked, merged and pushed to parents exactly like an attribute. A
/// to-many stores nothing of its own: its members are the destination objects whose inverse
/// to-one holds the owner's ID, read through the system index on that to-one.
///
/// `Sendable`: immutable.
struct RelationshipLayout: Sendable, Hashable {
    let description: RelationshipDescription
    /// The to-one's position among the layout's attributes; nil for a to-many.
    let storagePosition: Int?
    /// For a to-one whose inverse is an ordered to-many: the position of its order key (an
    /// optional int after the reference, named `<toOne>#order`: OrderKeys.swift); nil otherwise.
    var orderPosition: Int? = nil

    var name: String { description.name }
    var isToMany: Bool { description.isToMany }
}
