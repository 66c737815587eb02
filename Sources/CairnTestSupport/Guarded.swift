import Foundation

/// A value behind an `NSLock`, for the tests' own bookkeeping across threads.
///
/// Not `Synchronization.Mutex`: ThreadSanitizer on this toolchain does not see a Mutex's futex
/// as synchronisation and reports races on values that are only ever touched under it, which
/// failed `make tsan` on the tests' bookkeeping instead of on the code under test
/// (Docs/Testing.md, "Sanitizers").
///
/// ```swift
/// let seen = Guarded<[String]>([])
/// runThreads(4) { thread in seen.withLock { $0.append("thread \(thread)") } }
/// ```
///
/// `@unchecked Sendable`: `storage` is only touched under `lock`.
public final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: Value

    public init(_ value: Value) { storage = value }

    /// Runs `body` with the value, holding the lock.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&storage)
    }

    /// A copy of the value, read under the lock.
    public var value: Value { withLock { $0 } }
}
