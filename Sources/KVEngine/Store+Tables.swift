extension Store {
    /// Whether the store holds `table`: LMDB has it, or a committed write not yet applied
    /// created it. A table comes into being with its first write and is never dropped, so an
    /// emptied table still exists; one never written to does not.
    ///
    /// ```swift
    /// store.tableExists("people")   // false until the first commit that writes to it
    /// ```
    package func tableExists(_ table: String) -> Bool {
        core.overlay.withLock { $0.tableHandles[table] != nil || $0.pendingTables.contains(table) }
    }
}
