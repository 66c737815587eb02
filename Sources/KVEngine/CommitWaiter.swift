import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One writer waiting in the commit queue.
///
/// A waiter first yields the processor in a loop, checking whether it was signalled, for at
/// most its spin budget (`Options.commitSpinWait`); only then does it sleep on `wake`. A
/// signal to a writer still yielding is one atomic exchange, with no system call: that is
/// most of the time a durable group of 8 writers spends between two fdatasyncs
/// (Docs/Benchmarks.md).
///
/// `@unchecked Sendable`: `result` is written by the leader before it signals, and read by
/// the owner after it saw the signal; the exchange on `state` (release by the leader,
/// acquire by the owner) orders the two, and `wake`'s lock does for a sleeping owner.
/// `batch` is the leader's alone once the waiter is queued: the owner never reads it again.
package final class CommitWaiter: @unchecked Sendable {
    private var batch: WriteBatch
    let durability: Durability
    var result: Result<CommitInfo, KVError>?
    /// `waiting` (yielding), `asleep` (on `wake`), or `signalled`. Only the owner moves it
    /// from `waiting` to `asleep`; only `signal` sets `signalled`, from either.
    private let state = Atomic<Int>(CommitWaiter.waiting)
    /// Made by the owner only when it goes to sleep (most waiters never do), before its
    /// exchange to `asleep`; `signal` reads it only after seeing `asleep`, so that exchange
    /// (release, then acquire) publishes it.
    private var wake: ConditionLock<Bool>? = nil

    private static let waiting = 0, asleep = 1, signalled = 2

    package init(batch: consuming WriteBatch, durability: Durability) {
        self.batch = batch
        self.durability = durability
    }

    /// The batch's operations, handed to the leader that commits them (once).
    func takeOperations() -> [WriteBatch.Operation] {
        batch.takeOperations()
    }

    /// Wakes the owner; a system call only when it already sleeps.
    package func signal() {
        if state.exchange(CommitWaiter.signalled, ordering: .acquiringAndReleasing) == CommitWaiter.asleep,
           let wake {
            wake.withLock { $0 = true }
            wake.broadcast()
        }
    }

    /// Returns once signalled: yielding for at most `spin` seconds, then asleep. Returns
    /// whether it slept.
    @discardableResult
    package func waitForSignal(spinningFor spin: Double) -> Bool {
        let start = monotonicSeconds()
        while spin > 0 {
            if state.load(ordering: .acquiring) == CommitWaiter.signalled { return false }
            if monotonicSeconds() - start >= spin { break }
            sched_yield()
        }
        let wake = ConditionLock(false)
        self.wake = wake
        // Failing the exchange means `signal` came first: no sleep, and its release is seen.
        guard state.compareExchange(expected: CommitWaiter.waiting, desired: CommitWaiter.asleep,
                                    ordering: .acquiringAndReleasing).exchanged else { return false }
        wake.wait(until: { $0 }) { _, _ in }
        return true
    }
}
