#if canImport(Glibc)
import Glibc
#endif

/// A mutex with a condition variable guarding one value: the package's lock type (a snapshot's
/// reads take KVEngine's `SnapshotLock` instead).
///
/// A pthread mutex, not `Synchronization.Mutex`: ThreadSanitizer on this toolchain does not
/// see a Mutex's futex as synchronisation.
///
/// `@unchecked Sendable`: `storage` is only reached inside `withLock`/`wait`, under `mutex`.
///
/// The class is `public` (its members stay `package`) because Swift 6.3 does not inline an
/// `@inlinable` method of a `package` class into another module: every engine read then made
/// an unspecialised generic call.
public final class ConditionLock<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Unchecked exclusivity: every access is under `mutex`, which already makes it
    /// exclusive (a nested `withLock` would deadlock on the mutex before any check could
    /// fire), and the runtime's check cost about 100 instructions per lock taken.
    @exclusivity(unchecked) @usableFromInline var storage: Value

    package init(_ value: Value) {
        storage = value
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Runs `body` with the value, under the lock.
    /// Inlinable so that callers in other modules get a specialised, inlined copy.
    @inlinable @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage)
    }

    /// Under the lock, waits until `ready` holds or `timeout` seconds pass, then runs `body`.
    /// `body` receives whether `ready` held.
    package func wait<Result, Failure: Error>(
        until ready: (Value) -> Bool,
        timeout: Double? = nil,
        then body: (inout Value, Bool) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var deadline = timespec()
        if let timeout {
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            let nanoseconds = Int(deadline.tv_nsec) + Int(timeout * 1_000_000_000)
            deadline.tv_sec += nanoseconds / 1_000_000_000
            deadline.tv_nsec = nanoseconds % 1_000_000_000
        }
        while !ready(storage) {
            if timeout == nil {
                pthread_cond_wait(condition, mutex)
            } else if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT {
                break
            }
        }
        return try body(&storage, ready(storage))
    }

    /// A copy of the value, read under the lock.
    package var value: Value { withLock { $0 } }

    /// Wakes every waiter; call after changing what they wait for.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
