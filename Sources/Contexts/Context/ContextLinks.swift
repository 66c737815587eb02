/// A context's many-to-many state: the links it changed and not saved yet, and the links it last
/// read (their ancestor), kept by object.
///
/// A link is one fact shared by two ends, so a change is kept at both: the owner's list names the
/// member and the member's list (of the inverse relationship) names the owner, with the same
/// state. A change is relative to what the context saw when it was made (the base then, with the
/// changes before it): adding a link the context sees is nothing, and undoing a change drops it.
///
/// What an end last read (its members' primary keys, as the base held them) is the links'
/// **ancestor** in a conflict (ObjectContext+LinkConflicts.swift): a link the context read and
/// did not change is ours as read, so overwrite can write it back over the store's change.
///
/// An ordered end also keeps **places**: the order keys this context gave links of that end (a
/// new link appended, a link inserted or moved), kept at that end only, since a reorder changes
/// the ordered end alone. A link's place goes with any change of the link itself. What an
/// ordered end read includes its links' keys.
///
/// Each entry holds its object strongly, so the `ObjectIdentifier` it is kept under names that
/// object while the entry exists. Not `Sendable`: kept on its context's queue.
struct ContextLinks {
    /// One changed link, seen from one end.
    struct Change {
        let member: StoredObject
        let linked: Bool
        /// When it was made: lists come out in this order, and both ends share it.
        let order: UInt64
    }

    /// One object's ends: their changes and what they last read, by relationship name.
    private struct ObjectLinks {
        let object: StoredObject
        var changes: [String: [ObjectIdentifier: Change]] = [:]
        var reads: [String: Set<UInt64>] = [:]
        /// The order keys this context gave links of an ordered end, by member.
        var places: [String: [ObjectIdentifier: Place]] = [:]
        /// The highest key given at each end while it has places (an append reads it without
        /// walking them; one whose place went since is passed by a key after it all the same).
        var highestPlaces: [String: Int64] = [:]
        /// The keys of the links an ordered end read (placed ones only), by member primary key.
        var readKeys: [String: [UInt64: Int64]] = [:]

        var isEmpty: Bool { changes.isEmpty && reads.isEmpty && places.isEmpty && readKeys.isEmpty }
    }

    /// A link's order key at an ordered end, given by this context.
    struct Place {
        let member: StoredObject
        let key: Int64
    }

    private var objects: [ObjectIdentifier: ObjectLinks] = [:]
    /// How many changes are kept (each link's counts twice, once per end).
    private var changeCount = 0
    /// How many places are kept.
    private var placeCount = 0
    private var nextOrder: UInt64 = 0

    /// Whether there is no pending change (of a link or of a place).
    var hasNoChanges: Bool { changeCount == 0 && placeCount == 0 }

    /// The pending state of the link from `owner` through `end` to `member`: nil when unchanged.
    func change(_ owner: StoredObject, _ end: ManyToManyEnd, _ member: StoredObject) -> Bool? {
        objects[ObjectIdentifier(owner)]?.changes[end.name]?[ObjectIdentifier(member)]?.linked
    }

    /// The changes of `owner`'s `relationship`, in the order they were made.
    func changes(of owner: StoredObject, _ relationship: String) -> [Change] {
        guard let list = objects[ObjectIdentifier(owner)]?.changes[relationship] else { return [] }
        return list.values.sorted { $0.order < $1.order }
    }

    /// Records that the link is now `linked`, at both ends. `based`: whether the base holds it,
    /// when the changes do not say (nil: unknown). Returns whether anything changed; a change
    /// drops the link's places (the caller places a link it made).
    mutating func set(
        _ owner: StoredObject, _ end: ManyToManyEnd, _ member: StoredObject, linked: Bool, based: Bool?
    ) -> Bool {
        if let pending = change(owner, end, member) {
            if pending == linked { return false }
            // Back to what the base held when the change was made.
            remove(owner, end.name, member)
            remove(member, end.inverse, owner)
            return true
        }
        if based == linked { return false }
        removePlace(owner, end.name, member)
        removePlace(member, end.inverse, owner)
        let order = nextOrder
        nextOrder += 1
        add(Change(member: member, linked: linked, order: order), to: owner, end.name)
        add(Change(member: owner, linked: linked, order: order), to: member, end.inverse)
        return true
    }

    private mutating func add(_ change: Change, to owner: StoredObject, _ relationship: String) {
        let key = ObjectIdentifier(owner)
        if objects[key] == nil { objects[key] = ObjectLinks(object: owner) }
        if objects[key]!.changes[relationship, default: [:]].updateValue(change, forKey: ObjectIdentifier(change.member)) == nil {
            changeCount += 1
        }
    }

    private mutating func remove(_ owner: StoredObject, _ relationship: String, _ member: StoredObject) {
        removePlace(owner, relationship, member)
        let key = ObjectIdentifier(owner)
        guard objects[key]?.changes[relationship]?.removeValue(forKey: ObjectIdentifier(member)) != nil else { return }
        changeCount -= 1
        if objects[key]!.changes[relationship]!.isEmpty { objects[key]!.changes[relationship] = nil }
        if objects[key]!.isEmpty { objects[key] = nil }
    }

    /// Drops the places `object`'s own ordered ends gave.
    mutating func dropPlaces(of object: StoredObject) {
        guard let links = objects[ObjectIdentifier(object)] else { return }
        for (relationship, list) in links.places {
            for place in list.values { removePlace(object, relationship, place.member) }
        }
    }

    /// Drops every change of a link with `object` at either end, and the places `object`'s own
    /// ordered ends gave (`refresh` without merging, an insert deleted before it was saved).
    mutating func dropChanges(involving object: StoredObject) {
        dropPlaces(of: object)
        guard let links = objects[ObjectIdentifier(object)] else { return }
        for (relationship, list) in links.changes {
            let inverse = object.entity.relationship(named: relationship)!.inverse
            for change in list.values {
                remove(change.member, inverse, object)
                remove(object, relationship, change.member)
            }
        }
    }

    /// Every pending change once per link, from one of its ends, in the order they were made.
    func forEachLink(_ body: (StoredObject, String, StoredObject, Bool) throws -> Void) rethrows {
        var all: [(owner: StoredObject, relationship: String, change: Change)] = []
        for links in objects.values {
            for (relationship, list) in links.changes {
                for change in list.values { all.append((links.object, relationship, change)) }
            }
        }
        all.sort { $0.change.order < $1.change.order }
        var seen = Set<UInt64>()
        for (owner, relationship, change) in all where seen.insert(change.order).inserted {
            try body(owner, relationship, change.member, change.linked)
        }
    }

    /// Drops every pending change and place (a save wrote them, or `rollback()`).
    mutating func removeAllChanges() {
        guard changeCount > 0 || placeCount > 0 else { return }
        for key in Array(objects.keys) {
            objects[key]!.changes = [:]
            objects[key]!.places = [:]
            objects[key]!.highestPlaces = [:]
            if objects[key]!.isEmpty { objects[key] = nil }
        }
        changeCount = 0
        placeCount = 0
    }

    // MARK: - Places at ordered ends

    /// The order key this context gave the link from `owner` through `relationship` to `member`; nil when none.
    func place(_ owner: StoredObject, _ relationship: String, _ member: StoredObject) -> Int64? {
        objects[ObjectIdentifier(owner)]?.places[relationship]?[ObjectIdentifier(member)]?.key
    }

    /// The places of `owner`'s `relationship`.
    func places(of owner: StoredObject, _ relationship: String) -> [Place] {
        objects[ObjectIdentifier(owner)]?.places[relationship].map { Array($0.values) } ?? []
    }

    /// At least the highest key among the places of `owner`'s `relationship`; nil when it has none.
    func highestPlace(of owner: StoredObject, _ relationship: String) -> Int64? {
        objects[ObjectIdentifier(owner)]?.highestPlaces[relationship]
    }

    /// Gives the link from `owner` through `relationship` to `member` the order key `key` at that end.
    mutating func setPlace(_ owner: StoredObject, _ relationship: String, _ member: StoredObject, key: Int64) {
        let id = ObjectIdentifier(owner)
        if objects[id] == nil { objects[id] = ObjectLinks(object: owner) }
        if objects[id]!.places[relationship, default: [:]].updateValue(Place(member: member, key: key), forKey: ObjectIdentifier(member)) == nil {
            placeCount += 1
        }
        objects[id]!.highestPlaces[relationship] = max(key, objects[id]!.highestPlaces[relationship] ?? .min)
    }

    private mutating func removePlace(_ owner: StoredObject, _ relationship: String, _ member: StoredObject) {
        let key = ObjectIdentifier(owner)
        guard objects[key]?.places[relationship]?.removeValue(forKey: ObjectIdentifier(member)) != nil else { return }
        placeCount -= 1
        if objects[key]!.places[relationship]!.isEmpty {
            objects[key]!.places[relationship] = nil
            objects[key]!.highestPlaces[relationship] = nil
        }
        if objects[key]!.isEmpty { objects[key] = nil }
    }

    /// Every place, with its owner and relationship.
    func forEachPlace(_ body: (StoredObject, String, StoredObject, Int64) throws -> Void) rethrows {
        for links in objects.values {
            for (relationship, list) in links.places {
                for place in list.values { try body(links.object, relationship, place.member, place.key) }
            }
        }
    }

    // MARK: - What ends last read

    /// The members `owner`'s `relationship` last read, by primary key; nil when unknown.
    func readMembers(of owner: StoredObject, _ relationship: String) -> Set<UInt64>? {
        objects[ObjectIdentifier(owner)]?.reads[relationship]
    }

    /// The key `owner`'s ordered `relationship` last read for the link to `member`; nil when
    /// unknown or not placed.
    func readKey(of owner: StoredObject, _ relationship: String, member: UInt64) -> Int64? {
        objects[ObjectIdentifier(owner)]?.readKeys[relationship]?[member]
    }

    /// Keeps what `owner`'s `relationship` read (`keys`: the placed links' keys, for an ordered end).
    mutating func noteRead(_ members: Set<UInt64>, keys: [UInt64: Int64] = [:], of owner: StoredObject, _ relationship: String) {
        let key = ObjectIdentifier(owner)
        if objects[key] == nil { objects[key] = ObjectLinks(object: owner) }
        objects[key]!.reads[relationship] = members
        objects[key]!.readKeys[relationship] = keys.isEmpty ? nil : keys
    }

    /// Updates one link of an end whose members are known (a point read, a saved write), with
    /// its order key at an ordered end.
    mutating func noteRead(linked: Bool, member: UInt64, orderKey: Int64? = nil, of owner: StoredObject, _ relationship: String) {
        let key = ObjectIdentifier(owner)
        guard objects[key]?.reads[relationship] != nil else { return }
        if linked { objects[key]!.reads[relationship]!.insert(member) } else { objects[key]!.reads[relationship]!.remove(member) }
        if linked, let orderKey {
            objects[key]!.readKeys[relationship, default: [:]][member] = orderKey
        } else if objects[key]!.readKeys[relationship]?.removeValue(forKey: member) != nil,
                  objects[key]!.readKeys[relationship]!.isEmpty {
            objects[key]!.readKeys[relationship] = nil
        }
    }

    /// Forgets what `object`'s ends read (refreshed, merged, forgotten): its links' ancestor is
    /// the store's from now on.
    mutating func forgetReads(of object: StoredObject) {
        let key = ObjectIdentifier(object)
        guard objects[key]?.reads.isEmpty == false else { return }
        objects[key]!.reads = [:]
        objects[key]!.readKeys = [:]
        if objects[key]!.isEmpty { objects[key] = nil }
    }

    /// Forgets every read.
    mutating func forgetAllReads() {
        for key in Array(objects.keys) {
            objects[key]!.reads = [:]
            objects[key]!.readKeys = [:]
            if objects[key]!.isEmpty { objects[key] = nil }
        }
    }
}
