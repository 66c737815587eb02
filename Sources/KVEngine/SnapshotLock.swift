import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The lock of one snapshot holder (`SnapshotTransaction`): a word naming the thread that holds
/// it, taken with one compare-and-swap and released with one store. A pthread mutex beside a
/// separate owner word (which caught re-entrance) were about 70 instructions of a
/// 2,100-instruction point read; here the owner is the lock, and re-entrance is seen for free.
///
/// A waiter polls (yields, then sleeps up to a millisecond) instead of blocking in the kernel:
/// waits are rare (a snapshot read from two threads at once; the engine expiring or closing a
/// snapshot while a read is in progress), and the holder's reads pay nothing for them.
///
/// `@unchecked Sendable`: `value` is only reached while the lock is held, ordered by the
/// word's acquiring compare-and-swap and releasing store (which ThreadSanitizer sees).
package final class SnapshotLock<Value>: @unchecked Sendable {
    /// The holding thread's `pthread_self()`, 0 when free.
    private let owner = Atomic<UInt>(0)
    /// Unchecked: every access is under the lock.
    @exclusivity(unchecked) private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, under the lock. `reentered` is called instead (and stops
    /// the process) when this thread holds the lock already, which would wait forever.
    @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result, reentered: () -> Never
    ) throws(Failure) -> Result {
        let me = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        if !owner.compareExchange(expected: 0, desired: me, successOrdering: .acquiring, failureOrdering: .relaxed).exchanged {
            wait(as: me, reentered)
        }
        defer { owner.store(0, ordering: .releasing) }
        return try body(&value)
    }

    /// Takes the lock held by another thread once it is free.
    @inline(never)
    private func wait(as me: UInt, _ reentered: () -> Never) {
        var attempts = 0
        while true {
            let holder = owner.load(ordering: .relaxed)
            if holder == me { reentered() }
            if holder == 0,
               owner.compareExchange(expected: 0, desired: me, successOrdering: .acquiring, failureOrdering: .relaxed).exchanged {
                return
            }
            attempts += 1
            if attempts < 64 { sched_yield() } else { usleep(UInt32(min(1_000, (attempts - 63) * 50))) }
        }
    }
}
