import Foundation
import Locking

// The remote-change watcher of one ObjectStore: a thread that sleeps on the store's commit
// signal directory (inotify on the engine's log directory), wakes when it changes, and when
// the newest commit version has moved, reads the history after its cursors and announces each
// transaction another writer made: a `.cairnStoreRemoteChange` notification (from the version
// the store opened at) and an element of every `remoteChanges(after:)` stream (each from its
// own token).
//
// inotify fires at the log append, before the commit is synced and visible, so after a wake
// the watcher re-reads the version every 0.2 ms for the first `fastWindow` (a sync takes about
// a millisecond), then every millisecond up to `settleWindow`, before it goes back to sleeping
// `idleInterval` (the fallback poll, for file systems inotify does not see).

/// Announces the history transactions of commits this object store did not make.
///
/// `Sendable`: its state is behind `state`'s lock; the coordinator is Sendable.
final class RemoteChangeWatcher: Sendable {
    static let idleInterval = 0.2
    static let settleWindow = 0.1
    static let fastWindow = 0.01
    /// Transactions read per history read.
    static let readLimit = 1_000

    private struct Subscriber {
        var cursor: UInt64
        let yield: @Sendable (HistoryTransaction) -> Void
        let finish: @Sendable () -> Void
    }

    private struct State {
        /// The notifications' cursor: transactions at or below it were posted (or skipped).
        var postedCursor: UInt64
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        /// A stream was added since the last round: read even if the version did not move.
        var hasNewSubscriber = false
        var stopping = false
        /// The thread closed `watch` (it ends just after).
        var watchClosed = false
        /// The watcher's thread, so that `stop` called on it (the last reference to the store
        /// dropped while it announces) does not wait for itself.
        var thread: Thread?
    }

    private let coordinator: StoreCoordinator
    private let watch: DirectoryWatch
    private let state: ConditionLock<State>
    /// Set by the thread as its last act (a lock apart from `state`: see `start`).
    private let threadEnded = ConditionLock<Bool>(false)

    init(coordinator: StoreCoordinator, after version: UInt64) {
        self.coordinator = coordinator
        watch = DirectoryWatch(directory: coordinator.storage.commitSignalDirectory)
        state = ConditionLock(State(postedCursor: version))
    }

    deinit {
        // Dropped on its own thread (the store's last reference went there, so `stop` did not
        // wait): end what the thread's last step would have.
        let subscribers = state.withLock { state -> [Subscriber] in
            guard !state.watchClosed else { return [] }
            state.watchClosed = true
            watch.close()
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// Starts the thread; `store` is the notifications' object (held weakly).
    ///
    /// The thread holds the watcher only for one wait and check at a time, and `threadEnded`
    /// is a lock of its own: once it is set the thread holds nothing of the store, so the
    /// engine store closes as soon as the object store is dropped.
    func start(announcingTo store: ObjectStore) {
        let ended = threadEnded
        let thread = Thread { [weak self, weak store] in
            var loop = Loop()
            while let watcher = self, watcher.step(&loop, store: { store }) {}
            ended.withLock { $0 = true }
            ended.broadcast()
        }
        thread.name = "cairn.remote-changes"
        state.withLock { $0.thread = thread }
        thread.start()
    }

    /// Ends the thread and every stream, and waits until the thread no longer reads the store
    /// (unless called on the thread itself). Idempotent.
    func stop() {
        let onThread = state.withLock { state in
            state.stopping = true
            return state.thread === Thread.current
        }
        wake()
        guard !onThread else { return }
        threadEnded.wait(until: { $0 }) { _, _ in }
    }

    /// A stream of the transactions after `token` (nil: after the newest commit now).
    func stream(after token: HistoryToken?) -> AsyncStream<HistoryTransaction> {
        let stream: AsyncStream<HistoryTransaction> = registeredStream(register: { continuation in
            let cursor: UInt64
            if let token {
                cursor = token.version
            } else if let version = try? coordinator.storage.commitVersion() {
                cursor = version
            } else {
                return nil  // the store is closed
            }
            let subscriber = Subscriber(cursor: cursor, yield: { continuation.yield($0) }, finish: { continuation.finish() })
            return state.withLock { state in
                guard !state.stopping else { return nil }
                state.nextID += 1
                state.subscribers[state.nextID] = subscriber
                state.hasNewSubscriber = true
                return state.nextID
            }
        }, unregister: { [weak self] id in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        })
        wake()
        return stream
    }

    /// Wakes the thread, unless it has ended (and closed the watch).
    private func wake() {
        state.withLock { state in if !state.watchClosed { watch.signal() } }
    }

    // MARK: - The thread

    /// What the thread keeps between steps.
    private struct Loop {
        var seenVersion: UInt64 = 0
        var wokenAt = -Double.infinity
    }

    /// One wait and, when the version moved (or a stream was added), one announcement; false
    /// once stopping, after ending the streams and closing the watch.
    private func step(_ loop: inout Loop, store: () -> ObjectStore?) -> Bool {
        let sinceWake = ProcessInfo.processInfo.systemUptime - loop.wokenAt
        let timeout = sinceWake < Self.fastWindow ? 0.0002 : sinceWake < Self.settleWindow ? 0.001 : Self.idleInterval
        if watch.wait(timeout: timeout) { loop.wokenAt = ProcessInfo.processInfo.systemUptime }
        let forced = state.withLock { state -> Bool? in
            if state.stopping { return nil }
            defer { state.hasNewSubscriber = false }
            return state.hasNewSubscriber
        }
        guard let forced else {
            let subscribers = state.withLock { state in
                state.watchClosed = true
                watch.close()  // under the lock: `wake` never writes to a closed descriptor
                state.thread = nil
                defer { state.subscribers.removeAll() }
                return Array(state.subscribers.values)
            }
            for subscriber in subscribers { subscriber.finish() }
            return false
        }
        guard let version = try? coordinator.storage.commitVersion() else { return true }
        guard version != loop.seenVersion || forced else { return true }
        loop.seenVersion = version
        // A failed read leaves the cursors where they were: the next wake reads again.
        try? announce(store: store)
        return true
    }

    /// Reads the history after the lowest cursor and hands each transaction to whoever has
    /// not had it yet.
    private func announce(store: () -> ObjectStore?) throws(ContextError) {
        while true {
            let (lowest, posted) = state.withLock { state in
                (state.subscribers.values.reduce(state.postedCursor) { min($0, $1.cursor) }, state.postedCursor)
            }
            let transactions = try coordinator.history(after: HistoryToken(version: lowest), limit: Self.readLimit)
            guard let last = transactions.last?.token.version else { return }
            let origin = coordinator.origin
            let object = store()
            for transaction in transactions where transaction.origin != origin && transaction.token.version > posted {
                NotificationCenter.default.post(
                    name: .cairnStoreRemoteChange, object: object,
                    userInfo: [RemoteChangeKey.historyToken: transaction.token, RemoteChangeKey.transaction: transaction])
            }
            // Only the streams this read covered (cursor at or above `lowest`) take its
            // transactions and move on. One added while it ran, from an older token, keeps its
            // cursor: the round its registration forces reads from there, so it misses nothing
            // and gets every transaction in order.
            let subscribers = state.withLock { state -> [Subscriber] in
                var covered: [Subscriber] = []
                state.postedCursor = max(state.postedCursor, last)
                for id in state.subscribers.keys where state.subscribers[id]!.cursor >= lowest {
                    covered.append(state.subscribers[id]!)
                    state.subscribers[id]!.cursor = max(state.subscribers[id]!.cursor, last)
                }
                return covered
            }
            for subscriber in subscribers {
                for transaction in transactions
                where transaction.origin != origin && transaction.token.version > subscriber.cursor {
                    subscriber.yield(transaction)
                }
            }
            if transactions.count < Self.readLimit { return }
        }
    }
}
