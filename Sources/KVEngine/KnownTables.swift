import CLMDB

/// The tables a commit group may write to without making one more: those LMDB has, those
/// unapplied commits make, and those the group's own puts add (`BatchEvaluation`, which
/// refuses a put past LMDB's table limit before anything is logged).
///
/// Holds the overlay's two collections as they were when the group began (copies on write:
/// no name is copied) and asks each in turn. A set of their union, made for every group,
/// cost about 1,200 instructions a commit (4% of a `commit-1` commit), for a question asked
/// once per run of one table's puts.
struct KnownTables {
    private let handles: [String: MDB_dbi]
    private let pending: Set<String>
    /// Tables the group's puts add, in none of the others.
    private var added: Set<String> = []

    init(handles: [String: MDB_dbi], pending: Set<String>) {
        self.handles = handles
        self.pending = pending
    }

    func contains(_ table: String) -> Bool {
        handles[table] != nil || pending.contains(table) || added.contains(table)
    }

    /// How many tables there are in all (a table both in LMDB and pending counts once).
    var count: Int {
        handles.count + pending.reduce(0) { $0 + (handles[$1] == nil ? 1 : 0) } + added.count
    }

    /// Adds `table`, which `contains` says is not known.
    mutating func insert(_ table: String) {
        added.insert(table)
    }
}
