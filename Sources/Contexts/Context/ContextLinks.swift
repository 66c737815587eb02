/// A context's many-to-many state: the links it changed and not saved yet, and the links it last
/// read (their ancestor).
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
/// The lists hold their objects strongly, so an end's `ObjectIdentifier` names it while an
/// entry exists. Not `Sendable`: kept on its context's queue.
struct ContextLinks {
    /// One end of a many-to-many in this context.
    struct End: Hashable {
        let object: ObjectIdentifier
        let relationship: String

        init(_ object: StoredObject, _ relationship: String) {
            self.object = ObjectIdentifier(object)
            self.relationship = relationship
        }
    }

    /// One changed link, seen from one end.
    struct Change {
        let member: StoredObject
        let linked: Bool
        /// When it was made: lists come out in this order.
        let order: UInt64
    }

    /// An end's changes, with the end's object.
    struct EndChanges {
        let owner: StoredObject
        var byMember: [ObjectIdentifier: Change] = [:]
    }

    private(set) var changes: [End: EndChanges] = [:]
    /// The members each end last read from the store, by primary key (root contexts only).
    private var read: [End: (owner: StoredObject, members: Set<UInt64>)] = [:]
    private var nextOrder: UInt64 = 0

    /// Whether there is no pending change.
    var hasNoChanges: Bool { changes.isEmpty }

    /// The pending state of the link from `owner` through `end` to `member`: nil when unchanged.
    func change(_ owner: StoredObject, _ end: ManyToManyEnd, _ member: StoredObject) -> Bool? {
        changes[End(owner, end.name)]?.byMember[ObjectIdentifier(member)]?.linked
    }

    /// The changes of `owner`'s `relationship`, in the order they were made.
    func changes(of owner: StoredObject, _ relationship: String) -> [Change] {
        guard let list = changes[End(owner, relationship)] else { return [] }
        return list.byMember.values.sorted { $0.order < $1.order }
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
        let key = End(owner, relationship)
        if changes[key] == nil { changes[key] = EndChanges(owner: owner) }
        changes[key]!.byMember[ObjectIdentifier(change.member)] = change
    }

    private mutating func remove(_ owner: StoredObject, _ relationship: String, _ member: StoredObject) {
        let key = End(owner, relationship)
        changes[key]?.byMember[ObjectIdentifier(member)] = nil
        if changes[key]?.byMember.isEmpty == true { changes[key] = nil }
    }

    /// Drops every change of a link with `object` at either end (`refresh` without merging, an
    /// insert deleted before it was saved).
    mutating func dropChanges(involving object: StoredObject) {
        for (key, list) in changes where key.object == ObjectIdentifier(object) {
            for change in list.byMember.values {
                remove(change.member, inverseName(of: key, list.owner, change.member), object)
            }
            changes[key] = nil
        }
    }

    /// The inverse relationship's name of an end (its entity's schema says it).
    private func inverseName(of key: End, _ owner: StoredObject, _ member: StoredObject) -> String {
        owner.entity.relationship(named: key.relationship)!.inverse
    }

    /// Every pending change once per link, from the end a caller names first: visited in the
    /// order the changes were made.
    func forEachLink(_ body: (StoredObject, String, StoredObject, Bool) throws -> Void) rethrows {
        var all: [(owner: StoredObject, relationship: String, change: Change)] = []
        for (key, list) in changes {
            for change in list.byMember.values { all.append((list.owner, key.relationship, change)) }
        }
        all.sort { $0.change.order < $1.change.order }
        var seen = Set<UInt64>()
        for (owner, relationship, change) in all where seen.insert(change.order).inserted {
            try body(owner, relationship, change.member, change.linked)
        }
    }

    /// Drops every pending change (a save wrote them, or `rollback()`).
    mutating func removeAllChanges() {
        changes = [:]
    }

    // MARK: - What ends last read

    /// The members `owner`'s `relationship` last read, by primary key; nil when unknown.
    func readMembers(of owner: StoredObject, _ relationship: String) -> Set<UInt64>? {
        read[End(owner, relationship)]?.members
    }

    /// Keeps what `owner`'s `relationship` read.
    mutating func noteRead(_ members: Set<UInt64>, of owner: StoredObject, _ relationship: String) {
        read[End(owner, relationship)] = (owner, members)
    }

    /// Updates one link of an end whose members are known (a point read, a saved write).
    mutating func noteRead(linked: Bool, member: UInt64, of owner: StoredObject, _ relationship: String) {
        let key = End(owner, relationship)
        guard read[key] != nil else { return }
        if linked { read[key]!.members.insert(member) } else { read[key]!.members.remove(member) }
    }

    /// Forgets what `object`'s ends read (refreshed, merged, forgotten): its links' ancestor is
    /// the store's from now on.
    mutating func forgetReads(of object: StoredObject) {
        guard !read.isEmpty else { return }
        for key in read.keys where key.object == ObjectIdentifier(object) { read[key] = nil }
    }

    /// Forgets every read.
    mutating func forgetAllReads() {
        read = [:]
    }
}
