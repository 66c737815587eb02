import CairnTestSupport
import Contexts
@testable import EtcdStorage
import Foundation
import Locking
import Testing

/// Saves made elsewhere reach root contexts through the etcd watch.
@Suite("etcd watch")
struct EtcdWatchTests {
    @Test("a save through another store reaches a root context that merges automatically, and only such a one")
    func saveElsewhereIsMerged() throws {
        try withEtcdStore { objects, configuration in
            let id = try insertPerson(objects, "Ann", 30)
            let watching = objects.newBackgroundContext(name: "watching")
            let still = objects.newBackgroundContext(name: "not merging")
            try watching.performAndWait {
                watching.automaticallyMergesChangesFromParent = true
                _ = try watching.existingObject(with: id)
            }
            try still.performAndWait { _ = try still.existingObject(with: id) }
            try withEtcdStore(configuration) { elsewhere, _ in
                let editor = elsewhere.newBackgroundContext(name: "editor")
                try editor.performAndWait {
                    try editor.existingObject(with: id)["age"] = .int(31)
                    try editor.save()
                }
            }
            var merged = false
            for _ in 0..<200 where !merged {
                merged = try watching.performAndWait { try watching.existingObject(with: id)["age"] == .int(31) }
                if !merged { usleep(25_000) }
            }
            #expect(merged, "the other store's save did not reach the merging context within 5 s")
            let stale = try still.performAndWait { try still.existingObject(with: id)["age"] }
            #expect(stale == .int(30), "a context that does not merge automatically keeps what it read")
            // Its own saves are not echoed back as saves from elsewhere: the merged context can
            // save on top without a conflict.
            try watching.performAndWait {
                try watching.existingObject(with: id)["name"] = .string("Anna")
                try watching.save()
                #expect(watching.lastSaveConflicts.isEmpty)
            }
        }
    }

    @Test("no watch until a root context merges automatically; opened then, it still brings a save made after the store's last read")
    func watchOpensOnDemand() throws {
        try withEtcdStore { objects, configuration in
            let storage = try #require(objects.storage as? EtcdStorage)
            let id = try insertPerson(objects, "Ann", 30)
            let later = objects.newBackgroundContext(name: "merging later")
            try later.performAndWait { _ = try later.existingObject(with: id) }
            let child = objects.newBackgroundContext(name: "parent").newChildContext(name: "child")
            child.automaticallyMergesChangesFromParent = true
            #expect(!storage.isWatching, "nothing consumes saves made elsewhere yet (a child merges its parent's saves)")
            try withEtcdStore(configuration) { elsewhere, _ in
                let editor = elsewhere.newBackgroundContext(name: "editor")
                try editor.performAndWait {
                    try editor.existingObject(with: id)["age"] = .int(31)
                    try editor.save()
                }
            }
            later.automaticallyMergesChangesFromParent = true
            #expect(storage.isWatching)
            var merged = false
            for _ in 0..<200 where !merged {
                merged = try later.performAndWait { try later.existingObject(with: id)["age"] == .int(31) }
                if !merged { usleep(25_000) }
            }
            #expect(merged, "the save made before the watch opened, after the store's last read, did not arrive within 5 s")
        }
    }

    @Test("a watch behind a compaction reads back what changed and resumes")
    func compactedWatchCatchesUp() throws {
        // A cluster of its own: the compaction must not expire other tests' read views and watches.
        let cluster = try EtcdCluster.startWithRetries(memberCount: 1)
        defer { cluster.stop() }
        try withEtcdStore(cluster.configuration(prefix: "watch-compaction")) { objects, configuration in
            let first = try insertPerson(objects, "Ann", 30)
            let storage = EtcdStorage(configuration: configuration)
            defer { storage.close() }
            // The commit version is the newest commit (Ann's, or later): watch from the next one.
            let from = Int64(try storage.commitVersion()) + 1
            let second = try insertPerson(objects, "Bob", 40)
            // Compact past `from`: a watch from there is cancelled and must catch up.
            _ = try storage.client.call("kv/compaction", WireCompactionRequest(revision: WireInt(Int64(try storage.commitVersion()))),
                                        as: WireStatusResponse.self, isWrite: true)
            let seen = ConditionLock<[UInt64]>([])
            let log = ConditionLock<[String]>([])
            storage.startWatching(from: from) { commit in
                let keys = commit.changes.compactMap { StorageMapping.primaryKey(of: $0.key) }
                log.withLock { $0.append("rev \(commit.revision): \(keys) \(commit.changes.map(\.change))") }
                seen.withLock { $0 += keys }
                seen.broadcast()
            }
            let caughtUp = seen.wait(until: { $0.contains(second.primaryKey!) }, timeout: 10) { _, ready in ready }
            #expect(caughtUp, "the catch-up read did not deliver the record written after the watch's revision")
            #expect(!seen.value.contains(first.primaryKey!), "a record older than the watch's revision is not a change: from \(from), \(log.value)")
            // And it resumed: a later save arrives too.
            let third = try insertPerson(objects, "Cid", 50)
            let resumed = seen.wait(until: { $0.contains(third.primaryKey!) }, timeout: 10) { _, ready in ready }
            #expect(resumed, "the watch did not resume after catching up")
        }
    }
}
