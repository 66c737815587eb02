import CairnTestSupport
import Contexts
@testable import EtcdStorage
import Foundation
import Locking
import Policies
import Testing

/// The etcd backend under the object layer: saves, conflicts, reads at a revision, key
/// allocation across stores, limits.
@Suite("etcd storage")
struct EtcdStorageTests {
    @Test("an insert is readable from a second store on the same prefix, through another member")
    func insertAndReadElsewhere() throws {
        try withEtcdStore { objects, configuration in
            let id = try insertPerson(objects, "Ann", 41)
            var other = configuration
            other.endpoints = Array(configuration.endpoints.reversed())
            try withEtcdStore(other) { second, _ in
                let context = second.newBackgroundContext(name: "reader")
                let (name, age) = try context.performAndWait {
                    let object = try context.existingObject(with: id)
                    return (object["name"], object["age"])
                }
                #expect(name == .string("Ann"))
                #expect(age == .int(41))
            }
        }
    }

    @Test("two stores on one prefix: the second save conflicts, storeTrump keeps the store's change")
    func conflictAcrossStores() throws {
        try withEtcdStore { objects, configuration in
            let id = try insertPerson(objects, "Ann", 30)
            try withEtcdStore(configuration) { second, _ in
                let a = objects.newBackgroundContext(name: "A", mergePolicy: .mergeByPropertyStoreTrump)
                let b = second.newBackgroundContext(name: "B")
                try a.performAndWait { _ = try a.existingObject(with: id) }
                try b.performAndWait {
                    try b.existingObject(with: id)["name"] = .string("Anna")
                    try b.save()
                }
                try a.performAndWait {
                    let object = try a.existingObject(with: id)
                    object["age"] = .int(40)
                    try a.save()
                    #expect(a.lastSaveConflicts.count == 1)
                }
                let reader = second.newBackgroundContext(name: "reader")
                let values = try reader.performAndWait {
                    let object = try reader.existingObject(with: id)
                    return (object["name"], object["age"], object.committedVersion)
                }
                #expect(values.0 == .string("Anna"))
                #expect(values.1 == .int(40))
                #expect(values.2 == 3)
            }
        }
    }

    @Test("key allocation from two stores never hands out the same key")
    func allocationAcrossStores() throws {
        try withEtcdStore { objects, configuration in
            try withEtcdStore(configuration) { second, _ in
                let first = EtcdStorage(configuration: configuration)
                let other = EtcdStorage(configuration: configuration)
                defer { first.close(); other.close() }
                let keys = ConditionLockBox()
                DispatchQueue.concurrentPerform(iterations: 8) { round in
                    let storage = round.isMultiple(of: 2) ? first : other
                    if let allocated = try? storage.allocatePrimaryKeys(count: 5, for: "Person") { keys.add(allocated) }
                }
                let all = keys.all
                #expect(all.count == 40)
                #expect(Set(all).count == all.count, "duplicate keys: \(all.sorted())")
                _ = objects
                _ = second
            }
        }
    }

    @Test("a read view keeps its revision; once compacted away, reading it is a typed error")
    func readViewAtRevisionAndCompaction() throws {
        // A cluster of its own: the compaction must not expire other tests' read views and watches.
        let cluster = try EtcdCluster.startWithRetries(memberCount: 1)
        defer { cluster.stop() }
        try withEtcdStore(cluster.configuration(prefix: "view-compaction")) { objects, configuration in
            let id = try insertPerson(objects, "Ann", 30)
            let storage = objects.storage
            let view = try storage.readView()
            defer { view.close() }
            let writer = objects.newBackgroundContext(name: "writer")
            try writer.performAndWait {
                try writer.existingObject(with: id)["age"] = .int(31)
                try writer.save()
            }
            let key = StorageKey(table: "entity:Person", key: [0, 0, 0, 0, 0, 0, 0, UInt8(id.primaryKey!)])
            var seenVersion: UInt64 = 0
            try view.visitValues(forKeys: [key]) { _, _, version in seenVersion = version }
            #expect(seenVersion == 1, "the view reads at its own revision")
            // Compact past the view's revision, then read it again.
            let client = EtcdClient(configuration: configuration.clientConfiguration)
            defer { client.invalidate() }
            let now = try storage.commitVersion()
            _ = try client.call("kv/compaction", WireCompactionRequest(revision: WireInt(Int64(now))), as: WireStatusResponse.self, isWrite: true)
            #expect {
                try view.visitValues(forKeys: [key]) { _, _, _ in }
            } throws: { error in
                guard let error = error as? StorageError, case .readViewExpired(let version) = error.code else { return false }
                return version == view.version && error.message.contains("compacted")
            }
        }
    }

    /// Inserts `count` people (names of `nameBytes` bytes) in one context and saves: the
    /// storage error the save threw, nil when it succeeded.
    static func saveError(_ objects: ObjectStore, inserting count: Int, nameBytes: Int = 4) -> StorageError? {
        let context = objects.newBackgroundContext(name: "bulk")
        return context.performAndWait {
            for index in 0..<count {
                let person = context.insert(entity: "Person")
                person["name"] = .string(String(repeating: "p", count: nameBytes))
                person["age"] = .int(Int64(index))
            }
            do {
                try context.save()
                return nil
            } catch ContextError.storage(let storage) {
                return storage
            } catch {
                return StorageError(code: .corrupt, operation: "test", message: "not a storage error: \(error)")
            }
        }
    }

    @Test("a save beyond --max-txn-ops is a typed error naming the limit and sizes; nothing is written")
    func txnOpsLimit() throws {
        var configuration = try freshConfiguration("limits")
        configuration.maxTxnOps = 16
        try withEtcdStore(configuration) { objects, _ in
            let error = try #require(Self.saveError(objects, inserting: 20))
            // 20 compares and 20 puts; the first record witnesses the txn, no marker is added.
            #expect(error.code == .limitExceeded(limit: "--max-txn-ops", size: 20, maximum: 16))
            #expect(error.message.contains("--max-txn-ops (16)"), "\(error.message)")
            let reader = objects.newBackgroundContext(name: "reader")
            let stored = try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Person")) }
            #expect(stored == 0)
        }
    }

    @Test("a save beyond --max-request-bytes is a typed error naming the limit; nothing is written")
    func requestBytesLimit() throws {
        var configuration = try freshConfiguration("limits")
        configuration.maxRequestBytes = 4_000
        try withEtcdStore(configuration) { objects, _ in
            let error = try #require(Self.saveError(objects, inserting: 2, nameBytes: 3_000))
            guard case .limitExceeded(let limit, let size, let maximum) = error.code else {
                Issue.record("not a limit error: \(error)")
                return
            }
            #expect(limit == "--max-request-bytes" && size > 6_000 && maximum == 4_000)
            let reader = objects.newBackgroundContext(name: "reader")
            let stored = try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Person")) }
            #expect(stored == 0)
        }
    }

    @Test("the cluster's own --max-txn-ops refusal becomes the same typed error")
    func serverSideLimit() throws {
        var configuration = try freshConfiguration("limits")
        configuration.maxTxnOps = 1_000_000   // the client does not know the real limit
        try withEtcdStore(configuration) { objects, _ in
            let error = try #require(Self.saveError(objects, inserting: EtcdCluster.maxTxnOps + 10))
            guard case .limitExceeded(let limit, _, _) = error.code else {
                Issue.record("not a limit error: \(error)")
                return
            }
            #expect(limit == "--max-txn-ops")
        }
    }

    @Test("etcd:// URLs parse, and malformed ones say why")
    func urls() throws {
        let parsed = try EtcdConfiguration(url: "etcd://10.0.0.1:2379,host-b:2380/my/tool")
        #expect(parsed.endpoints == ["10.0.0.1:2379", "host-b:2380"])
        #expect(parsed.prefix == "my/tool")
        #expect(parsed.url == "etcd://10.0.0.1:2379,host-b:2380/my/tool")
        for bad in ["http://a:1/p", "etcd://a:1", "etcd://a:1/", "etcd://a/p", "etcd://a:99999/p", "etcd://,a:1/p"] {
            #expect(throws: EtcdURLError.self, "\(bad)") { try EtcdConfiguration(url: bad) }
        }
    }
}

/// Keys collected from several threads.
final class ConditionLockBox: Sendable {
    private let keys = Locking.ConditionLock<[UInt64]>([])
    func add(_ more: [UInt64]) { keys.withLock { $0 += more } }
    var all: [UInt64] { keys.value }
}
