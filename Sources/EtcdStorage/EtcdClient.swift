import Dispatch
import Foundation
import Locking

/// A minimal blocking client of etcd v3's JSON gateway: POSTs a message to one endpoint with a
/// short timeout, and moves on to the next endpoint when one does not answer.
///
/// Reads are retried on the next endpoint until ``Configuration/deadline``. A write that was
/// sent but got no reply is never resent here: it throws
/// ``EtcdClientError/outcomeUnknown(endpoint:reason:)`` for the caller to resolve by reading
/// what it compared (EtcdStorage+Commit.swift).
///
/// `Sendable`: the endpoint cursor is behind a lock; the transport guards its own pool.
final class EtcdClient: Sendable {
    /// Where the cluster is and how long to wait.
    struct Configuration: Sendable {
        /// Base URLs of the members' client endpoints, such as `http://10.0.0.1:2379`.
        var endpoints: [String]
        /// The longest one request may take on one endpoint, in seconds.
        var requestTimeout: Double = 2
        /// The longest a call may keep rotating through endpoints, in seconds.
        var deadline: Double = 20
    }

    let configuration: Configuration
    /// `configuration.endpoints` as host and port, parsed once (nil: not `[http://]HOST:PORT`).
    let addresses: [(host: String, port: Int)?]
    private let transport = HTTPTransport()
    /// The endpoint the next request goes to first (guarded by its lock).
    private let current = ConditionLock<Int>(0)

    init(configuration: Configuration) {
        precondition(!configuration.endpoints.isEmpty, "an etcd client needs an endpoint")
        self.configuration = configuration
        addresses = configuration.endpoints.map(Self.hostAndPort)
    }

    func invalidate() {
        transport.closeAll()
    }

    /// The endpoint requests currently go to first.
    var preferredEndpoint: String { configuration.endpoints[current.value % configuration.endpoints.count] }

    /// Sends `request` to `path` (such as "kv/range") and decodes the reply.
    ///
    /// `isWrite`: whether a request that may have reached the cluster must not be resent.
    func call<Request: Encodable, Reply: Decodable>(
        _ path: String, _ request: Request, as reply: Reply.Type, isWrite: Bool
    ) throws(EtcdClientError) -> Reply {
        let body: Data
        // A request with a hand-written encoding (WireJSONWriter.swift) goes through it.
        if let writable = request as? any WireJSONWritable {
            body = WireJSONWriter.body(of: writable)
        } else {
            do { body = try JSONEncoder().encode(request) } catch {
                preconditionFailure("etcd request \(path) does not encode: \(error)")
            }
        }
        let start = DispatchTime.now().uptimeNanoseconds
        var lastFailure = "no attempt"
        var attempt = 0
        while true {
            let index = current.value
            let endpoint = configuration.endpoints[index % configuration.endpoints.count]
            switch post(body, to: index % configuration.endpoints.count, path: path) {
            case .reply(let status, let data):
                if status == 200 {
                    do { return try Self.decode(Reply.self, from: data) } catch {
                        throw .malformedReply(path: path, reason: "\(error)")
                    }
                }
                let failure = (try? WireJSONReader.read(WireErrorBody.self, from: data)) ?? WireErrorBody()
                let code = failure.code ?? -1
                let message = failure.message ?? failure.error ?? "HTTP status \(status)"
                // UNAVAILABLE (no leader, member stopping) is the member's state, not the
                // request's: another member may serve it, and nothing was applied.
                guard code == 14 || status == 503 else {
                    if EtcdClientError.isCompaction(code: code, message: message) {
                        throw .compacted(revision: -1)
                    }
                    throw .server(code: code, message: message)
                }
                lastFailure = "\(endpoint): \(message)"
            case .notSent(let reason):
                lastFailure = "\(endpoint): \(reason)"
            case .noReply(let reason):
                if isWrite { rotate(from: index); throw .outcomeUnknown(endpoint: endpoint, reason: reason) }
                lastFailure = "\(endpoint): \(reason)"
            }
            rotate(from: index)
            attempt += 1
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            guard elapsed < configuration.deadline else {
                throw .unreachable(endpoints: configuration.endpoints, last: lastFailure)
            }
            // A full round of endpoints failed: wait a little (an election takes about a
            // second) before the next round.
            if attempt % configuration.endpoints.count == 0 { usleep(100_000) }
        }
    }

    /// A reply through its hand-written reader (WireJSONReader.swift) when it has one.
    private static func decode<Reply: Decodable>(_ type: Reply.Type, from data: Data) throws -> Reply {
        if let readable = Reply.self as? any WireJSONReadable.Type {
            return try readable.init(json: WireJSONReader.parse(data)) as! Reply
        }
        return try JSONDecoder().decode(Reply.self, from: data)
    }

    private func rotate(from index: Int) {
        current.withLock { if $0 == index { $0 = index &+ 1 } }
    }

    private func post(_ body: Data, to endpoint: Int, path: String) -> HTTPExchange {
        guard let (host, port) = addresses[endpoint] else { return .notSent("bad endpoint \(configuration.endpoints[endpoint])") }
        return transport.post(host: host, port: port, path: "/v3/" + path, body: body, timeout: configuration.requestTimeout)
    }

    /// "http://HOST:PORT" or "HOST:PORT" as its parts.
    static func hostAndPort(_ endpoint: String) -> (String, Int)? {
        var rest = Substring(endpoint)
        if rest.hasPrefix("http://") { rest = rest.dropFirst("http://".count) }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]) else { return nil }
        return (String(rest[..<colon]), port)
    }
}
