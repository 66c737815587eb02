/// Where an etcd cluster is, which part of its key space a store uses, and the cluster's
/// limits, for ``Contexts/ObjectStore/init(etcd:schema:options:)``.
///
/// ```swift
/// var cluster = try EtcdConfiguration(url: "etcd://10.0.0.1:2379,10.0.0.2:2379/mytool")
/// cluster.maxTxnOps = 1024          // as the cluster's --max-txn-ops
/// ```
public struct EtcdConfiguration: Sendable, Equatable {
    /// The members' client addresses, `HOST:PORT` (or `http://HOST:PORT`; plain HTTP only, see
    /// Docs/Etcd.md for TLS).
    public var endpoints: [String]
    /// The key prefix every key of the store goes under (a store per prefix).
    public var prefix: String
    /// The longest one request may wait on one member before the client tries the next, in
    /// seconds. Default 2: longer than a loaded cluster's commit, shorter than an election.
    public var requestTimeout: Double = 2
    /// The longest one call may keep trying members, in seconds. Default 20.
    public var deadline: Double = 20
    /// The cluster's `--max-txn-ops` (etcd's default 128): a save needing more compares or
    /// operations fails with `.limitExceeded` before it is sent.
    public var maxTxnOps: Int = 128
    /// The cluster's `--max-request-bytes` (etcd's default 1.5 MiB): a larger save fails with
    /// `.limitExceeded` before it is sent.
    public var maxRequestBytes: Int = 1_572_864

    /// A configuration for `endpoints` and `prefix`, with the defaults above.
    public init(endpoints: [String], prefix: String) {
        self.endpoints = endpoints
        self.prefix = prefix
    }

    /// Parses `etcd://HOST:PORT[,HOST:PORT...]/PREFIX`.
    ///
    /// - Throws: ``EtcdURLError`` naming what is wrong with `url`.
    public init(url: String) throws(EtcdURLError) {
        let scheme = "etcd://"
        guard url.hasPrefix(scheme) else { throw EtcdURLError(url: url, reason: "it does not start with etcd://") }
        let rest = url.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: "/") else { throw EtcdURLError(url: url, reason: "it has no /PREFIX") }
        let hosts = rest[..<slash].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let prefix = String(rest[rest.index(after: slash)...])
        guard !prefix.isEmpty else { throw EtcdURLError(url: url, reason: "its PREFIX is empty") }
        for host in hosts {
            guard let colon = host.lastIndex(of: ":"), !host[..<colon].isEmpty,
                  let port = Int(host[host.index(after: colon)...]), (1...65535).contains(port)
            else { throw EtcdURLError(url: url, reason: "'\(host)' is not HOST:PORT") }
        }
        self.init(endpoints: hosts, prefix: prefix)
    }

    /// The URL form, `etcd://HOST:PORT,.../PREFIX`.
    public var url: String { "etcd://" + endpoints.joined(separator: ",") + "/" + prefix }

    /// Whether `location` names an etcd store rather than a directory.
    public static func isURL(_ location: String) -> Bool { location.hasPrefix("etcd://") }

    var clientConfiguration: EtcdClient.Configuration {
        EtcdClient.Configuration(
            endpoints: endpoints.map { $0.hasPrefix("http://") ? $0 : "http://" + $0 },
            requestTimeout: requestTimeout, deadline: deadline)
    }
}

/// An `etcd://` URL that does not parse, and why.
public struct EtcdURLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL as given.
    public let url: String
    /// What is wrong with it.
    public let reason: String

    public var description: String { "bad etcd URL '\(url)': \(reason) (expected etcd://HOST:PORT[,HOST:PORT...]/PREFIX)" }
}
