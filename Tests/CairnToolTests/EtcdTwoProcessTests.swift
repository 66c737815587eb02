import CairnTestSupport
import Contexts
import EtcdStorage
import Foundation
import Locking
import Testing

/// Two `cairn update` processes, each talking to a different member, editing the same object
/// at once: their saves conflict, objectTrump merges them property by property, and neither
/// process's last value is lost. Then `cairn fetch` reads the result back through etcd.
@Suite("Two cairn processes on etcd")
struct EtcdTwoProcessTests {
    @Test("concurrent saves from two processes on two members: conflicts resolved, nothing lost")
    func twoProcessesEditTheSameObject() throws {
        let cluster = try EtcdCluster.shared()
        let prefix = "two-processes-\(UUID().uuidString)"
        let schema = try Schema([
            EntityDescription("Person", attributes: [
                AttributeDescription("name", .string),
                AttributeDescription("age", .int),
            ]),
        ])
        let objects = try ObjectStore(etcd: EtcdConfiguration(endpoints: cluster.endpoints, prefix: prefix), schema: schema)
        let seed = objects.newBackgroundContext(name: "seed")
        let id = try seed.performAndWait {
            let person = seed.insert(entity: "Person")
            person["name"] = .string("Ann")
            person["age"] = .int(0)
            try seed.save()
            return person.objectID
        }
        objects.close()
        let key = String(try #require(id.primaryKey))
        // A pause between saves, as a tool's edits have, and room for retries: without them,
        // the process whose save conflicts (three round trips to resolve) can be starved by
        // one that never does, on a loaded machine.
        let rounds = 60
        let endpoints = cluster.endpoints
        let runs = ConditionLock<[String: ToolRun]>([:])
        let threads = [("name", "A{i}", endpoints[0]), ("age", "{i}", endpoints[1])].map { attribute, value, endpoint in
            Thread {
                let run = try? cairn(["update", "etcd://\(endpoint)/\(prefix)", "Person", key, "\(attribute)=\(value)",
                                      "--policy", "objectTrump", "--repeat", "\(rounds)", "--pause", "5", "--attempts", "100"], input: [], timeout: 120)
                runs.withLock { $0[attribute] = run }
            }
        }
        for thread in threads { thread.start() }
        while threads.contains(where: { !$0.isFinished }) { usleep(20_000) }
        let name = try #require(runs.value["name"]), age = try #require(runs.value["age"])
        #expect(name.status == 0, "\(name)")
        #expect(age.status == 0, "\(age)")
        let conflicts = [name, age].compactMap { run in
            run.output.split(separator: ";").dropFirst().first.flatMap { Int($0.split(separator: " ").first ?? "") }
        }.reduce(0, +)
        #expect(conflicts > 0, "two processes saving the same object \(rounds) times each never conflicted: \(name.output) \(age.output)")

        let fetched = try cairn("fetch", "etcd://\(endpoints[2])/\(prefix)", "Person", "--json")
        #expect(fetched.status == 0, "\(fetched)")
        #expect(fetched.output.contains("\"name\":\"A\(rounds)\""), "\(fetched.output)")
        #expect(fetched.output.contains("\"age\":\(rounds)"), "\(fetched.output)")
    }
}
