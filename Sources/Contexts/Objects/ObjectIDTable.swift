/// A dictionary by object ID for the context's own tables (its registry, its temporary aliases,
/// a merge's records read ahead). Its `Key` hashes a permanent ID with the standard library's
/// one-shot hash of the primary key, no `Hasher` per lookup; that witness is internal (an
/// internal type's may be), so the public `ObjectID` keeps `hash(into:)` only (`package` for its test).
///
/// Relies on: `Key` hashes the identity only, as `ObjectID.hash(into:)` does, so equal IDs meet
/// here as in a `Set<ObjectID>`. Pinned by `ContainedTricksTests.theContextsIDTableFindsEqualIDsAsASetDoes`.
package struct ObjectIDTable<Value> {
    /// An ID as the table's key.
    package struct Key: Hashable {
        package let id: ObjectID

        package init(id: ObjectID) { self.id = id }

        package static func == (lhs: Key, rhs: Key) -> Bool { lhs.id == rhs.id }

        package func hash(into hasher: inout Hasher) { id.hash(into: &hasher) }

        /// What Dictionary calls: for a permanent ID the seeded one-shot hash of its key, no
        /// `Hasher`; equal IDs hash equally, as with `hash(into:)`.
        package func _rawHashValue(seed: Int) -> Int {
            switch id.identity {
            case .permanent(let key): return key._rawHashValue(seed: seed)
            case let .temporary(high, low):
                var hasher = Hasher()
                hasher.combine(seed)
                hasher.combine(high)
                hasher.combine(low)
                return hasher.finalize()
            }
        }
    }

    private var storage: [Key: Value] = [:]

    package init() {}

    package subscript(id: ObjectID) -> Value? {
        get { storage[Key(id: id)] }
        set { storage[Key(id: id)] = newValue }
    }

    package var isEmpty: Bool { storage.isEmpty }
    package var count: Int { storage.count }
    package var values: Dictionary<Key, Value>.Values { storage.values }

    package mutating func reserveCapacity(_ minimumCapacity: Int) { storage.reserveCapacity(minimumCapacity) }
    package mutating func removeAll() { storage.removeAll() }
}

extension ObjectIDTable: Sendable where Value: Sendable {}
