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

        var isEmpty: Bool { changes.isEmpty && reads.isEmpty }
    }

    private var objects: [ObjectIdentifier: ObjectLinks] = [:]
    /// How many changes are kept (each link's counts twice, once per end).
    private var changeCount = 0
    private var nextOrder: UInt64 = 0

    /// Whether there is no pending change.
    var hasNoChanges: Bool { changeCount == 0 }

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
    /// when the changes do not say (nil: unknown). Returns whether anything changed.
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
        let key = ObjectIdentifier(owner)
        guard objects[key]?.changes[relationship]?.removeValue(forKey: ObjectIdentifier(member)) != nil else { return }
        changeCount -= 1
        if objects[key]!.changes[relationship]!.isEmpty { objects[key]!.changes[relationship] = nil }
        if objects[key]!.isEmpty { objects[key] = nil }
    }

    /// Drops every change of a link with `object` at either end (`refresh` without merging, an
    /// insert deleted before it was saved).
    mutating func dropChanges(involving object: StoredObject) {
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

    /// Drops every pending change (a save wrote them, or `rollback()`).
    mutating func removeAllChanges() {
        guard changeCount > 0 else { return }
        for key in Array(objects.keys) {
            objects[key]!.changes = [:]
            if objects[key]!.isEmpty { objects[key] = nil }
        }
        changeCount = 0
    }

    // MARK: - What ends last read

    /// The members `owner`'s `relationship` last read, by primary key; nil when unknown.
    func readMembers(of owner: StoredObject, _ relationship: String) -> Set<UInt64>? {
        objects[ObjectIdentifier(owner)]?.reads[relationship]
    }

    /// Keeps what `owner`'s `relationship` read.
    mutating func noteRead(_ members: Set<UInt64>, of owner: StoredObject, _ relationship: String) {
        let key = ObjectIdentifier(owner)
        if objects[key] == nil { objects[key] = ObjectLinks(object: owner) }
        objects[key]!.reads[relationship] = members
    }

    /// Updates one link of an end whose members are known (a point read, a saved write).
    mutating func noteRead(linked: Bool, member: UInt64, of owner: StoredObject, _ relationship: String) {
        let key = ObjectIdentifier(owner)
        guard objects[key]?.reads[relationship] != nil else { return }
        if linked { objects[key]!.reads[relationship]!.insert(member) } else { objects[key]!.reads[relationship]!.remove(member) }
    }

    /// Forgets what `object`'s ends read (refreshed, merged, forgotten): its links' ancestor is
    /// the store's from now on.
    mutating func forgetReads(of object: StoredObject) {
        let key = ObjectIdentifier(object)
        guard objects[key]?.reads.isEmpty == false else { return }
        objects[key]!.reads = [:]
        if objects[key]!.isEmpty { objects[key] = nil }
    }

    /// Forgets every read.
    mutating func forgetAllReads() {
        for key in Array(objects.keys) {
            objects[key]!.reads = [:]
            if objects[key]!.isEmpty { objects[key] = nil }
        }
    }
}
