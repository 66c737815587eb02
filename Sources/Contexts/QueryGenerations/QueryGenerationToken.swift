
/// A query generation: one version of the store that contexts can read from, for as long as
/// they like, while others keep committing. Cairn's `NSQueryGenerationToken`.
///
/// ``current`` asks a context to pin the generation that is current at its next read. A token
/// read from a pinned context (``ObjectContext/queryGenerationToken``) or made by
/// ``ObjectStore/currentQueryGenerationToken()`` holds one engine snapshot; every context given
/// that token reads that same snapshot. The snapshot stays open while any context or any copy
/// of the token holds it, so the store keeps the pages it needs (see
/// ``ObjectStore/queryGenerationStats``).
///
/// ```swift
/// try report.setQueryGenerationFrom(.current)          // pin at the next read
/// let token = report.queryGenerationToken              // pins now, if it had not read yet
/// try chart.setQueryGenerationFrom(token)               // both read the same version
/// ```
///
/// Tokens are equal when they are the same generation (or both ``current``).
public struct QueryGenerationToken: Sendable, Hashable, CustomStringConvertible {
    let generation: PinnedGeneration?

    /// The generation that is current when the context next reads; setting it pins lazily.
    ///
    /// ```swift
    /// try context.setQueryGenerationFrom(.current)
    /// ```
    public static let current = QueryGenerationToken(generation: nil)

    /// The commit version the generation reads; nil for ``current``.
    ///
    /// ```swift
    /// context.queryGenerationToken?.version   // 42
    /// ```
    public var version: UInt64? { generation?.view.version }

    /// Whether this is ``current`` rather than a pinned generation.
    ///
    /// ```swift
    /// QueryGenerationToken.current.isCurrent   // true
    /// ```
    public var isCurrent: Bool { generation == nil }

    /// Same generation: the same snapshot, not merely the same version.
    ///
    /// ```swift
    /// first.queryGenerationToken == second.queryGenerationToken   // true once aligned
    /// ```
    public static func == (lhs: QueryGenerationToken, rhs: QueryGenerationToken) -> Bool {
        lhs.generation === rhs.generation
    }

    /// Hashes the generation's identity.
    ///
    /// ```swift
    /// let tokens: Set<QueryGenerationToken> = [token]
    /// ```
    public func hash(into hasher: inout Hasher) {
        hasher.combine(generation.map(ObjectIdentifier.init))
    }

    /// `current`, or the pinned version.
    ///
    /// ```swift
    /// print(token)   // QueryGenerationToken(version 42)
    /// ```
    public var description: String {
        version.map { "QueryGenerationToken(version \($0))" } ?? "QueryGenerationToken.current"
    }
}

/// One pinned read view, shared by every context and token that holds it; closed when the
/// last of them lets go.
///
/// `Sendable`: immutable; the view serialises its own reads.
final class PinnedGeneration: Sendable {
    let view: any StorageReadView
    let core: StoreCoordinator

    init(core: StoreCoordinator) throws(ContextError) {
        view = try core.readView()
        self.core = core
        let info = PinnedGenerationInfo(version: view.version, pinnedAt: ContinuousClock.now)
        core.pinnedGenerations.withLock { $0[ObjectIdentifier(self)] = info }
    }

    deinit {
        core.pinnedGenerations.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(self)) }
        view.close()
    }
}

/// What the object store remembers of an open pinned generation.
struct PinnedGenerationInfo: Sendable {
    let version: UInt64
    let pinnedAt: ContinuousClock.Instant
}

/// Which snapshot a root context's reads use.
enum GenerationState {
    /// A fresh snapshot of the latest commit per read (the default).
    case unpinned
    /// Pinned to `.current`: the next read pins the then-current generation.
    case pinnedAtNextRead
    /// Every read uses this generation until the context advances.
    case pinned(PinnedGeneration)
}

/// Why a context cannot use a query generation.
///
/// ```swift
/// do {
///     try child.setQueryGenerationFrom(.current)
/// } catch QueryGenerationError.childContext(let name) {
///     print("\(name) reads through its parent; pin the root instead")
/// }
/// ```
public enum QueryGenerationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A child context reads through its parent and cannot be pinned; pin its root context.
    ///
    /// ```swift
    /// QueryGenerationError.childContext("editor")
    /// ```
    case childContext(String)

    /// The token belongs to another store.
    ///
    /// ```swift
    /// QueryGenerationError.otherStore(directory: "/var/lib/other")
    /// ```
    case otherStore(directory: String)

    /// What went wrong and what to do.
    ///
    /// ```swift
    /// print(QueryGenerationError.childContext("editor"))
    /// ```
    public var description: String {
        switch self {
        case .childContext(let name):
            return "context '\(name)' is a child context: it reads through its parent and cannot be pinned "
                + "to a query generation; pin its root context instead"
        case .otherStore(let directory):
            return "the query generation token belongs to the store in \(directory), not this context's store"
        }
    }
}

/// The pinned query generations of an object store: how many are open, and the oldest one's
/// version and age. Each holds an engine snapshot, and so LMDB pages the store cannot reuse.
///
/// ```swift
/// let pinned = objects.queryGenerationStats
/// if let age = pinned.oldestAge, age > 60 { print("generation \(pinned.oldestVersion!) pinned for \(age) s") }
/// ```
public struct QueryGenerationStats: Sendable, Hashable {
    /// Open pinned generations (shared ones count once).
    ///
    /// ```swift
    /// objects.queryGenerationStats.count
    /// ```
    public var count: Int

    /// The commit version of the oldest pinned generation; nil when none is pinned.
    ///
    /// ```swift
    /// objects.queryGenerationStats.oldestVersion
    /// ```
    public var oldestVersion: UInt64?

    /// Seconds since the oldest pinned generation was pinned; nil when none is pinned.
    ///
    /// ```swift
    /// objects.queryGenerationStats.oldestAge
    /// ```
    public var oldestAge: Double?
}
