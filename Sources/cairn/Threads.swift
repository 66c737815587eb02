import Dispatch
import Foundation

/// A value guarded by a mutex, with a condition variable to wait for changes to it.
///
/// `@unchecked Sendable`: `value` is only reached inside `withLock` and `wait`, under
/// `condition`'s lock.
final class Locked<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value under the lock, then wakes every waiter.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return try body(&value)
    }

    /// Waits under the lock until `ready` holds, then runs `body` (and wakes every waiter).
    func wait<Result>(until ready: (Value) -> Bool, then body: (inout Value) throws -> Result) rethrows -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        while !ready(value) { condition.wait() }
        return try body(&value)
    }
}

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

    private let state = Locked(State())
    private let capacity: Int
    private let byteLimit: Int

    init(capacity: Int, byteLimit: Int = .max) {
        self.capacity = capacity
        self.byteLimit = byteLimit
    }

    /// Adds `item`, of `bytes` bytes, waiting while the queue is full. Returns false when
    /// cancelled.
    func push(_ item: Item, bytes: Int = 0) -> Bool {
        state.wait(until: { state in
            state.cancelled || state.count == 0 || (state.count < capacity && state.bytes + bytes <= byteLimit)
        }) { state in
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
        state.wait(until: { $0.count > 0 || $0.finished || $0.cancelled }) { state in
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
    }

    /// Drops what is queued; producers and consumers stop.
    func cancel() {
        state.withLock { $0.cancelled = true }
    }

    /// Whether `cancel` was called.
    var isCancelled: Bool {
        state.withLock { $0.cancelled }
    }
}
