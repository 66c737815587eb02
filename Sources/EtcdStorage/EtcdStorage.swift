import Contexts
import Foundation
import Locking

/// The object layer's storage on an etcd v3 cluster, through its JSON gateway: a second
/// implementation of the ``ObjectStorage`` seam beside the local engine's.
///
/// A save is one etcd txn (EtcdStorage+Commit.swift), a read view reads at one revision
/// (EtcdReadView.swift), keys come from a sequence record advanced by a compare-and-swap
/// (EtcdStorage+Allocation.swift).
///
/// `Sendable`: the client is; the observer list and the commit marker are behind locks.
final class EtcdStorage: ObjectStorage {
    let configuration: EtcdConfiguration
    let client: EtcdClient
    let layout: EtcdKeyLayout
    private let observers = ConditionLock<[@Sendable (StorageCommitNotice) -> Void]>([])
    /// This storage's commit marker and the etcd version it is at (0: not written yet).
    /// Held for the whole of each commit: commits through one storage are serial, which is
    /// what lets an unanswered one be resolved from the marker alone (EtcdStorage+Commit.swift).
    let marker: ConditionLock<MarkerState>
    /// Serialises key allocation in this process (the sequence record's compare-and-swap
    /// still guards against other processes).
    let allocationLock = ConditionLock<Int>(0)
    /// Serialises commits that carry a record keyed by their version, from the prediction
    /// to the commit (EtcdStorage+KeyedByVersion.swift).
    let recordingLock = ConditionLock<Int>(0)
    private let isClosed = ConditionLock<Bool>(false)
    /// The watch delivering other writers' commits, once started.
    private let watcher = ConditionLock<EtcdWatcher?>(nil)

    struct MarkerState: Sendable {
        let key: Data
        var version: Int64 = 0
    }

    init(configuration: EtcdConfiguration) {
        self.configuration = configuration
        client = EtcdClient(configuration: configuration.clientConfiguration)
        layout = EtcdKeyLayout(prefix: configuration.prefix)
        marker = ConditionLock(MarkerState(key: layout.commitMarker(UUID())))
    }

    var location: String { configuration.url }

    func readView() throws(StorageError) -> any StorageReadView {
        try checkOpen()
        let revision = try commitVersion()
        return EtcdReadView(storage: self, revision: Int64(revision))
    }

    func commitVersion() throws(StorageError) -> UInt64 {
        try checkOpen()
        // A linearizable read of one key returns the cluster's current revision.
        let reply = try call("kv/range", WireRangeRequest(key: Data(layout.prefix), count_only: true),
                             as: WireRangeResponse.self, operation: "read")
        return UInt64(reply.header?.revision?.value ?? 0)
    }

    /// Starts the watch that hands every commit made elsewhere to `deliver` (EtcdWatcher.swift).
    func startWatching(from revision: Int64, deliver: @escaping @Sendable (RemoteCommit) -> Void) {
        let started = EtcdWatcher(storage: self, from: revision, deliver: deliver)
        watcher.withLock { $0 = started }
        started.start()
    }

    func addCommitObserver(_ observer: @escaping @Sendable (StorageCommitNotice) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    func close() {
        let wasClosed = isClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        watcher.withLock { $0 }?.stop()
        // The marker is only needed while commits may be in flight; best effort, and only when
        // this storage wrote one (a reader's close never waits on the cluster).
        let (key, written) = marker.withLock { ($0.key, $0.version > 0) }
        if written {
            _ = try? client.call("kv/deleterange", WireDeleteRequest(key: key), as: WireDeleteResponse.self, isWrite: true)
        }
        client.invalidate()
    }

    func checkOpen() throws(StorageError) {
        if isClosed.value {
            throw StorageError(code: .closed, operation: "etcd", message: "the etcd store \(location) is closed")
        }
    }

    func notifyObservers(_ notice: StorageCommitNotice) {
        let current = observers.withLock { $0 }
        guard !notice.writtenKeys.isEmpty else { return }
        for observer in current { observer(notice) }
    }

    /// One gateway call, its failure as a storage error.
    func call<Request: Encodable, Reply: Decodable>(
        _ path: String, _ request: Request, as reply: Reply.Type, operation: String, isWrite: Bool = false
    ) throws(StorageError) -> Reply {
        do {
            return try client.call(path, request, as: reply, isWrite: isWrite)
        } catch {
            throw StorageError(error, operation: operation, location: location)
        }
    }
}

extension StorageError {
    /// The client's failure as a storage error.
    init(_ error: EtcdClientError, operation: String, location: String, revision: Int64? = nil) {
        let code: Code
        var message = "\(location): \(error)"
        switch error {
        case .unreachable: code = .unreachable
        case .outcomeUnknown: code = .outcomeUnknown
        case let .server(grpcCode, text):
            if text.contains("too many operations in txn") {
                code = .limitExceeded(limit: "--max-txn-ops", size: -1, maximum: -1)
            } else if text.contains("request is too large") {
                code = .limitExceeded(limit: "--max-request-bytes", size: -1, maximum: -1)
            } else {
                code = .backend(code: Int32(clamping: grpcCode))
            }
        case .compacted:
            let at = revision.map { UInt64($0) } ?? 0
            code = .readViewExpired(version: at)
            message = "\(location): etcd compacted revision \(at) away (--auto-compaction-retention or an explicit compaction); the read view at it is gone, start a new one"
        case .malformedReply: code = .corrupt
        }
        self.init(code: code, operation: operation, message: message)
    }
}
