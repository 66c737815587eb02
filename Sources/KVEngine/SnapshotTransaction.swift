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
/// `@unchecked Sendable`: `state` is only used under its lock; `owner` is atomic.
final class SnapshotTransaction: @unchecked Sendable {
    /// What the lock guards. Mutated only in place, through the lock's unchecked storage: a
    /// stored property of the snapshot cost a dynamic exclusivity check per read.
    struct State {
        var transaction: LMDBTransaction?
        /// Table handles, the last one remembered.
        var handles: TableHandles
        /// Why the engine ended the transaction (`Options.maxSnapshotAge`/`maxSnapshotLag`),
        /// or nil.
        var expiry: String? = nil
    }

    private let state: ConditionLock<State>
    /// The thread inside the lock, to catch re-entrance (which would deadlock).
    private let owner = Atomic<UInt>(0)
    /// Whether the transaction is the engine's reserved reader, reset and returned on close.
    let recycles: Bool

    init(_ transaction: LMDBTransaction, tables: [String: MDB_dbi], recycles: Bool) {
        state = ConditionLock(State(transaction: transaction, handles: TableHandles(tables)))
        self.recycles = recycles
    }

    /// Runs `body` under the lock; using the snapshot again from inside one of its own
    /// closures would deadlock, so it stops the process with a message instead.
    @inline(__always)
    func withState<Result, Failure: Error>(
        _ operation: String, _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let me = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        if owner.load(ordering: .relaxed) == me {
            fatalError("Snapshot.\(operation) called inside a closure that is reading from the same snapshot "
                + "(withValue/forEach); copy what you need out of the closure and call it afterwards")
        }
        return try state.withLock { (state) throws(Failure) -> Result in
            owner.store(me, ordering: .relaxed)
            defer { owner.store(0, ordering: .relaxed) }
            return try body(&state)
        }
    }

    /// Aborts the transaction unless it already ended; `reason` (nil: the store closed) is
    /// what later reads are told. Returns false when it had already ended. Waits for a read
    /// in progress; called with no other lock held (reads take the overlay lock inside this).
    func end(_ operation: String, expiry reason: String?) -> Bool {
        withState(operation) { state -> Bool in
            guard let open = state.transaction else { return false }
            open.abort()
            state.transaction = nil
            state.expiry = reason
            return true
        }
    }

    /// Ends the transaction because the snapshot outlived the store's bound
    /// (`Options.maxSnapshotAge`/`maxSnapshotLag`), so LMDB can reuse the pages it pinned;
    /// later reads throw `KVError.snapshotExpired`.
    func expire(reason: String) -> Bool { end("expire", expiry: reason) }

    /// The store is closing; it already forgot the snapshot.
    func invalidate() { _ = end("close() (through Store.close())", expiry: nil) }
}
