/// Read transactions of closed snapshots, reset and kept for the next snapshots.
///
/// `mdb_txn_begin` callocs a transaction sized for `Options.maxTables` tables and zeroes it
/// (about 14 KiB at the default 256): a fifth of an indexed fetch's instructions, since every
/// fetch reads through a snapshot of its own. A reset transaction renewed with `mdb_txn_renew`
/// skips the allocation and reuses the reader slot it kept.
///
/// Invariant: every transaction held here is reset (`mdb_txn_reset`): it reads nothing, pins no
/// pages and belongs to no snapshot, so renewing it gives a fresh view of the latest commit,
/// with every table opened since. Each keeps one reader slot, so at most `capacity` are kept
/// (the rest are aborted), and all are aborted when the store closes. Used only under the
/// overlay lock (a field of `OverlayState`). Pinned by
/// `SnapshotTests.aSnapshotOnARenewedTransactionSeesTheLatestCommitAndNewTables`.
struct IdleReaders {
    /// Enough for the snapshots a few threads open and close in turn.
    static let capacity = 4

    private var readers: [LMDBTransaction] = []

    var count: Int { readers.count }

    /// A reset transaction to renew, or nil when none is kept.
    mutating func take() -> LMDBTransaction? { readers.popLast() }

    /// Keeps `reader` (already reset) for a later snapshot, or aborts it when enough are kept.
    mutating func keep(_ reader: LMDBTransaction) {
        if readers.count < Self.capacity { readers.append(reader) } else { reader.abort() }
    }

    /// Aborts every kept transaction (the store is closing), freeing their reader slots.
    mutating func abortAll() {
        for reader in readers { reader.abort() }
        readers.removeAll()
    }
}
