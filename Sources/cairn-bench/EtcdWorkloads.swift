import CairnTestSupport
import Contexts
import EtcdStorage
import Foundation

/// Saves on a loopback etcd cluster: Cairn's contexts against the same conditional txns sent
/// straight to the gateway, so the ratio is what the object layer costs on top of etcd.
enum EtcdWorkloads {
    /// `CAIRN_BENCH_ETCD=HOST:PORT[,…]`: a cluster started by hand instead of one the bench
    /// starts (valgrind cannot start processes through Foundation's `Process`).
    static let profiledEndpoints: [String] =
        ProcessInfo.processInfo.environment["CAIRN_BENCH_ETCD"].map { $0.split(separator: ",").map(String.init) } ?? []

    /// The loopback cluster of `members` members; nil when `CAIRN_BENCH_ETCD` names one.
    static func startCluster(members: Int) throws -> EtcdCluster? {
        guard profiledEndpoints.isEmpty else { return nil }
        do { return try EtcdCluster.startWithRetries(memberCount: members) } catch {
            throw BenchError("etcd-save needs etcd (make deps installs etcd-server): \(error)")
        }
    }

    struct BenchError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static let schema: Schema = {
        do {
            return try Schema([EntityDescription("Counter", attributes: [AttributeDescription("count", .int)])])
        } catch {
            fatalError("etcd bench schema: \(error)")
        }
    }()

    static func saves(_ endpoints: [String], count: Int) throws -> [Contender] {
        let configuration = EtcdConfiguration(endpoints: endpoints, prefix: "bench-\(UUID().uuidString)")
        let objects = try ObjectStore(etcd: configuration, schema: schema)
        let context = objects.newBackgroundContext(name: "bench")
        let id = try context.performAndWait {
            let counter = context.insert(entity: "Counter")
            counter["count"] = .int(0)
            try context.save()
            return counter.objectID
        }
        let cairn = Contender(system: "cairn-etcd", run: { _ in
            let start = Date()
            try context.performAndWait {
                let counter = try context.existingObject(with: id)
                for _ in 0..<count {
                    if case .int(let value) = counter["count"] { counter["count"] = .int(value + 1) }
                    try context.save()
                }
            }
            return Measurement(operations: count, seconds: Date().timeIntervalSince(start))
        }, finish: { objects.close() })
        let gateway = MinimalGatewayClient(endpoint: endpoints[0], key: "bench-raw-\(UUID().uuidString)")
        let raw = Contender(system: "etcd-gateway", run: { _ in
            let start = Date()
            for _ in 0..<count { try gateway.conditionalPut() }
            return Measurement(operations: count, seconds: Date().timeIntervalSince(start))
        })
        return [cairn, raw]
    }
}

/// The least a client must do per save: one txn comparing the record's version, putting
/// the new value, and reading the record back on failure, as hand-written JSON over one
/// keep-alive connection.
final class MinimalGatewayClient {
    let host: String
    let port: Int
    let key: String
    var version: Int64 = 0
    let transport = HTTPTransport()

    init(endpoint: String, key: String) {
        let parts = endpoint.split(separator: ":")
        host = String(parts[0])
        port = Int(parts[1]) ?? 2379
        self.key = Data(key.utf8).base64EncodedString()
    }

    func conditionalPut() throws {
        let value = Data(String(repeating: "v", count: 24).utf8).base64EncodedString()
        let body = #"{"compare":[{"key":"\#(key)","target":"VERSION","result":"EQUAL","version":"\#(version)"}],"success":[{"request_put":{"key":"\#(key)","value":"\#(value)"}}],"failure":[{"request_range":{"key":"\#(key)"}}]}"#
        guard case .reply(200, let data) = transport.post(host: host, port: port, path: "/v3/kv/txn", body: Data(body.utf8), timeout: 5),
              String(decoding: data, as: UTF8.self).contains("\"succeeded\":true")
        else { throw EtcdWorkloads.BenchError("the gateway refused a conditional put") }
        version += 1
    }
}
