import KVEngine
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// `cairn ingest`: one durable commit per input line, made by concurrent writers.
///
/// The acknowledgement protocol, which the crash tests rely on: `ok KEY` is written to
/// standard output (unbuffered) only after the commit of KEY is durable, so every `ok`
/// line a reader has seen names a record that survives killing the process.
enum IngestCommand {
    static let command = Command(
        name: "ingest",
        summary: "Commit key<TAB>value lines from standard input, one durable commit each.",
        arguments: ["STORE"],
        options: [
            .value("writers", "N", "Commit from N concurrent threads (default 4, at most 1024)."),
            KeyValueCommands.tableOption,
        ],
        discussion: """
            Each line is split at its first tab into key and value, and committed on its own
            with full durability. Concurrent writers share fdatasync calls (group commit).
            After a line's commit is on disk, 'ok KEY' is printed on standard output at once,
            so a reader knows exactly which records are durable. Lines may be acknowledged
            out of input order. Empty lines are skipped; a line without a tab stops the
            input (lines before it are still committed) and exits with status 1. Creates
            the store when it does not exist.
            """,
        run: run
    )

    private struct Line: Sendable {
        var key: [UInt8]
        var value: [UInt8]
    }

    @Sendable private static func run(_ arguments: Arguments) throws -> ExitStatus {
        let writers = try arguments.integer("writers", default: 4, in: 1...1024)
        let table = KeyValueCommands.table(arguments)
        let store = try StoreAccess.openOrCreate(arguments.positionals[0])
        defer { store.close() }

        let queue = WorkQueue<Line>(capacity: writers * 64)
        let firstFailure = ConditionLock<KVError?>(nil)
        // One `ok` line per write(2), never interleaved with another writer's.
        // An Int, not (): ThreadSanitizer misreports inout access to a zero-sized value.
        let outputLock = ConditionLock(0)
        let threads = ThreadGroup(count: writers) { _ in
            while let line = queue.pop() {
                var batch = WriteBatch()
                batch.put(line.value, forKey: line.key, in: table)
                do throws(KVError) {
                    try store.commit(batch, durability: .full)
                } catch {
                    firstFailure.withLock { if $0 == nil { $0 = error } }
                    queue.cancel()
                    return
                }
                let acknowledgement = "ok " + String(decoding: line.key, as: UTF8.self) + "\n"
                outputLock.withLock { _ in StandardStream.output.write(acknowledgement) }
            }
        }

        var inputProblem: CommandError? = nil
        var reader = LineReader(descriptor: 0)
        var lineNumber = 0
        do throws(CommandError) {
            while let line = try reader.next() {
                lineNumber += 1
                if line.isEmpty { continue }
                guard let tab = line.firstIndex(of: UInt8(ascii: "\t")) else {
                    inputProblem = .usage("input line \(lineNumber) has no tab between key and value")
                    break
                }
                if !queue.push(Line(key: Array(line[..<tab]), value: Array(line[(tab + 1)...]))) { break }
            }
        } catch {
            inputProblem = error
        }
        queue.finish()
        threads.join()
        if let failure = firstFailure.withLock({ $0 }) { throw failure }
        if let inputProblem { throw inputProblem }
        return .success
    }
}

/// Reads a file descriptor line by line, without the line feeds.
struct LineReader {
    let descriptor: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// The next line, or nil at the end of the input. A last line without a line feed
    /// counts. Throws `CommandError.failed` when reading fails.
    mutating func next() throws(CommandError) -> ArraySlice<UInt8>? {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[start..<newline]
                start = newline + 1
                return line
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = buffer[start...]
                start = buffer.count
                return line
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            searchFrom = buffer.count
            try fill()
        }
    }

    private mutating func fill() throws(CommandError) {
        let chunk = 64 << 10
        let oldCount = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        var count = 0
        repeat {
            count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + oldCount, chunk) }
        } while count == -1 && errno == EINTR
        if count < 0 {
            let code = errno
            buffer.removeLast(chunk)
            throw CommandError.failed("reading standard input failed: \(String(cString: strerror(code)))")
        }
        buffer.removeLast(chunk - count)
        if count == 0 { atEnd = true }
    }
}
