/// A failure of the store underneath the contexts, with the backend's own code and the
/// operation that failed.
///
/// ```swift
/// catch ContextError.storage(let error) where error.code == .closed { reopen() }
/// ```
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, with the backend's number where it has one.
    public enum Code: Sendable, Equatable {
        /// The store was closed.
        case closed
        /// Another process (or another open store in this one) holds the store.
        case locked(pid: Int32?)
        /// There is no store at the location, and the caller asked not to create one.
        case noStore
        /// A system call failed with this `errno`.
        case io(errno: Int32)
        /// The backend failed with this code of its own (an LMDB return code, for the engine).
        case backend(code: Int32)
        /// A key, table name or value the backend cannot store.
        case invalidInput
        /// A save or value larger than the backend accepts in one commit.
        case tooLarge(bytes: Int, limit: Int)
        /// Stored data is damaged or not in the backend's format.
        case corrupt
        /// An earlier write failure stops every commit until the store is reopened.
        case poisoned
        /// The backend ran out of room it cannot grow (the engine's map, with snapshots open).
        case full
        /// The read view (a query generation) was ended by the backend to free what it held.
        case readViewExpired(version: UInt64)
        /// The read view was closed before this read.
        case readViewClosed
        /// A save exceeds a limit of the backend's own (etcd's `--max-txn-ops`, named in
        /// `limit`): `size` against `maximum`, in the limit's unit. Nothing was written.
        case limitExceeded(limit: String, size: Int, maximum: Int)
        /// No member of a networked backend answered within its deadline.
        case unreachable
        /// A commit was sent, no reply came, and the backend could not be asked afterwards
        /// whether it was applied: it may or may not have been.
        case outcomeUnknown
        /// Commit conditions the object layer did not expect to fail (a store changed under a
        /// key allocation more often than it retries).
        case conditionsFailed
        /// The store is open for reading only (``ObjectStore/Options/readOnly``): saves and
        /// key allocations are refused, and nothing is written.
        case readOnly
    }

    /// What kind of failure.
    public let code: Code
    /// What was being done: "open", "read", "commit", "allocate keys", or the backend's own
    /// name for the call that failed.
    public let operation: String
    /// The backend's description of the failure.
    public let message: String

    public init(code: Code, operation: String, message: String) {
        self.code = code
        self.operation = operation
        self.message = message
    }

    public var description: String { message }
}
