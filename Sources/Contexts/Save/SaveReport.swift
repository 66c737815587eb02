import Policies

/// What the last `save()` of a context did: its commits, the conflicts its merge policy was
/// asked about and the answers, and which objects it wrote.
///
/// Read it with ``ObjectContext/lastSaveReport`` after a save, successful or not. The object ID
/// lists are what the context's did-save notification carries.
///
/// ```swift
/// context.mergePolicy = .objectTrump
/// try context.save()
/// for conflict in context.lastSaveReport?.conflicts.joined() ?? [] { print(conflict.kind) }
/// ```
public struct SaveReport: Sendable {
    /// Whether the save succeeded.
    ///
    /// ```swift
    /// context.lastSaveReport?.succeeded   // false after a MergeError
    /// ```
    public var succeeded = false

    /// How many conditional commits the save tried (0 when it had nothing to do, or failed
    /// before its first commit, for example on validation).
    ///
    /// ```swift
    /// report.attempts   // 2: one conflict round, then success
    /// ```
    public var attempts = 0

    /// The conflicts of each round in which the merge policy was asked, in order. The error
    /// policy's round is here too (the same conflicts as its ``MergeError``).
    ///
    /// ```swift
    /// report.conflicts.first?.map(\.kind)   // [.updateUpdate]
    /// ```
    public var conflicts: [[MergeConflict]] = []

    /// The policy's answers, one list per round that it answered (a throwing round has none).
    ///
    /// ```swift
    /// report.resolutions.first   // [.write([...])]
    /// ```
    public var resolutions: [[Resolution]] = []

    /// The commit version of the successful commit; nil when nothing needed writing or the
    /// save failed.
    ///
    /// ```swift
    /// report.commitVersion   // 12
    /// ```
    public var commitVersion: UInt64?

    /// Objects the save inserted into the store (permanent IDs), re-inserted ones included.
    ///
    /// ```swift
    /// report.insertedObjectIDs.map(\.uriString)
    /// ```
    public var insertedObjectIDs: [ObjectID] = []

    /// Objects whose records the save updated.
    ///
    /// ```swift
    /// report.updatedObjectIDs.count
    /// ```
    public var updatedObjectIDs: [ObjectID] = []

    /// Objects the save deleted (or found already deleted by another writer).
    ///
    /// ```swift
    /// report.deletedObjectIDs.count
    /// ```
    public var deletedObjectIDs: [ObjectID] = []

    /// Objects whose local changes the merge policy dropped for the store's state
    /// (``Resolution/takeStore``).
    ///
    /// ```swift
    /// report.tookStoreObjectIDs   // rolled back by the rollback policy
    /// ```
    public var tookStoreObjectIDs: [ObjectID] = []

    /// The temporary ID each object in ``insertedObjectIDs`` had before the save (or before
    /// `obtainPermanentIDs`), by its permanent ID.
    ///
    /// ```swift
    /// report.temporaryIDs[permanentID]?.isTemporaryID   // true
    /// ```
    public var temporaryIDs: [ObjectID: ObjectID] = [:]

    /// Whether this was a child context's save into its parent: no commit, no version check, no
    /// policy; ``insertedObjectIDs`` then holds temporary IDs and ``commitVersion`` is nil.
    ///
    /// ```swift
    /// try child.save()
    /// child.lastSaveReport?.savedToParent   // true
    /// ```
    public var savedToParent = false

    /// An empty report.
    ///
    /// ```swift
    /// var report = SaveReport()
    /// ```
    public init() {}
}
