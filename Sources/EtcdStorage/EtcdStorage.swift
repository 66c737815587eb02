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
/// `Sendable`: the client is; the observer list, the counters, the commit marker and the
/// watch are behind locks.
final class EtcdStorage: ObjectStorage {
    let configuration: EtcdConfiguration
    let client: EtcdClient
    let layout: EtcdKeyLayout
    /// This open storage's identity: the first 16 bytes of its stamps, and its marker's name.
    let identity: UUID
    /// `identity` as stamps begin with it.
    let identityBytes: [UInt8]
    private let observers = ConditionLock<[@Sendable (StorageCommitNotice) -> Void]>([])
    /// The last attempt number stamped (EtcdWriteStamp.swift).
    private let attemptNumber = ConditionLock<UInt64>(0)
    /// The newest revision any reply has shown this storage: where a watch opened later starts.
    private let seenRevision = ConditionLock<Int64>(0)
    /// This storage's commit marker and the etcd version it is at (0: not written yet), for
    /// the saves without a witness record. Held for the whole of such a commit, so the marker's
    /// version is always known (EtcdStorage+Commit.swift).
    let marker: ConditionLock<MarkerState>
    /// Serialises key allocation in this process (the sequence record's compare-and-swap
    /// still guards against other processes).
    let allocationLock = ConditionLock<Int>(0)
    /// Serialises commits that carry a record keyed by their version, from the prediction
    /// to the commit (EtcdStorage+KeyedByVersion.swift).
    let recordingLock = ConditionLock<Int>(0)
    private let isClosed = ConditionLock<Bool>(false)
    /// The watch delivering other writers' commits, once started.
    private let watch = ConditionLock<WatchState>(WatchState())

    struct MarkerState: Sendable {
        let key: Data
        var version: Int64 = 0
        /// An attempt on the marker got no reply: it may apply later, so the marker must
        /// never be deleted (its versions must not go back).
        var unanswered = false
    }

    private struct WatchState {
        var watcher: EtcdWatcher?
        var closed = false
    }

    init(configuration: EtcdConfiguration) {
        self.configuration = configuration
        client = EtcdClient(configuration: configuration.clientConfiguration)
        layout = EtcdKeyLayout(prefix: configuration.prefix)
        identity = UUID()
        identityBytes = EtcdWriteStamp.identity(identity)
        marker = ConditionLock(MarkerState(key: layout.commitMarker(identity)))
    }

    /// A stamp no attempt anywhere has had.
    func nextStamp() -> EtcdWriteStamp {
        let number = attemptNumber.withLock { number in
            number += 1
            return number
        }
        return EtcdWriteStamp(storage: identity, attempt: number)
    }

    /// Notes a revision a reply showed.
    func noteRevision(_ revision: Int64) {
        seenRevision.withLock { $0 = max($0, revision) }
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
        let revision = reply.header?.revision?.value ?? 0
        noteRevision(revision)
        return UInt64(revision)
    }

    /// Starts the watch that hands every commit made elsewhere to `deliver` (EtcdWatcher.swift),
    /// from `revision`, or from the one after the newest this storage has seen; nothing when a
    /// watch is already running or the storage is closed.
    func startWatching(from revision: Int64? = nil, deliver: @escaping @Sendable (RemoteCommit) -> Void) {
        let started = watch.withLock { state -> EtcdWatcher? in
            guard state.watcher == nil, !state.closed else { return nil }
            let from = revision ?? (seenRevision.value + 1)
            state.watcher = EtcdWatcher(storage: self, from: from, deliver: deliver)
            return state.watcher
        }
        started?.start()
    }

    /// Whether the watch runs (it starts only when something consumes saves made elsewhere).
    var isWatching: Bool { watch.withLock { $0.watcher != nil } }

    func addCommitObserver(_ observer: @escaping @Sendable (StorageCommitNotice) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    func close() {
        let wasClosed = isClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        watch.withLock { state -> EtcdWatcher? in
            state.closed = true
            return state.watcher
        }?.stop()
        // The marker is only needed while commits may be in flight; best effort, only when this
        // storage wrote one (a reader's close never waits on the cluster), and never when an
        // attempt on it went unanswered (deleted, it would be at version 0 again, and such an
        // attempt may have compared 0).
        let (key, deletable) = marker.withLock { ($0.key, $0.version > 0 && !$0.unanswered) }
        if deletable {
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
