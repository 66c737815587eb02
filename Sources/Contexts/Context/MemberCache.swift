/// The members of to-manys a context has read, kept with their owners: what
/// `members(of:)` answers without a fetch (Core Data's fired to-many fault).
///
/// Every list was read at one `Stamp` and is returned only at that same stamp; storing a list at
/// another stamp first drops all the others. A stamp is the context's `graphEpoch` (which moves
/// on every registration, forgetting, ID change, insert or delete flag change, and write of a
/// to-one, so on every change of this context that can change who is a member) and the commit
/// version its base reads at (which moves on every commit, this context's own saves and merges
/// included). While neither moved, a fetch of the members would return exactly the list kept.
/// Pinned by `MemberCacheTests` and `RandomGraphEditTests` (members read through it against a scan).
///
/// Not `Sendable`: kept on its context's queue.
struct MemberCache {
    /// When the lists were read.
    struct Stamp: Equatable {
        let graphEpoch: UInt64
        let baseVersion: UInt64
    }

    /// One owner's to-many.
    private struct Key: Hashable {
        let owner: ObjectIdentifier
        let relationship: String

        /// The owner only (equality still compares both): an owner has a few to-manys, and
        /// hashing the name cost more than the rest of a lookup.
        func hash(into hasher: inout Hasher) { hasher.combine(owner) }
    }

    private var stamp: Stamp?
    /// The owners are registered objects (an owner forgotten moves the epoch before its identifier
    /// could be reused), so their identifiers name them while the stamp holds.
    private var lists: [Key: [StoredObject]] = [:]

    /// The members kept for `owner`'s `relationship`, if they were read at `stamp`.
    func members(of owner: StoredObject, _ relationship: String, at stamp: Stamp) -> [StoredObject]? {
        guard stamp == self.stamp else { return nil }
        return lists[Key(owner: ObjectIdentifier(owner), relationship: relationship)]
    }

    /// Keeps `members` as `owner`'s `relationship`, read at `stamp`.
    mutating func keep(_ members: [StoredObject], of owner: StoredObject, _ relationship: String, at stamp: Stamp) {
        if stamp != self.stamp {
            lists.removeAll()
            self.stamp = stamp
        }
        lists[Key(owner: ObjectIdentifier(owner), relationship: relationship)] = members
    }

    /// Keeps each of `lists` as its owner's `relationship`, read at `stamp`: `keep` for each, the
    /// table made at its size once (grown by each, a prefetch's thousand lists resized it often).
    mutating func keep(_ lists: [(StoredObject, [StoredObject])], _ relationship: String, at stamp: Stamp) {
        if stamp != self.stamp {
            self.lists = [:]
            self.stamp = stamp
        }
        self.lists.reserveCapacity(self.lists.count + lists.count)
        for (owner, members) in lists {
            self.lists[Key(owner: ObjectIdentifier(owner), relationship: relationship)] = members
        }
    }

    /// Drops every list (a stale stamp, or a reset: the members need not stay alive).
    mutating func removeAll() {
        stamp = nil
        lists = [:]
    }
}
