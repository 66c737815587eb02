// The range read of the persistent history, shared by `fetchHistory(after:)` and the
// remote-change watcher.

extension StoreCoordinator {
    /// The transactions recorded after `token`, oldest first, at most `limit` of them.
    func history(after token: HistoryToken, limit: Int?) throws(ContextError) -> [HistoryTransaction] {
        guard token.version < UInt64.max, limit.map({ $0 > 0 }) ?? true else { return [] }
        let view = try readView()
        defer { view.close() }
        var transactions: [HistoryTransaction] = []
        do {
            try view.forEach(in: StorageMapping.historyTable, from: StorageMapping.key(for: token.version + 1), to: nil,
                             reverse: false) { key, value, _ in
                transactions.append(try HistoryRecord.decode(key: key, bytes: value))
                return limit.map { transactions.count < $0 } ?? true
            }
        } catch {
            throw ContextError(readFailure: error)
        }
        return transactions
    }
}
