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

    /// Owners' lists of one read, each owner's at its position: what a read hands `keep`.
    struct Lists {
        var owners: [StoredObject]
        var lists: [[StoredObject]]
    }

    private var stamp: Stamp?
    /// The owners are registered objects (an owner forgotten moves the epoch before its identifier
    /// could be reused), so their identifiers name them while the stamp holds.
    private var lists = OwnerListTable()

    /// The members kept for `owner`'s `relationship`, if they were read at `stamp`.
    func members(of owner: StoredObject, _ relationship: String, at stamp: Stamp) -> [StoredObject]? {
        guard stamp == self.stamp else { return nil }
        return lists.list(of: ObjectIdentifier(owner), relationship)
    }

    /// Keeps each of `read`'s lists as its owner's `relationship`, read at `stamp`, the table
    /// made at its size once (grown by each, a prefetch's thousand lists resized it often).
    mutating func keep(_ read: Lists, _ relationship: String, at stamp: Stamp) {
        if stamp != self.stamp {
            lists.removeAll()
            self.stamp = stamp
        }
        lists.reserveCapacity(adding: read.owners.count)
        for (owner, members) in zip(read.owners, read.lists) {
            lists.set(members, of: ObjectIdentifier(owner), relationship)
        }
    }

    /// Drops every list (a stale stamp, or a reset: the members need not stay alive).
    mutating func removeAll() {
        stamp = nil
        lists.removeAll()
    }
}
