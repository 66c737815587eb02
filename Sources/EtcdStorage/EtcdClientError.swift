/// A failure of one call to the etcd cluster, before it becomes a ``StorageError``.
enum EtcdClientError: Error, Sendable, CustomStringConvertible {
    /// No endpoint answered within the deadline; `last` is the last failure seen.
    case unreachable(endpoints: [String], last: String)
    /// A write was sent and no reply came (a timeout or a reset): it may or may not have been
    /// applied. Only the caller, which knows what it compared, can resolve it.
    case outcomeUnknown(endpoint: String, reason: String)
    /// The cluster refused the request: its gRPC status code and message.
    case server(code: Int, message: String)
    /// The revision asked for was compacted away.
    case compacted(revision: Int64)
    /// A reply the client cannot read.
    case malformedReply(path: String, reason: String)

    var description: String {
        switch self {
        case let .unreachable(endpoints, last):
            return "no etcd endpoint answered (\(endpoints.joined(separator: ", "))): \(last)"
        case let .outcomeUnknown(endpoint, reason):
            return "etcd at \(endpoint) did not answer a write (\(reason)); its outcome is unknown"
        case let .server(code, message):
            return "etcd refused the request (gRPC code \(code)): \(message)"
        case let .compacted(revision):
            return "etcd revision \(revision) was compacted away"
        case let .malformedReply(path, reason):
            return "unreadable etcd reply to \(path): \(reason)"
        }
    }

    /// gRPC's OUT_OF_RANGE with etcd's compaction message.
    static func isCompaction(code: Int, message: String) -> Bool {
        code == 11 && message.contains("compacted")
    }
}
