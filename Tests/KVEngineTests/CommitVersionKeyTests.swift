import CairnTestSupport
import Foundation
import KVEngine
import Locking
import Testing

/// `WriteBatch.putAtCommitVersion`: a put whose key is its own commit's version, filled in by
/// the commit leader before the group is logged, so the log, the overlay, LMDB and recovery
/// all see the final key. (A reader in another process: `KeyValueCommandTests`.)
@Suite struct CommitVersionKeyTests {
    /// The key is the version's 8 bytes big-endian, so such keys sort in commit order; stored,
    /// so frozen.
    @Test func theKeyIsTheVersionBigEndian() {
        #expect(WriteBatch.commitVersionKey(0x0102_0304_0506_0708) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(WriteBatch.commitVersionKey(2) == [0, 0, 0, 0, 0, 0, 0, 2])
    }

    @Test func aPutAtCommitVersionIsKeyedByItsOwnCommitAndSurvivesACrash() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // The applier stays idle: after the crash only the log holds the keys.
        let store = try Store(directory: directory.path, options: lazyOptions())
        try store.put("a", "1")
        var batch = WriteBatch()
        batch.put("2", forKey: "b")
        batch.putAtCommitVersion(bytes("first"), in: "changes", if: .absent)
        let first = try store.commit(batch)
        try store.put("c", "3")  // a commit without a version-keyed put between the two
        batch = WriteBatch()
        batch.putAtCommitVersion(bytes("second"), in: "changes")
        let second = try store.commit(batch)
        #expect(first.version == 2 && first.recordVersions == [1, 1])
        #expect(second.version == 4 && second.recordVersions == [1])
        let expected = [Record(key: WriteBatch.commitVersionKey(2), value: bytes("first"), version: 1),
                        Record(key: WriteBatch.commitVersionKey(4), value: bytes("second"), version: 1)]
        let live = try store.snapshot()
        #expect(try live.scan(in: "changes") == expected)
        live.close()
        store.simulateCrash()

        let reopened = try Store(directory: directory.path, options: lazyOptions())
        defer { reopened.close() }
        #expect(reopened.recoveryReport.replayedCommits == 4)
        let snapshot = try reopened.snapshot()
        defer { snapshot.close() }
        #expect(try snapshot.scan(in: "changes") == expected)
        #expect(text(try snapshot.get("b")?.value) == "2")
    }

    /// The condition is checked against the filled-in key: a key someone put there by hand
    /// fails `.absent`, the failure names it, and nothing of the batch is written.
    @Test func aTakenVersionKeyFailsItsConditionAndWritesNothing() throws {
        try withStore { store, _ in
            var batch = WriteBatch()
            batch.put(bytes("squatter"), forKey: WriteBatch.commitVersionKey(2), in: "changes")
            try store.commit(batch)
            batch = WriteBatch()
            batch.put("x", forKey: "x")
            batch.putAtCommitVersion(bytes("mine"), in: "changes", if: .absent)
            #expect {
                try store.commit(batch)
            } throws: { error in
                guard case KVError.conditionFailed(let failures) = error else { return false }
                return failures == [FailedCondition(table: "changes", key: WriteBatch.commitVersionKey(2),
                                                    expected: .absent, currentVersion: 1)]
            }
            #expect(try store.string("x") == nil)
            #expect(try store.latestCommitVersion() == 1)
            // Without the condition the same batch commits at version 2 and replaces the record.
            batch = WriteBatch()
            batch.putAtCommitVersion(bytes("mine"), in: "changes")
            #expect(try store.commit(batch).recordVersions == [2])
        }
    }

    /// Concurrent writers of version-keyed puts share fdatasyncs (no lock around them) and
    /// each record lands under the version its commit returned.
    @Test func concurrentVersionKeyedCommitsShareSyncsAndEachGetsItsOwnVersion() throws {
        try withStore(busyOptions()) { store, _ in
            let versions = ConditionLock<[UInt64: String]>([:])
            DispatchApply.run(8) { thread in
                for index in 0..<25 {
                    var batch = WriteBatch()
                    batch.put("v", forKey: "t\(thread)-\(index)")
                    batch.putAtCommitVersion(bytes("t\(thread)-\(index)"), in: "changes", if: .absent)
                    let info = try! store.commit(batch)
                    versions.withLock { $0[info.version] = "t\(thread)-\(index)" }
                }
            }
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let records = try snapshot.scan(in: "changes")
            #expect(records.count == 200)
            #expect(records.map(\.key) == (1...200).map { WriteBatch.commitVersionKey($0) })
            let byVersion = versions.value
            #expect(records.allSatisfy { byVersion[UInt64(bigEndianBytes: $0.key)] == text($0.value) })
            // One fdatasync per commit would be 200.
            #expect(try store.stats().logSyncs < 200)
        }
    }
}

extension UInt64 {
    init(bigEndianBytes bytes: [UInt8]) {
        self = bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
