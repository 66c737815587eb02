import CairnTestSupport
import KVEngine
import Locking
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `Options.maxSnapshotLag` and `maxSnapshotAge`: the applier ends snapshots that pin
/// LMDB pages for too long, and their reads fail with a typed error.
@Suite struct SnapshotExpiryTests {
    func options(lag: UInt64? = nil, age: Double? = nil) -> Store.Options {
        var options = busyOptions()
        options.maxSnapshotLag = lag
        options.maxSnapshotAge = age
        return options
    }

    /// Reads `key` from `snapshot` and returns the error's expiry reason, or nil if it read.
    func expiryReason(_ snapshot: Snapshot, _ key: String) -> String? {
        do {
            _ = try snapshot.get(key)
            return nil
        } catch {
            guard case .snapshotExpired(let version, let reason) = error else {
                Issue.record("expected snapshotExpired, got \(error)")
                return "wrong error"
            }
            #expect(version == snapshot.version)
            return reason
        }
    }

    @Test func aSnapshotTooFarBehindIsExpiredAndSaysWhy() throws {
        try withStore(options(lag: 5)) { store, _ in
            try store.put("k", "old")
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for index in 0..<10 { try store.put("k", "new\(index)") }
            try store.flush()
            let reason = try #require(expiryReason(snapshot, "k"))
            #expect(reason.contains("maxSnapshotLag 5"))
            #expect(try store.stats().expiredSnapshots == 1)
            #expect(try store.stats().openSnapshots == 0)
            // Scans fail the same way; closing an expired snapshot is harmless.
            #expect(throws: KVError.self) { try snapshot.scan() }
            snapshot.close()
            #expect(try store.string("k") == "new9")
        }
    }

    @Test func aSnapshotWithinTheLagKeepsReadingItsVersion() throws {
        try withStore(options(lag: 100)) { store, _ in
            try store.put("k", "old")
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for index in 0..<50 { try store.put("k", "new\(index)") }
            try store.flush()
            #expect(text(try snapshot.get("k")?.value) == "old")
            #expect(try store.stats().expiredSnapshots == 0)
        }
    }

    @Test func aSnapshotOlderThanTheAgeIsExpiredAtTheNextApply() throws {
        try withStore(options(age: 0.05)) { store, _ in
            try store.put("k", "old")
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            #expect(text(try snapshot.get("k")?.value) == "old")  // young: reads
            usleep(100_000)
            try store.put("k", "new")
            try store.flush()
            let reason = try #require(expiryReason(snapshot, "k"))
            #expect(reason.contains("maxSnapshotAge"))
            // A fresh snapshot reads, and the store goes on.
            #expect(try store.string("k") == "new")
        }
    }

    @Test func withoutABoundSnapshotsNeverExpire() throws {
        try withStore(busyOptions()) { store, _ in
            try store.put("k", "old")
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for index in 0..<200 { try store.put("k\(index % 7)", "v\(index)") }
            try store.flush()
            #expect(text(try snapshot.get("k")?.value) == "old")
            #expect(try store.stats().expiredSnapshots == 0)
        }
    }

    /// A read in progress when the applier expires its snapshot finishes with the
    /// snapshot's own data; the expiry waits for it.
    @Test func aReadInProgressFinishesBeforeItsSnapshotExpires() throws {
        try withStore(options(lag: 1)) { store, _ in
            for index in 0..<50 { try store.put("k\(index)", "old") }
            try store.flush()
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let seen = ConditionLock<[String]>([])
            let writer = startThread {
                for index in 0..<50 { try! store.put("k\(index)", "new") }
                try! store.flush()
            }
            try snapshot.forEach { key, value, _ in
                usleep(1_000)  // the writer and the applier run meanwhile
                seen.withLock { $0.append(String(decoding: value, as: UTF8.self)) }
                return true
            }
            pthread_join(writer, nil)
            #expect(seen.withLock { $0.count } == 50)
            #expect(seen.withLock { $0.allSatisfy { $0 == "old" } })
            try store.flush()
            #expect(expiryReason(snapshot, "k1") != nil)
        }
    }
}
