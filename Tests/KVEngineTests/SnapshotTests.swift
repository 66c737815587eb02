import CairnTestSupport
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct SnapshotTests {
    /// A count of a range is the number of records `forEach` visits in it, whether they are in
    /// LMDB (tombstones left out) or still in the overlay, and `include` sees each key.
    @Test func aCountOfARangeIsWhatForEachVisits() throws {
        try withStore(busyOptions()) { store, _ in
            var batch = WriteBatch()
            for index in 0..<50 { batch.put("v", forKey: "k\(index + 10)") }
            try store.commit(batch)
            var deletes = WriteBatch()
            for index in stride(from: 0, to: 50, by: 7) { deletes.delete("k\(index + 10)") }
            try store.commit(deletes)
            try store.flush()  // tombstones in LMDB
            func check(_ snapshot: Snapshot, _ situation: String) throws {
                for (lower, upper) in [(nil, nil), ("k2", "k4"), ("k33", "k5"), ("k9", nil), ("z", nil)] as [(String?, String?)] {
                    let from = lower.map { Array($0.utf8) }, to = upper.map { Array($0.utf8) }
                    var visited = 0, odd = 0
                    try snapshot.forEach(from: from, to: to) { key, _, _ in
                        visited += 1
                        if key.last! % 2 == 1 { odd += 1 }
                        return true
                    }
                    #expect(try snapshot.count(in: WriteBatch.defaultTable, from: from, to: to) { _ in true } == visited,
                            "\(situation) \(String(describing: lower))..<\(String(describing: upper))")
                    #expect(try snapshot.count(in: WriteBatch.defaultTable, from: from, to: to) { $0.last! % 2 == 1 } == odd)
                }
            }
            let applied = try store.snapshot()
            try check(applied, "in LMDB")
            applied.close()
            var more = WriteBatch()
            more.put("v", forKey: "k30")
            more.delete("k31")
            more.put("v", forKey: "k3")
            try store.commit(more)  // possibly still in the overlay
            let latest = try store.snapshot()
            try check(latest, "with the overlay")
            latest.close()
        }
    }

    /// A batch of point reads answers each key as `withValue` does: records in LMDB and in the
    /// overlay, deleted and never-written keys, other tables, in the order asked.
    @Test func aBatchOfPointReadsAnswersAsSingleReads() throws {
        try withStore(busyOptions()) { store, _ in
            for index in 0..<10 { try store.put("k\(index)", "v\(index)") }
            try store.put("x", "other", in: "second")
            try store.flush()
            var batch = WriteBatch()
            batch.put("new", forKey: "k2")
            batch.delete("k3")
            try store.commit(batch)  // possibly still in the overlay
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let keys: [(String, [UInt8])] = ["k2", "k3", "missing", "k7", "k0"].map { (WriteBatch.defaultTable, Array($0.utf8)) }
                + [("second", Array("x".utf8)), ("absent-table", Array("k1".utf8))]
            var batched: [(Int, [UInt8]?, UInt64)] = []
            try snapshot.visitValues(count: keys.count, key: { keys[$0] }) { position, value, version in
                batched.append((position, value.map { Array($0) }, version))
            }
            #expect(batched.map(\.0) == Array(keys.indices))
            for (position, value, version) in batched {
                let single = try snapshot.withValue(forKey: keys[position].1, in: keys[position].0) { ($0.map { Array($0) }, $1) }
                #expect(value == single.0 && version == single.1, "key \(position)")
            }
            #expect(batched[0].1 == Array("new".utf8) && batched[1].1 == nil && batched[5].1 == Array("other".utf8))
        }
    }

    /// Reads by eight-byte big-endian keys answer each key as a single read does: records in
    /// LMDB and in the overlay, deleted in either, never written, and a table with no records.
    @Test func readsByBigEndianKeysAnswerAsSingleReads() throws {
        try withStore(lazyOptions()) { store, _ in
            func key(_ number: UInt64) -> [UInt8] { withUnsafeBytes(of: number.bigEndian) { Array($0) } }
            var stored = WriteBatch()
            for number in UInt64(1)...6 { stored.put(bytes("v\(number)"), forKey: key(number), in: "records") }
            try store.commit(stored)
            try store.flush()
            var gone = WriteBatch()
            gone.delete(key(4), in: "records")
            try store.commit(gone)
            try store.flush()
            var pending = WriteBatch()  // kept in the overlay by lazyOptions
            pending.put(bytes("new"), forKey: key(2), in: "records")
            pending.delete(key(3), in: "records")
            pending.put(bytes("v9"), forKey: key(9), in: "records")
            try store.commit(pending)
            var deleted = WriteBatch()
            deleted.delete(key(5), in: "records")
            try store.commit(deleted)
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let numbers: [UInt64] = [2, 3, 9, 1, 5, 4, 7, 6, 0, .max]
            for table in ["records", "absent-table"] {
                var batched: [(Int, [UInt8]?, UInt64)] = []
                try snapshot.visitValues(in: table, bigEndianKeys: numbers) { position, value, version in
                    batched.append((position, value.map { Array($0) }, version))
                }
                #expect(batched.map(\.0) == Array(numbers.indices))
                for (position, value, version) in batched {
                    let single = try snapshot.withValue(forKey: key(numbers[position]), in: table) { ($0.map { Array($0) }, $1) }
                    #expect(value == single.0 && version == single.1, "\(table) key \(numbers[position])")
                }
            }
            var values: [[UInt8]?] = []
            try snapshot.visitValues(in: "records", bigEndianKeys: numbers) { _, value, _ in values.append(value.map { Array($0) }) }
            #expect(values == [bytes("new"), nil, bytes("v9"), bytes("v1"), nil, nil, nil, bytes("v6"), nil, nil])
        }
    }

    /// A closed snapshot's transaction is reset and renewed by the next snapshot (IdleReaders):
    /// the renewed one reads the latest commit, tables LMDB opened since included, never what
    /// the old snapshot saw; and the store keeps no more than its capacity of them.
    @Test func aSnapshotOnARenewedTransactionSeesTheLatestCommitAndNewTables() throws {
        try withStore(busyOptions()) { store, _ in
            try store.put("k", "old")
            try store.flush()
            let first = try store.snapshot()
            #expect(text(try first.get("k")?.value) == "old")
            first.close()
            #expect(store.idleReaderCount == 1)
            var batch = WriteBatch()
            batch.put("new", forKey: "k")
            batch.put("fresh", forKey: "t", in: "later")
            try store.commit(batch)
            try store.flush()  // in LMDB, the new table too, not only in the overlay
            let renewed = try store.snapshot()
            #expect(store.idleReaderCount == 0)
            #expect(text(try renewed.get("k")?.value) == "new")
            #expect(text(try renewed.get("t", in: "later")?.value) == "fresh")
            #expect(try renewed.scan(in: "later").count == 1)
            renewed.close()
            let many = try (0..<10).map { _ in try store.snapshot() }
            for snapshot in many { snapshot.close() }
            #expect(store.idleReaderCount == 4)
        }
    }

    /// A closed snapshot's holder (its lock, cursors and table handles: SnapshotTransaction)
    /// serves the next snapshot, whose reads see the latest commit through the kept cursor;
    /// the closed snapshot's reads fail with `snapshotClosed`, even from inside a read of the
    /// new one on the same thread, and its close does not end the new one's transaction.
    @Test func aClosedSnapshotsHolderServesTheNextWithoutLettingTheOldOneRead() throws {
        try withStore(busyOptions()) { store, _ in
            try store.put("k", "old")
            try store.flush()
            let first = try store.snapshot()
            #expect(try first.scan().map { text($0.value) } == ["old"])
            first.close()
            #expect(store.snapshotHolderCount == 1)
            try store.put("k", "new")
            try store.flush()
            let second = try store.snapshot()
            #expect(store.snapshotHolderCount == 0, "the next snapshot takes the kept holder")
            #expect(try second.scan().map { text($0.value) } == ["new"])
            #expect(throws: KVError.snapshotClosed) { _ = try first.get("k") }
            #expect(throws: KVError.snapshotClosed) { _ = try first.scan() }
            var insideRead: Result<Record?, KVError>? = nil
            try second.forEach { _, _, _ in
                insideRead = Result { () throws(KVError) in try first.get("k") }
                return true
            }
            #expect(throws: KVError.snapshotClosed) { _ = try insideRead?.get() }
            first.close()
            #expect(text(try second.get("k")?.value) == "new", "the old snapshot's close leaves the new one open")
            second.close()
            let many = try (0..<20).map { _ in try store.snapshot() }
            for snapshot in many { snapshot.close() }
            #expect(store.snapshotHolderCount == 8)
        }
    }

    @Test func aSnapshotNeverSeesLaterCommitsWhileTheApplierRuns() throws {
        try withStore(busyOptions()) { store, _ in
            for index in 0..<100 { try store.put("k\(index)", "old") }
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let version = snapshot.version
            // Later commits, applied to LMDB and checkpointed behind the snapshot's back.
            for round in 0..<20 {
                var batch = WriteBatch()
                for index in 0..<100 { batch.put("new\(round)", forKey: "k\(index)") }
                batch.put("x", forKey: "added\(round)")
                batch.delete("k\(round)")
                try store.commit(batch)
                if round % 5 == 0 { try store.checkpoint() }
            }
            try store.flush()
            #expect(try store.stats().appliedVersion > version)
            for index in 0..<100 {
                let record = try #require(try snapshot.get("k\(index)"))
                #expect(text(record.value) == "old" && record.version == 1)
            }
            #expect(try snapshot.get("added3") == nil)
            #expect(try snapshot.scan().count == 100)
            #expect(snapshot.version == version)
            // A new snapshot sees everything.
            let latest = try store.snapshot()
            #expect(text(try latest.get("k50")?.value) == "new19")
            #expect(try latest.get("k19") == nil)  // deleted after the put of the last round
            #expect(text(try latest.get("k3")?.value) == "new19")  // deleted in round 3, put again later
            #expect(try latest.get("k50")?.version == 21)
            latest.close()
        }
    }

    @Test func snapshotsStayConsistentUnderConcurrentWriters() throws {
        // Writers move value between two keys with a conditional batch; every snapshot must
        // see the sum unchanged, whether its data comes from the overlay or LMDB.
        try withStore(busyOptions()) { store, _ in
            var batch = WriteBatch()
            batch.put("500", forKey: "a")
            batch.put("500", forKey: "b")
            try store.commit(batch)
            let stop = ConditionLock(false)
            let writers = (0..<4).map { _ in
                startThread {
                    while !stop.withLock({ $0 }) {
                        let snapshot = try! store.snapshot()
                        let a = try! snapshot.get("a")!, b = try! snapshot.get("b")!
                        snapshot.close()
                        var move = WriteBatch()
                        move.put(String(Int(text(a.value)!)! - 1), forKey: "a", if: .version(a.version))
                        move.put(String(Int(text(b.value)!)! + 1), forKey: "b", if: .version(b.version))
                        _ = try? store.commit(move)
                    }
                }
            }
            var reads = 0
            let deadline = monotonicSeconds() + 1.0
            while monotonicSeconds() < deadline {
                let snapshot = try store.snapshot()
                let a = Int(text(try snapshot.get("a")?.value)!)!
                let b = Int(text(try snapshot.get("b")?.value)!)!
                let scanned = try snapshot.scan().map { Int(text($0.value)!)! }
                #expect(a + b == 1000)
                #expect(scanned.reduce(0, +) == 1000)
                snapshot.close()
                reads += 1
            }
            stop.withLock { $0 = true }
            for writer in writers { pthread_join(writer, nil) }
            #expect(reads > 10)
            #expect(try store.stats().commitVersion > 10)
        }
    }

    @Test func scansMergeTheOverlayWithLMDBInOrder() throws {
        try withStore(lazyOptions()) { store, _ in
            var batch = WriteBatch()
            for key in ["a", "c", "e", "g", "i"] { batch.put("lmdb-\(key)", forKey: key) }
            try store.commit(batch)
            try store.flush()  // these are in LMDB now
            batch = WriteBatch()
            for key in ["b", "c", "f", "j"] { batch.put("overlay-\(key)", forKey: key) }
            batch.delete("e")
            try store.commit(batch)  // these stay in the overlay (the applier is lazy)
            #expect(try store.stats().overlayCommits == 1)
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let all = try snapshot.scan().map { "\(text($0.key)!)=\(text($0.value)!)" }
            #expect(all == ["a=lmdb-a", "b=overlay-b", "c=overlay-c", "f=overlay-f", "g=lmdb-g", "i=lmdb-i", "j=overlay-j"])
            let reversed = try snapshot.scan(reverse: true).map { text($0.key)! }
            #expect(reversed == ["j", "i", "g", "f", "c", "b", "a"])
            #expect(try snapshot.scan(limit: 3).map { text($0.key)! } == ["a", "b", "c"])
            #expect(try snapshot.scan(limit: 0).isEmpty)
            #expect(try snapshot.scan(reverse: true, limit: 2).map { text($0.key)! } == ["j", "i"])
            #expect(try snapshot.scan(from: bytes("c"), to: bytes("h")).map { text($0.key)! } == ["c", "f", "g"])
            #expect(try snapshot.scan(from: bytes("c"), to: bytes("h"), reverse: true).map { text($0.key)! } == ["g", "f", "c"])
            #expect(try snapshot.get("c")?.version == 2)
        }
    }

    @Test func prefixScansStayInsideThePrefix() throws {
        try withStore(busyOptions()) { store, _ in
            var batch = WriteBatch()
            for key in ["user/1", "user/2", "user/10", "usex", "use", "user", "v"] { batch.put(key, forKey: key) }
            batch.put([1], forKey: [0x61, 0xFF])
            batch.put([2], forKey: [0x61, 0xFF, 0xFF])
            batch.put([3], forKey: [0x62])
            try store.commit(batch)
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            #expect(try snapshot.scan(prefix: bytes("user/")).map { text($0.key)! } == ["user/1", "user/10", "user/2"])
            #expect(try snapshot.scan(prefix: bytes("user/"), reverse: true).map { text($0.key)! } == ["user/2", "user/10", "user/1"])
            #expect(try snapshot.scan(prefix: bytes("user")).count == 4)
            // A prefix ending in 0xFF: its successor carries into the byte before.
            #expect(try snapshot.scan(prefix: [0x61, 0xFF]).map(\.value) == [[1], [2]])
        }
    }

    @Test func zeroCopyReadsSeeTheSameBytesAsCopyingReads() throws {
        try withStore(busyOptions()) { store, _ in
            try store.put("k", String(repeating: "z", count: 300))
            try store.flush()
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let (count, version) = try snapshot.withValue(forKey: bytes("k")) { value, version in
                (value?.count ?? -1, version)
            }
            #expect(count == 300 && version == 1)
            #expect(try snapshot.withValue(forKey: bytes("missing")) { value, _ in value == nil })
            var visited = 0
            try snapshot.forEach { key, value, _ in
                visited += key.count + value.count
                return true
            }
            #expect(visited == 301)
        }
    }

    @Test func aClosedSnapshotThrowsAndTheStoreReportsOpenOnes() throws {
        try withStore { store, _ in
            try store.put("k", "v")
            let first = try store.snapshot()
            let second = try store.snapshot()
            let stats = try store.stats()
            #expect(stats.openSnapshots == 2)
            #expect(stats.oldestSnapshotVersion == first.version)
            #expect((stats.oldestSnapshotAge ?? -1) >= 0)
            first.close()
            second.close()
            #expect(throws: KVError.snapshotClosed) { _ = try first.get("k") }
            #expect(try store.stats().openSnapshots == 0)
            #expect(try store.stats().oldestSnapshotVersion == nil)
        }
    }

    @Test func closingTheStoreEndsItsSnapshots() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.path)
        try store.put("k", "v")
        let snapshot = try store.snapshot()
        store.close()
        #expect(throws: KVError.snapshotClosed) { _ = try snapshot.get("k") }
    }

    @Test func overlayEntriesKeptForAnOldSnapshotAreFreedWhenItCloses() throws {
        try withStore(lazyOptions()) { store, _ in
            for index in 0..<50 { try store.put("k\(index)", "v") }
            let snapshot = try store.snapshot()  // reads the 50 unapplied commits from the overlay
            try store.flush()
            #expect(try store.stats().overlayBytes > 0)
            #expect(try snapshot.get("k7") != nil)
            snapshot.close()
            #expect(try store.stats().overlayBytes == 0)
        }
    }

    @Test func writersWaitWhenTheOverlayIsFullAndNothingIsLost() throws {
        var options = busyOptions()
        options.overlayLimit = 32 << 10
        options.applyThreshold = 1 << 30
        options.applyInterval = 0.05
        try withStore(options) { store, _ in
            let value = String(repeating: "v", count: 200)
            DispatchApply.run(4) { thread in
                for index in 0..<200 { try! store.put("t\(thread)-\(index)", value) }
            }
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            #expect(try snapshot.scan().count == 800)
            #expect(try store.stats().overlayBytes <= (32 << 10) + 4096)
        }
    }
}
