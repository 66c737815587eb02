import Dispatch
import Foundation
import Locking

/// Threads started together and joined together.
///
/// Real threads rather than Dispatch's pool: the workers block in `commit` for an
/// fdatasync, and the pool would run no more of them at once than there are CPUs, which
/// would defeat group commit.
struct ThreadGroup: Sendable {
    private let group = DispatchGroup()

    /// Starts `count` threads; thread `index` runs `body(index)`.
    init(count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        for index in 0..<count {
            let group = self.group
            group.enter()
            let thread = Thread {
                body(index)
                group.leave()
            }
            thread.start()
        }
    }

    /// Waits until every thread has returned from its `body`.
    func join() {
        group.wait()
    }
}

/// A bounded first-in first-out queue between one producer and several consumers: at most
/// `capacity` items, and at most `byteLimit` of their bytes (as the producer counts them)
/// unless it holds a single item.
final class WorkQueue<Item: Sendable>: Sendable {
    private struct State {
        // Popped slots are cleared at once, so the queue never holds an item past its pop.
        var items: [(item: Item?, bytes: Int)] = []
        var head = 0
        var bytes = 0
        var finished = false
        var cancelled = false
        var count: Int { items.count - head }
    }

    /// Every change to `state` is followed by a broadcast: producers wait for room, consumers
    /// for items.
    private let state = ConditionLock(State())
    private let capacity: Int
    private let byteLimit: Int

    init(capacity: Int, byteLimit: Int = .max) {
        self.capacity = capacity
        self.byteLimit = byteLimit
    }

    /// Adds `item`, of `bytes` bytes, waiting while the queue is full. Returns false when
    /// cancelled.
    func push(_ item: Item, bytes: Int = 0) -> Bool {
        defer { state.broadcast() }
        return state.wait(until: { state in
            state.cancelled || state.count == 0 || (state.count < capacity && state.bytes + bytes <= byteLimit)
        }) { state, _ in
            if state.cancelled { return false }
            if state.head > capacity {
                state.items.removeFirst(state.head)
                state.head = 0
            }
            state.items.append((item: item, bytes: bytes))
            state.bytes += bytes
            return true
        }
    }

    /// The oldest item, waiting while the queue is empty; nil once it is finished and
    /// drained, or cancelled.
    func pop() -> Item? {
        defer { state.broadcast() }
        return state.wait(until: { $0.count > 0 || $0.finished || $0.cancelled }) { state, _ in
            if state.cancelled || state.count == 0 { return nil }
            state.head += 1
            let popped = state.items[state.head - 1]
            state.items[state.head - 1].item = nil
            state.bytes -= popped.bytes
            return popped.item
        }
    }

    /// No more items will be pushed; consumers drain what is left.
    func finish() {
        state.withLock { $0.finished = true }
        state.broadcast()
    }

    /// Drops what is queued; producers and consumers stop.
    func cancel() {
        state.withLock { $0.cancelled = true }
        state.broadcast()
    }

    /// Whether `cancel` was called.
    var isCancelled: Bool {
        state.withLock { $0.cancelled }
    }
}
