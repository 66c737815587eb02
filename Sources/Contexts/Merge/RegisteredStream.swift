/// A new `AsyncStream` whose continuation `register` files under an ID, for the context's and
/// the remote-change watcher's subscribers. When `register` returns nil (the source has ended)
/// the stream ends at once; otherwise the stream's termination calls `unregister` with the ID.
func registeredStream<Element: Sendable>(
    register: (AsyncStream<Element>.Continuation) -> Int?, unregister: @escaping @Sendable (Int) -> Void
) -> AsyncStream<Element> {
    let (stream, continuation) = AsyncStream<Element>.makeStream()
    guard let id = register(continuation) else {
        continuation.finish()
        return stream
    }
    continuation.onTermination = { _ in unregister(id) }
    return stream
}
