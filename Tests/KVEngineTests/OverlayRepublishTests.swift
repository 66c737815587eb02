@testable import KVEngine
import Testing

/// A reader's apply that rebuilds its overlay from the commits LMDB does not hold yet
/// (`OverlayState.didApply(..., republishing: true)`) must leave exactly what pruning each
/// applied key leaves: the same visible entries, key counts, bytes and unapplied commits.
@Suite struct OverlayRepublishTests {
    private func put(_ table: String, _ key: String, _ value: String, version: UInt64) -> LoggedOperation {
        LoggedOperation(table: table, key: Array(key.utf8), recordVersion: version, value: Array(value.utf8))
    }

    private func delete(_ table: String, _ key: String, version: UInt64) -> LoggedOperation {
        LoggedOperation(table: table, key: Array(key.utf8), recordVersion: version, value: nil)
    }

    /// Six commits over two tables: keys rewritten across the applied/unapplied boundary, one
    /// deleted above it, one only below it, one only above it.
    private var commits: [LoggedCommit] {
        [
            LoggedCommit(version: 1, operations: [put("t", "a", "a1", version: 1), put("t", "b", "b1", version: 1)]),
            LoggedCommit(version: 2, operations: [put("u", "x", "x2", version: 1)]),
            LoggedCommit(version: 3, operations: [put("t", "a", "a3", version: 2), put("t", "c", "c3", version: 1)]),
            LoggedCommit(version: 4, operations: [put("u", "y", "y4", version: 1)]),
            LoggedCommit(version: 5, operations: [put("t", "a", "a5", version: 3), delete("u", "x", version: 1)]),
            LoggedCommit(version: 6, operations: [put("t", "d", "d6", version: 1)]),
        ]
    }

    private func applied(through version: UInt64, republishing: Bool) -> OverlayState {
        var state = OverlayState()
        _ = state.publish(commits)
        let count = commits.filter { $0.version <= version }.count
        _ = state.didApply(through: version, count: count, newTables: [:], republishing: republishing)
        return state
    }

    /// What a snapshot above `floor` reads from the overlay, key by key.
    private func visible(_ state: OverlayState, floor: UInt64) -> [String: String] {
        var seen: [String: String] = [:]
        for tableKey in state.entries.keys {
            guard let entry = state.entry(tableKey, floor: floor, version: state.latestVersion) else { continue }
            let name = tableKey.table + "/" + String(decoding: tableKey.key, as: UTF8.self)
            seen[name] = "\(entry.commitVersion):" + (entry.value.map { String(decoding: $0, as: UTF8.self) } ?? "deleted")
        }
        return seen
    }

    @Test func aRebuildLeavesWhatPruningLeaves() {
        for version: UInt64 in 1...6 {
            let rebuilt = applied(through: version, republishing: true)
            let pruned = applied(through: version, republishing: false)
            let comment: Comment = "applied through \(version)"
            #expect(visible(rebuilt, floor: version) == visible(pruned, floor: version), comment)
            #expect(rebuilt.entries.count == pruned.entries.count, comment)
            #expect(rebuilt.keysPerTable == pruned.keysPerTable, comment)
            #expect(rebuilt.bytes == pruned.bytes, comment)
            #expect(rebuilt.unappliedCount == pruned.unappliedCount, comment)
            #expect(rebuilt.latestVersion == pruned.latestVersion, comment)
            #expect(rebuilt.largestPublishBytes == pruned.largestPublishBytes, comment)
        }
        // Through 4, two commits remain of six: rebuilt, and only those two are left to prune.
        let rebuilt = applied(through: 4, republishing: true)
        #expect(rebuilt.unapplied.map(\.version) == [5, 6])
        #expect(visible(rebuilt, floor: 4) == ["t/a": "5:a5", "u/x": "5:deleted", "t/d": "6:d6"])
    }

    @Test func aSnapshotReadingTheOverlayKeepsThePrune() {
        var state = OverlayState()
        _ = state.publish(Array(commits.prefix(3)))
        // A snapshot at version 3 above floor 0 reads the entries of commits 1-3: the later
        // commits keep the versions they replace, and the apply must not drop them.
        state.liveSnapshots[0] = LiveSnapshot(floor: 0, version: 3, openedAt: 0, transaction: SnapshotTransaction(), recycles: false)
        _ = state.publish(Array(commits.suffix(3)))
        _ = state.didApply(through: 4, count: 4, newTables: [:], republishing: true)
        #expect(state.unapplied.count == 6, "pruned in place: the applied commits stay until removed in bulk")
        #expect(state.entry(TableKey(table: "t", key: Array("a".utf8)), floor: 0, version: 3)?.commitVersion == 3)
    }
}
