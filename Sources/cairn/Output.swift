#if canImport(Glibc)
import Glibc
#endif

/// Standard output or standard error, written with `write(2)` and no stdio buffer.
///
/// Unbuffered on purpose: `ingest` promises that an `ok KEY` line is on the pipe as soon as
/// its commit is durable, and a crash (SIGKILL) must not lose lines stuck in a buffer.
/// Commands with much output collect it in an `OutputBuffer` first.
struct StandardStream: Sendable {
    let descriptor: Int32

    static let output = StandardStream(descriptor: 1)
    static let error = StandardStream(descriptor: 2)

    /// Writes `text` as UTF-8.
    func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes `bytes` whole (retrying short writes and EINTR). Other failures are dropped:
    /// a closed pipe ends the process with SIGPIPE, as for any shell tool.
    func write(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written >= 0 {
                offset += written
            } else if errno != EINTR {
                return
            }
        }
    }
}

/// Collects output and writes it in large pieces: for `scan` and `dump`.
struct OutputBuffer {
    let stream: StandardStream
    private var bytes: [UInt8] = []
    private let flushSize = 64 << 10

    init(_ stream: StandardStream) {
        self.stream = stream
        bytes.reserveCapacity(flushSize)
    }

    /// Appends `text` as UTF-8.
    mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        if bytes.count >= flushSize { flush() }
    }

    /// Writes what was collected.
    mutating func flush() {
        bytes.withUnsafeBytes { stream.write($0) }
        bytes.removeAll(keepingCapacity: true)
    }
}
