import CairnTestSupport
import Contexts
import EtcdStorage
import Foundation
import Locking
import Testing

/// kill -9 of the leader, then of a follower, while saves run: every acknowledged save is
/// there afterwards, and saves go on through the surviving members. A cluster of its own, so
/// the shared one other suites use is never disturbed.
@Suite("etcd failover")
struct EtcdFailoverTests {
    @Test("kill -9 of the leader and of a follower during saves loses no acknowledged save")
    func killLeaderAndFollower() throws {
        let cluster = try EtcdCluster.startWithRetries(memberCount: 3)
        defer { cluster.stop() }
        var configuration = EtcdConfiguration(endpoints: cluster.endpoints, prefix: "failover")
        configuration.requestTimeout = 1
        configuration.deadline = 30
        var options = ObjectStore.Options()
        options.saveDurability = .normal
        let objects = try ObjectStore(etcd: configuration, schema: etcdSchema, options: options)
        defer { objects.close() }

        let acknowledged = ConditionLock<[String]>([])
        let failures = ConditionLock<[String]>([])
        let stop = ConditionLock<Bool>(false)
        let writer = Thread {
            let context = objects.newBackgroundContext(name: "writer")
            var index = 0
            while !stop.value {
                index += 1
                let name = "n\(index)"
                do {
                    try context.performAndWait {
                        let person = context.insert(entity: "Person")
                        person["name"] = .string(name)
                        person["age"] = .int(Int64(index))
                        try context.save()
                    }
                    acknowledged.withLock { $0.append(name) }
                } catch {
                    failures.withLock { $0.append("\(name): \(error)") }
                    context.performAndWait { context.rollback() }
                }
                acknowledged.broadcast()
            }
        }
        writer.start()
        defer { stop.withLock { $0 = true } }

        func waitForMoreSaves(_ count: Int, _ label: String) throws {
            let start = acknowledged.value.count
            let reached = acknowledged.wait(until: { $0.count >= start + count }, timeout: 60) { _, ready in ready }
            try #require(reached, "\(label): saves did not go on (\(failures.value.suffix(3)))")
        }

        try waitForMoreSaves(20, "before any kill")
        let leader = try #require(cluster.leaderIndex(), "no leader")
        cluster.kill9(member: leader)
        try waitForMoreSaves(20, "after killing the leader (member \(leader))")
        try cluster.restart(member: leader)
        try waitForMoreSaves(10, "after restarting the old leader")
        let newLeader = try #require(cluster.leaderIndex(), "no leader after the restart")
        let follower = (0..<3).first { $0 != newLeader }!
        cluster.kill9(member: follower)
        try waitForMoreSaves(20, "after killing a follower (member \(follower))")
        stop.withLock { $0 = true }
        while !writer.isFinished { usleep(10_000) }

        // Read back through a fresh store on the surviving members.
        let saved = acknowledged.value
        let reader = objects.newBackgroundContext(name: "reader")
        let stored = try reader.performAndWait {
            try Set(reader.fetch(FetchRequest(entityName: "Person")).compactMap { object -> String? in
                if case .string(let name) = object["name"] { return name }
                return nil
            })
        }
        print("etcd failover: \(saved.count) acknowledged saves, \(failures.value.count) failed, leader was member \(leader), follower \(follower)")
        let lost = saved.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "acknowledged saves lost: \(lost)")
        #expect(saved.count >= 70)
        // A save that failed may or may not be there, but none may fail silently: every
        // failure was a typed storage error.
        #expect(failures.value.count <= 5, "failures: \(failures.value)")
    }
}
