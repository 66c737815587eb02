/// A weak reference to a context, for the lists that must not keep contexts alive (a parent's
/// children, an object store's root contexts).
struct WeakContext: Sendable {
    weak var context: ObjectContext?

    /// Appends `context`, dropping entries whose context is gone.
    static func append(_ context: ObjectContext, to list: inout [WeakContext]) {
        list.removeAll { $0.context == nil }
        list.append(WeakContext(context: context))
    }

    /// The contexts still alive.
    static func alive(_ list: [WeakContext]) -> [ObjectContext] {
        list.compactMap(\.context)
    }
}
