import Contexts
import Foundation
import Locking

// Saves made elsewhere (other processes, other hosts) reach this process through one etcd
// watch on the store's prefix, from the revision after the last one seen:
//
//   events of one revision -> one RemoteCommit (our own commits, recognised by our stamp on
//                             their records or marker, are skipped: they were delivered locally)
//   the member goes away   -> the watch is opened again on the next member, from the last
//                             revision seen + 1 (etcd replays what was missed)
//   compacted past it      -> the entity records written since then are read back (a range
//                             with min_mod_revision; deletions are tombstones, so they show) and
//                             delivered as one commit, and the watch resumes at that read's
//                             revision + 1

/// What a save made elsewhere wrote to entity tables, as a did-save needs it.
struct RemoteCommit: Sendable {
    enum Change: Sendable {
        case inserted, updated, deleted
    }

    var revision: Int64
    var changes: [(table: String, key: [UInt8], change: Change)]
}

/// The watch of one storage; runs on a thread of its own until stopped.
///
/// `Sendable`: its state is behind locks; the stream is touched by the watch thread only
/// (and closed, which is thread-safe, by `stop`).
final class EtcdWatcher: Sendable {
    private let storage: EtcdStorage
    private let deliver: @Sendable (RemoteCommit) -> Void
    /// The next revision to watch from (guarded by its lock).
    private let next: ConditionLock<Int64>
    private let stopped = ConditionLock<Bool>(false)
    /// The open stream, so `stop` can wake the thread.
    private let stream = ConditionLock<HTTPStream?>(nil)
    private let finished = ConditionLock<Bool>(false)

    init(storage: EtcdStorage, from revision: Int64, deliver: @escaping @Sendable (RemoteCommit) -> Void) {
        self.storage = storage
        self.deliver = deliver
        next = ConditionLock(revision)
    }

    func start() {
        let thread = Thread { [self] in
            run()
            finished.withLock { $0 = true }
            finished.broadcast()
        }
        thread.name = "cairn etcd watch"
        thread.start()
    }

    /// Ends the watch and waits (briefly) for its thread.
    func stop() {
        stopped.withLock { $0 = true }
        stream.withLock { $0?.close() }
        _ = finished.wait(until: { $0 }, timeout: 5) { _, done in done }
    }

    private var prefixRange: (Data, Data) {
        var end = storage.layout.prefix
        end[end.count - 1] += 1  // the prefix ends in "/": its successor bounds the range
        return (Data(storage.layout.prefix), Data(end))
    }

    private func run() {
        let endpoints = storage.client.configuration.endpoints
        var attempt = 0
        while !stopped.value {
            let endpoint = attempt % endpoints.count
            attempt += 1
            guard let (host, port) = storage.client.addresses[endpoint] else { continue }
            let (start, end) = prefixRange
            let create = WireWatchCreate(create_request: .init(key: start, range_end: end, start_revision: WireInt(next.value)))
            guard let body = try? JSONEncoder().encode(create) else { return }
            switch HTTPStream.open(host: host, port: port, path: "/v3/watch", body: body, timeout: storage.configuration.requestTimeout) {
            case .failure:
                usleep(200_000)
                continue
            case .success(let opened):
                stream.withLock { $0 = opened }
                if stopped.value { opened.close() }
                follow(opened)
                stream.withLock { $0 = nil }
            }
        }
    }

    /// Reads the stream line by line until it ends.
    private func follow(_ opened: HTTPStream) {
        var pending = Data()
        while !stopped.value {
            switch opened.read(wait: 1) {
            case .idle:
                continue
            case .closed:
                return
            case .data(let data):
                pending.append(data)
                while let newline = pending.firstIndex(of: 10) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    let parsed = try? WireJSONReader.read(WireWatchLine.self, from: line)
                    guard let result = parsed?.result else {
                        // An error line ends the stream; an unreadable one is skipped.
                        if parsed?.error != nil { opened.close(); return }
                        continue
                    }
                    if result.canceled == true {
                        if let compacted = result.compact_revision?.value, compacted > 0 { catchUp(after: compacted) }
                        opened.close()
                        return
                    }
                    handle(result.events ?? [])
                }
            }
        }
    }

    /// Groups events by revision, skips our own commits, delivers the others.
    private func handle(_ events: [WireWatchLine.Event]) {
        let marker = storage.layout.commitMarker(storage.identity)
        var index = 0
        while index < events.count {
            let revision = events[index].kv?.mod_revision?.value ?? 0
            var group: [WireWatchLine.Event] = []
            while index < events.count, (events[index].kv?.mod_revision?.value ?? 0) == revision {
                group.append(events[index])
                index += 1
            }
            next.withLock { $0 = max($0, revision + 1) }
            guard !group.contains(where: { isOwn($0.kv, marker: marker) }) else { continue }
            var commit = RemoteCommit(revision: revision, changes: [])
            for event in group {
                guard let kv = event.kv, let key = kv.key, let (table, recordKey) = storage.layout.entityRecord(key) else { continue }
                let change: RemoteCommit.Change
                if event.type == "DELETE" || EtcdKeyLayout.isTombstone(kv.value) {
                    change = .deleted
                } else {
                    change = kv.version?.value == 1 ? .inserted : .updated
                }
                commit.changes.append((table, recordKey, change))
            }
            if !commit.changes.isEmpty { deliver(commit) }
        }
    }

    /// Whether `kv` is an entity record or the marker written by this storage.
    private func isOwn(_ kv: WireKeyValue?, marker: Data) -> Bool {
        guard let kv, let key = kv.key, key == marker || storage.layout.entityRecord(key) != nil else { return false }
        return EtcdKeyLayout.stamp(of: kv.value)?.isFrom(storage.identityBytes) == true
    }

    /// After a compaction cancelled the watch: every entity record written since the last
    /// revision seen, read at the current revision, as one commit.
    private func catchUp(after compacted: Int64) {
        let from = next.value
        let (start, end) = prefixRange
        var request = WireRangeRequest(key: start, range_end: end)
        request.min_mod_revision = WireInt(from)
        guard let reply = try? storage.client.call("kv/range", request, as: WireRangeResponse.self, isWrite: false) else {
            next.withLock { $0 = max($0, compacted) }
            return
        }
        let revision = reply.header?.revision?.value ?? compacted
        var commit = RemoteCommit(revision: revision, changes: [])
        // min_mod_revision is also checked here: the reply is what the catch-up trusts.
        for kv in reply.kvs ?? [] where (kv.mod_revision?.value ?? 0) >= from {
            guard let key = kv.key, let (table, recordKey) = storage.layout.entityRecord(key) else { continue }
            commit.changes.append((table, recordKey, EtcdKeyLayout.isTombstone(kv.value) ? .deleted : .updated))
        }
        next.withLock { $0 = revision + 1 }
        if !commit.changes.isEmpty { deliver(commit) }
    }
}
