import CLMDB
import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A snapshot's LMDB read transaction and what its reads keep beside it, behind one lock.
///
/// The engine holds this strongly (`LiveSnapshot`), not the snapshot: it ends the transaction
/// when it expires a snapshot or closes the store, and it needs nothing else of it. A weak
/// reference to the `Snapshot` gave the snapshot a side table, which made every retain and
/// release of it the runtime's slow path (about 200 instructions a point read).
///
/// One holder serves one snapshot at a time, and is kept for later ones when that snapshot
/// closes (`SnapshotHolders`): its lock, its cursors and the table handles it found outlive the
/// snapshot (making them for each one was about a tenth of an indexed fetch). Relies on: every
/// use names the snapshot it is for, and finds nothing (the transaction nil, so the read fails
/// with `snapshotClosed`) unless the holder serves that snapshot now: `serving` outside the lock,
/// `State.snapshotID` under it. Pinned by
/// `SnapshotTests.aClosedSnapshotsHolderServesTheNextWithoutLettingTheOldOneRead`.
///
/// `@unchecked Sendable`: `state` is only used under its lock; `serving` is atomic.
final class SnapshotTransaction: @unchecked Sendable {
    /// What the lock guards. Mutated only in place, through the lock's unchecked storage: a
    /// stored property of the snapshot cost a dynamic exclusivity check per read.
    struct State {
        var transaction: LMDBTransaction?
        /// The snapshot the holder serves (or served last).
        var snapshotID: Int
        /// Table handles, the ones found remembered.
        var handles: TableHandles
        /// Why the engine ended the transaction (`Options.maxSnapshotAge`/`maxSnapshotLag`),
        /// or nil.
        var expiry: String? = nil
        var cursors = KeptCursors()
        /// The snapshot's copy of the overlay's key filter, once its reads took one.
        var keyFilter = SnapshotKeyFilter()

        /// The transaction, if it is open for snapshot `id`.
        @inline(__always)
        func transaction(for id: Int) -> LMDBTransaction? {
            snapshotID == id ? transaction : nil
        }

        /// What a use for a snapshot the holder does not serve sees: no transaction.
        static var none: State { State(transaction: nil, snapshotID: -1, handles: TableHandles([:])) }
    }

    /// Its owner word also catches re-entrance (which would deadlock).
    private let state: SnapshotLock<State>
    /// The snapshot served now, -1 once it closed: a closed snapshot's uses stop here, without
    /// the lock (which the same thread may hold for the holder's next snapshot).
    private let serving = Atomic<Int>(-1)

    init() {
        state = SnapshotLock(State(transaction: nil, snapshotID: -1, handles: TableHandles([:])))
    }

    deinit {
        state.withLock({ state in
            state.cursors.closeAll()
            state.keyFilter.deallocate()
        }, reentered: { fatalError("SnapshotTransaction: deinit inside its own lock") })
    }

    /// Serves snapshot `id` with `transaction` (begun or renewed) from now on. Under the
    /// overlay lock, which is taken before this lock only here, for a holder no snapshot uses.
    func install(_ transaction: LMDBTransaction, snapshotID id: Int, tables: [String: MDB_dbi]) {
        state.withLock({ state in
            state.transaction = transaction
            state.snapshotID = id
            state.handles.replaceTables(tables)
            state.expiry = nil
            state.keyFilter.reset()
            serving.store(id, ordering: .releasing)
        }, reentered: { fatalError("SnapshotTransaction: install inside its own lock") })
    }

    /// Runs `body` under the lock for snapshot `id` (its own reads and close); using the
    /// snapshot again from inside one of its own closures would deadlock, so it stops the
    /// process with a message instead. For a snapshot the holder no longer serves, `body` gets
    /// a state with no transaction, without the lock.
    @inline(__always)
    func withState<Result, Failure: Error>(
        for id: Int, _ operation: String, _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard serving.load(ordering: .acquiring) == id else {
            var none = State.none
            return try body(&none)
        }
        return try withLockedState(operation, body)
    }

    /// Runs `body` under the lock, whichever snapshot the holder serves: the engine's ends of a
    /// snapshot wait here for a read or a close in progress (a close hands its transaction
    /// back under this lock, which `Store.close` relies on to end none after LMDB closed).
    @inline(__always)
    private func withLockedState<Result, Failure: Error>(
        _ operation: String, _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try state.withLock(body) {
            fatalError("Snapshot.\(operation) called inside a closure that is reading from the same snapshot "
                + "(withValue/forEach); copy what you need out of the closure and call it afterwards")
        }
    }

    /// Takes the transaction of snapshot `id` out, reset, for `hand` (under the lock): the
    /// snapshot closes, and the holder serves no snapshot until the next `install`.
    func close(snapshotID id: Int, _ hand: (LMDBTransaction) -> Void) {
        withState(for: id, "close()") { state in
            guard let open = state.transaction(for: id) else { return }
            state.transaction = nil
            serving.store(-1, ordering: .releasing)
            open.reset()
            hand(open)
        }
    }

    /// Aborts the transaction of snapshot `id` unless it already ended; `reason` (nil: the
    /// store closed) is what later reads are told. Returns false when it had already ended.
    /// Waits for a read in progress; called with no other lock held (reads take the overlay
    /// lock inside this).
    func end(snapshotID id: Int, _ operation: String, expiry reason: String?) -> Bool {
        withLockedState(operation) { state -> Bool in
            guard let open = state.transaction(for: id) else { return false }
            open.abort()
            state.cursors.closeAll()
            state.transaction = nil
            state.expiry = reason
            return true
        }
    }

    /// Ends snapshot `id`'s transaction because it outlived the store's bound
    /// (`Options.maxSnapshotAge`/`maxSnapshotLag`), so LMDB can reuse the pages it pinned;
    /// later reads throw `KVError.snapshotExpired`.
    func expire(snapshotID id: Int, reason: String) -> Bool { end(snapshotID: id, "expire", expiry: reason) }

    /// The store is closing; it already forgot snapshot `id`.
    func invalidate(snapshotID id: Int) { _ = end(snapshotID: id, "close() (through Store.close())", expiry: nil) }
}

/// Holders of closed snapshots, kept for the next snapshots (see `SnapshotTransaction`). Used
/// only under the overlay lock (a field of `OverlayState`).
struct SnapshotHolders {
    /// Enough for the snapshots a few threads open and close in turn.
    static let capacity = 8

    private var holders: [SnapshotTransaction] = []

    var count: Int { holders.count }

    /// A kept holder, or a new one.
    mutating func take() -> SnapshotTransaction { holders.popLast() ?? SnapshotTransaction() }

    /// Keeps `holder` (serving no snapshot) for a later snapshot, unless enough are kept.
    mutating func keep(_ holder: SnapshotTransaction) {
        if holders.count < Self.capacity { holders.append(holder) }
    }

    /// Drops every kept holder (the store is closing); their cursors close with them.
    mutating func dropAll() { holders.removeAll() }
}

/// Cursors a holder keeps between reads, at most one per table: LMDB lets a read-only cursor be
/// renewed into any read transaction of its environment, so a walk costs no `mdb_cursor_open`
/// (an allocation) and no close. A kept cursor is renewed into the transaction of each read
/// before it moves.
struct KeptCursors {
    static let capacity = 4

    private var kept: [(table: MDB_dbi, cursor: LMDBCursor)] = []

    /// A cursor on `table` in `transaction`, to hand back with `keep` (or close).
    mutating func take(_ table: MDB_dbi, in transaction: LMDBTransaction) throws(KVError) -> LMDBCursor {
        guard let index = kept.firstIndex(where: { $0.table == table }) else { return try transaction.openCursor(table) }
        let cursor = kept.remove(at: index).cursor
        do throws(KVError) {
            try transaction.renew(cursor)
        } catch {
            cursor.close()
            throw error
        }
        return cursor
    }

    /// Keeps `cursor` on `table` for a later read, or closes it when enough are kept.
    mutating func keep(_ cursor: LMDBCursor, table: MDB_dbi) {
        if kept.count < Self.capacity { kept.append((table, cursor)) } else { cursor.close() }
    }

    mutating func closeAll() {
        for entry in kept { entry.cursor.close() }
        kept.removeAll()
    }
}
