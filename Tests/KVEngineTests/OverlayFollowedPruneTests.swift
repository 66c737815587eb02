@testable import KVEngine
import Testing

/// A reader's prune (`OverlayState.didApplyFollowed`), which keeps no commits and moves the
/// entries LMDB does not hold yet to a new table, must leave exactly what the writer's pruning
/// of each applied key leaves: the same visible entries, key counts and bytes.
@Suite struct OverlayFollowedPruneTests {
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

    /// The writer's overlay: its commits published, then pruned key by key.
    private func pruned(through version: UInt64) -> OverlayState {
        var state = OverlayState()
        _ = state.publish(commits)
        let count = commits.filter { $0.version <= version }.count
        _ = state.didApply(through: version, count: count, newTables: [:])
        return state
    }

    /// A reader's overlay: the same writes published with no commits kept, as a refresh does.
    private func followed(_ commits: [LoggedCommit], into state: inout OverlayState) {
        var inserts = OverlayInserts(of: commits)
        _ = state.publish([], inserts: &inserts)
        state.latestVersion = commits.last?.version ?? state.latestVersion
    }

    private func followed(through version: UInt64) -> OverlayState {
        var state = OverlayState()
        followed(commits, into: &state)
        _ = state.didApplyFollowed(through: version)
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

    @Test func aReadersPruneLeavesWhatPruningEachKeyLeaves() {
        for version: UInt64 in 1...6 {
            let reader = followed(through: version)
            let writer = pruned(through: version)
            let comment: Comment = "applied through \(version)"
            #expect(visible(reader, floor: version) == visible(writer, floor: version), comment)
            #expect(reader.entries.count == writer.entries.count, comment)
            #expect(reader.keysPerTable == writer.keysPerTable, comment)
            #expect(reader.bytes == writer.bytes, comment)
            #expect(reader.latestVersion == writer.latestVersion, comment)
            #expect(reader.unappliedCount == 0, comment)
        }
        let reader = followed(through: 4)
        #expect(visible(reader, floor: 4) == ["t/a": "5:a5", "u/x": "5:deleted", "t/d": "6:d6"])
        // The moved entries are found again (the new table's filter and probes hold them).
        #expect(reader.entry(TableKey(table: "t", key: Array("d".utf8)), floor: 4, version: 6)?.value == Array("d6".utf8))
    }

    @Test func aSnapshotReadingTheOverlayKeepsWhatItReads() {
        var state = OverlayState()
        followed(Array(commits.prefix(3)), into: &state)
        // A snapshot at version 3 above floor 0 reads the entries of commits 1-3: the later
        // commits keep the versions they replace, and the apply must not drop them.
        state.liveSnapshots[0] = LiveSnapshot(floor: 0, version: 3, openedAt: 0, transaction: SnapshotTransaction(), recycles: false)
        followed(Array(commits.suffix(3)), into: &state)
        #expect(state.didApplyFollowed(through: 4) == nil, "pruned in place")
        #expect(state.entry(TableKey(table: "t", key: Array("a".utf8)), floor: 0, version: 3)?.commitVersion == 3)
        #expect(state.entry(TableKey(table: "t", key: Array("a".utf8)), floor: 4, version: 6)?.commitVersion == 5)
        // Applied entries no snapshot reads went: "u/y" of commit 4 only.
        #expect(state.entries[TableKey(table: "u", key: Array("y".utf8))] == nil)
    }
}
