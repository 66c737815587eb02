/// Holds a non-escaping closure for exactly one run on a context's queue.
///
/// `@unchecked Sendable`: `body` is written at init and read and cleared once, by the single
/// block on the queue that runs it (a context's or a StoreQueue's); the queue hand-off orders the two.
package final class OneShotWork<T: Sendable>: @unchecked Sendable {
    private var body: (@Sendable () throws -> T)?

    package init(_ body: @escaping @Sendable () throws -> T) { self.body = body }

    package func run() -> Result<T, any Error> {
        guard let body else { preconditionFailure("OneShotWork runs once") }
        self.body = nil
        return Result { try body() }
    }
}
