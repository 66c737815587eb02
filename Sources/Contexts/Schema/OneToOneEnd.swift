/// One end of a one-to-one pair (a to-one whose inverse is a to-one), resolved by ``Schema``.
///
/// Both ends hold the fact: each object stores its partner's ID URI, and a save keeps the two
/// references equal (ObjectContext+OneToOneRepair.swift). `Sendable`: immutable.
struct OneToOneEnd: Sendable, Hashable {
    /// The relationship's name.
    let name: String
    /// This end's reference among its entity's values.
    let position: Int
    /// The destination entity's name.
    let destination: String
    /// The inverse's name on the destination.
    let inverse: String
    /// The inverse's reference among the destination's values.
    let inversePosition: Int
}
