/// What the object layer needs of a store: the seam between contexts and a storage backend.
///
/// Contexts read through a ``StorageReadView`` at one commit version and write through one
/// conditional, all-or-nothing ``StorageBatch`` per save attempt. Record versions and commit
/// versions mean what they mean in the engine: a record's version is its number of writes since
/// it was last absent, and every commit has a higher version than the commits before it.
///
/// The local engine (``EngineStorage``, on KVEngine) is one implementation; any store with
/// per-key versions, conditional transactions and reads at a past version can be another.
///
/// Implementations throw ``StorageError`` for their own failures and let errors thrown by the
/// closures they are given pass through unchanged.
package protocol ObjectStorage: AnyObject, Sendable {
    /// A consistent view of the newest commit. The caller closes it.
    func readView() throws(StorageError) -> any StorageReadView

    /// Commits `batch` if every condition in it holds, and nothing of it otherwise.
    ///
    /// A failed condition is not an error: the outcome lists every one of them, each with the
    /// record's current version, so that one round trip tells the caller what changed.
    func commit(_ batch: consuming StorageBatch, durability: SaveDurability) throws(StorageError) -> StorageCommitOutcome

    /// Commits `batch` as ``commit(_:durability:)`` does, plus one more put: `record` in `table`
    /// under the commit's own version (8 bytes big-endian), in the same all-or-nothing commit.
    /// What the persistent history is written with: its records are keyed by commit version,
    /// so they are never ahead of or behind the data, and a range of them is a range read.
    ///
    /// The record's key is the commit's version exactly, whatever else commits to the store.
    func commit(
        _ batch: consuming StorageBatch, durability: SaveDurability, keyedByVersion record: [UInt8], in table: String
    ) throws(StorageError) -> StorageCommitOutcome

    /// A directory whose entries change when any process commits to the store, for a watcher
    /// (inotify) to wake on; nil when there is none, and watchers poll.
    var commitSignalDirectory: String? { get }

    /// Hands out `count` primary keys for `entityName`, ascending, never handed out before by
    /// this store (to any process) and not taken by a stored record at the time.
    func allocatePrimaryKeys(count: Int, for entityName: String) throws(StorageError) -> [UInt64]

    /// The version of the newest commit. Cheap enough to poll: on the engine it reads no
    /// record, and a store open for reading in another process than the writer's reads only
    /// the writer's log records appended since the last call (none, when nothing changed).
    func commitVersion() throws(StorageError) -> UInt64

    /// Calls `observer` after every commit made through this storage that wrote something, on
    /// the committing thread, before `commit` returns: the hook the change feed builds on.
    func addCommitObserver(_ observer: @escaping @Sendable (StorageCommitNotice) -> Void)

    /// Where the store is, for messages (a directory, a cluster address).
    var location: String { get }

    /// Closes the store; later calls fail with ``StorageError/Code-swift.enum/closed``.
    func close()
}

extension ObjectStorage {
    /// Whether a commit newer than `version` exists: what a poller of another process's
    /// changes asks (remote change notifications), as cheap as ``commitVersion()``.
    ///
    /// ```swift
    /// if try storage.hasCommits(after: seen) { notify() }
    /// ```
    package func hasCommits(after version: UInt64) throws(StorageError) -> Bool {
        try commitVersion() > version
    }
}

/// A consistent read of the store at one commit version.
///
/// The buffers handed to the closures are valid only inside them. Coarse on purpose: a fetch
/// or a batch of point reads is one call into the view, not one per record, so the object
/// layer's loops pay no dynamic dispatch per record.
package protocol StorageReadView: AnyObject, Sendable {
    /// The commit version the view reads at.
    var version: UInt64 { get }

    /// Visits the value and record version of each key, in order (`nil` and 0 when absent).
    func visitValues(
        forKeys keys: [StorageKey], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws

    /// Visits the records of `primaryKeys` in `table`, in order: `visitValues(forKeys:)` of their
    /// storage keys (``StorageMapping``), which a view may read without making each key.
    func visitRecords(
        in table: String, primaryKeys: [UInt64], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws

    /// Visits the records of `table` in key order (or reverse), within [`lower`, `upper`);
    /// `body` returns false to stop.
    func forEach(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, reverse: Bool,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt64) throws -> Bool
    ) throws

    /// How many records of `table` within [`lower`, `upper`) `include` accepts (every one when
    /// nil), given each key: what counting `forEach`'s visits gives, without handing values out.
    func countKeys(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, where include: ((UnsafeRawBufferPointer) -> Bool)?
    ) throws -> Int

    /// About how many records `table` holds (exact or close; for sizing buffers).
    func estimatedCount(in table: String) throws(StorageError) -> Int

    /// Ends the view; reading it afterwards fails.
    func close()
}

extension StorageReadView {
    /// Through `visitValues(forKeys:)`, for views with no cheaper way.
    package func visitRecords(
        in table: String, primaryKeys: [UInt64], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void
    ) throws {
        try visitValues(forKeys: primaryKeys.map { StorageKey(table: table, key: StorageMapping.key(for: $0)) }, body)
    }

    /// The count through `forEach`, for views with no cheaper way.
    package func countKeys(
        in table: String, from lower: [UInt8]?, to upper: [UInt8]?, where include: ((UnsafeRawBufferPointer) -> Bool)?
    ) throws -> Int {
        var total = 0
        try forEach(in: table, from: lower, to: upper, reverse: false) { key, _, _ in
            if include?(key) ?? true { total += 1 }
            return true
        }
        return total
    }

    /// The value (copied) and record version of `key`, or nil when absent.
    func get(_ key: [UInt8], in table: String) throws -> (value: [UInt8], version: UInt64)? {
        var found: (value: [UInt8], version: UInt64)? = nil
        try visitValues(forKeys: [StorageKey(table: table, key: key)]) { _, value, version in
            found = value.map { (Array($0), version) }
        }
        return found
    }

    /// The last record of `table` in key order, or nil when it is empty.
    func lastKey(in table: String) throws -> [UInt8]? {
        var last: [UInt8]? = nil
        try forEach(in: table, from: nil, to: nil, reverse: true) { key, _, _ in
            last = Array(key)
            return false
        }
        return last
    }
}

/// A table and a key in it.
package struct StorageKey: Hashable, Sendable {
    package let table: String
    package let key: [UInt8]

    package init(table: String, key: [UInt8]) {
        self.table = table
        self.key = key
    }
}

/// What a conditional commit did.
package enum StorageCommitOutcome: Sendable {
    /// Written: the commit's version, and per operation of the batch in order the record's
    /// version after it (puts), 0 (deletes) or the version a check saw.
    case committed(version: UInt64, recordVersions: [UInt64])
    /// Nothing written: every condition that did not hold.
    case conditionsFailed([FailedStorageCondition])
}

/// One condition of a batch that did not hold when the commit was tried.
package struct FailedStorageCondition: Sendable, Hashable, CustomStringConvertible {
    package let key: StorageKey
    /// The record's version then; 0 when it was absent.
    package let currentVersion: UInt64

    package init(key: StorageKey, currentVersion: UInt64) {
        self.key = key
        self.currentVersion = currentVersion
    }

    package var description: String {
        "\(key.table)/\(key.key.count)-byte key: current version \(currentVersion)"
    }
}

/// A commit that wrote something, as commit observers see it.
package struct StorageCommitNotice: Sendable {
    /// The commit's version.
    package let version: UInt64
    /// The keys it put or deleted, in batch order.
    package let writtenKeys: [StorageKey]

    package init(version: UInt64, writtenKeys: [StorageKey]) {
        self.version = version
        self.writtenKeys = writtenKeys
    }
}
