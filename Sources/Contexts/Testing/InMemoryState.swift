import Policies

/// A context's in-memory state of one object, as the scenario runner prints it.
///
/// ```swift
/// if case .values(let values)? = context.inMemoryState(of: id) { print(values) }
/// ```
package enum InMemoryState: Sendable, Hashable {
    /// Registered with these values (a fault is loaded first).
    case values(PropertyValues)
    /// Deleted in the context, not yet saved.
    case deleted
}
