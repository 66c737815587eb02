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
///
/// Wake-ups are rationed, because on a small machine every context switch is taken from the
/// writers' commits: a full queue lets its producer sleep until the consumers have drained it
/// to half its capacity (a wake-up per half queue, not per item), and only a waiting party is
/// woken. Safe because every waiting party announces itself (`producerWaiting`,
/// `consumersWaiting`) under the lock before it waits, and every change that can make its
/// wait end broadcasts while it is announced.
final class WorkQueue<Item: Sendable>: Sendable {
    private struct State {
        // Popped slots are cleared at once, so the queue never holds an item past its pop.
        var items: [(item: Item?, bytes: Int)] = []
        var head = 0
        var bytes = 0
        var finished = false
        var cancelled = false
        /// The producer waits for the queue to drain to `lowWater` items.
        var producerWaiting = false
        /// Consumers waiting for an item.
        var consumersWaiting = 0
        var count: Int { items.count - head }
    }

    /// Guards `State`; producers wait for room on it, consumers for items.
    private let state = ConditionLock(State())
    private let capacity: Int
    private let byteLimit: Int
    /// Where a producer that found the queue full waits down to.
    private let lowWater: Int

    init(capacity: Int, byteLimit: Int = .max) {
        self.capacity = capacity
        self.byteLimit = byteLimit
        lowWater = capacity / 2
    }

    /// Adds `item`, of `bytes` bytes, waiting while the queue is full (once full, until it is
    /// half empty). Returns false when cancelled.
    func push(_ item: Item, bytes: Int = 0) -> Bool {
        let fits = { (state: State, limit: Int) in
            state.cancelled || state.count == 0 || (state.count < limit && state.bytes + bytes <= self.byteLimit)
        }
        let room = state.withLock { state -> Bool in
            let room = fits(state, capacity)
            state.producerWaiting = !room
            return room
        }
        let (pushed, wake) = state.wait(until: { room || fits($0, self.lowWater + 1) }) { state, _ -> (Bool, Bool) in
            state.producerWaiting = false
            if state.cancelled { return (false, false) }
            if state.head > capacity {
                state.items.removeFirst(state.head)
                state.head = 0
            }
            state.items.append((item: item, bytes: bytes))
            state.bytes += bytes
            return (true, state.consumersWaiting > 0)
        }
        if wake { state.broadcast() }
        return pushed
    }

    /// The oldest item, waiting while the queue is empty; nil once it is finished and
    /// drained, or cancelled.
    func pop() -> Item? {
        let ready = { (state: State) in state.count > 0 || state.finished || state.cancelled }
        let announced = state.withLock { state -> Bool in
            if ready(state) { return false }
            state.consumersWaiting += 1
            return true
        }
        let (item, wake) = state.wait(until: ready) { state, _ -> (Item?, Bool) in
            if announced { state.consumersWaiting -= 1 }
            if state.cancelled || state.count == 0 { return (nil, false) }
            state.head += 1
            let popped = state.items[state.head - 1]
            state.items[state.head - 1].item = nil
            state.bytes -= popped.bytes
            return (popped.item, state.producerWaiting && state.count <= lowWater)
        }
        if wake { state.broadcast() }
        return item
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
