/// The members cascades read whole from the store at `delete(_:)`, kept with their owners until
/// the save: the save then need not read a deleted owner's members again when nothing was
/// committed since (`includeStoreMembers` reads them to find members this context does not
/// see; a cascade of 10,000 members read them twice, about 590 instructions a member).
///
/// A read is whole when a ``MemberPrefetch`` answered it: the context held no object of the
/// members' entity, so each member the store held at `version` is in the list. While the store
/// is still at `version` and each listed member is still a delete the save settled, every
/// member the store holds is one, which is all the second read would find out.
///
/// Relies on: a view at the version of the read holds the same members (every commit moves
/// the version; a member added since also raised the owner's version, which the delete is
/// conditioned on), and a member whose delete was undone is not settled. Pinned by
/// `DeleteRuleTests.cascadeRereadsAMemberWhoseDeleteWasUndone` and
/// `RelationshipConflictTests.cascadeOfMembersVersusAddedMember` (a member added by a commit
/// between the delete and the save).
///
/// Not `Sendable`: kept on its context's queue.
struct CascadeReads {
    /// One owner's to-many.
    private struct Key: Hashable {
        let owner: ObjectIdentifier
        let relationship: String
    }

    private struct Read {
        /// Held so that its identifier names it while the read is kept.
        let owner: StoredObject
        let version: UInt64
        let members: [StoredObject]
    }

    private var reads: [Key: Read] = [:]

    /// Keeps `members`, every member of `owner`'s `relationship` the store held at `version`.
    mutating func keep(_ members: [StoredObject], of owner: StoredObject, _ relationship: String, readAt version: UInt64) {
        reads[Key(owner: ObjectIdentifier(owner), relationship: relationship)] = Read(owner: owner, version: version, members: members)
    }

    /// Whether the read kept for `owner`'s `relationship` was at `version` and each of its
    /// members is still `settled`.
    func covers(_ owner: StoredObject, _ relationship: String, at version: UInt64, settled: (StoredObject) -> Bool) -> Bool {
        guard let read = reads[Key(owner: ObjectIdentifier(owner), relationship: relationship)],
              read.owner === owner, read.version == version
        else { return false }
        return read.members.allSatisfy(settled)
    }

    /// Drops every read (a save done, a rollback or a reset: the members need not stay alive).
    mutating func removeAll() {
        if !reads.isEmpty { reads = [:] }
    }
}
