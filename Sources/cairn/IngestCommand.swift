import Contexts
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
            .value("max-line", "BYTES", "Refuse a line longer than BYTES (default \(defaultMaxLine), 16 MiB)."),
            KeyValueCommands.tableOption,
        ],
        discussion: """
            Each line is split at its first tab into key and value, and committed on its own
            with full durability. Concurrent writers share fdatasync calls (group commit).
            After a line's commit is on disk, 'ok KEY' is printed on standard output at once
            (the lines of commits that finish together in one write), so a reader knows
            exactly which records are durable. Lines may be acknowledged
            out of input order. Empty lines are skipped. A line without a tab, with a bad
            escape or longer than --max-line stops the input as soon as it is seen (lines
            before it are still committed, nothing of it is) and exits with status 1.
            Creates the store when the directory does not exist or is empty. At the end a
            summary (lines read, commits, commits/s) goes to standard error; while standard
            error is a terminal, a progress line too.

            \(KeyValueCommands.encodingNote) A raw tab after the first one is part of the
            value. 'cairn dump' prints lines in this form.
            """,
        run: run
    )

    /// The default of `--max-line`: far above any key, and a bound on what one line can
    /// make the tool hold in memory.
    static let defaultMaxLine = 16 << 20
    /// What the reader may queue for the writers, in key and value bytes: with the line
    /// limit, what bounds ingest's memory however long the input is.
    static let queuedBytesLimit = 64 << 20

    private struct Line: Sendable {
        var key: [UInt8]
        var value: [UInt8]
    }

    @Sendable private static func run(_ arguments: Arguments) throws -> ExitStatus {
        let writers = try arguments.integer("writers", default: 4, in: 1...1024)
        // Four text bytes per byte (\xHH) for the largest commit the log takes, and a tab.
        let maxLine = try arguments.integer("max-line", default: defaultMaxLine, in: 1...(4 << 30) + 4 * 511 + 1)
        let table = try KeyValueCommands.table(arguments)
        let commit: @Sendable (_ key: [UInt8], _ value: [UInt8]) throws -> Void
        let close: () -> Void
        if let records = try EtcdRecords.open(arguments.positionals[0]) {
            // On etcd a line is acknowledged once the cluster has its txn: on a majority's disks.
            commit = { key, value in
                do throws(StorageError) { try records.put(value, forKey: key, in: table) } catch { throw CommandError.failed(error.message) }
            }
            close = records.close
        } else {
            let store = try StoreAccess.openOrCreate(arguments.positionals[0])
            commit = { key, value in
                var batch = WriteBatch()
                batch.put(value, forKey: key, in: table)
                try store.commit(batch, durability: .full)
            }
            close = store.close
        }
        defer { close() }

        let queue = WorkQueue<Line>(capacity: writers * 64, byteLimit: queuedBytesLimit)
        let firstFailure = ConditionLock<(any Error)?>(nil)
        // The `ok` lines leave through one thread, so that a writer goes from one commit to
        // the next without waiting for output (AcknowledgementWriter).
        let acknowledgements = AcknowledgementWriter(.output)
        let report = IngestReport(acknowledgements: acknowledgements)
        let threads = ThreadGroup(count: writers) { _ in
            while let line = queue.pop() {
                do {
                    try commit(line.key, line.value)
                } catch {
                    firstFailure.withLock { if $0 == nil { $0 = error } }
                    queue.cancel()
                    return
                }
                acknowledgements.acknowledge(line.key)
            }
        }

        var inputProblem: CommandError? = nil
        var reader = LineReader(descriptor: 0, maxLine: maxLine)
        var lineNumber = 0
        do throws(CommandError) {
            while true {
                let next: ArraySlice<UInt8>?
                do throws(LineReader.Failure) {
                    next = try reader.next()
                } catch {
                    switch error {
                    case .tooLong(let limit):
                        throw CommandError.usage(
                            "input line \(lineNumber + 1) is longer than --max-line (\(limit) bytes); nothing of it was committed")
                    case .read(let code):
                        throw CommandError.failed("reading standard input failed: \(String(cString: strerror(code)))")
                    }
                }
                guard let line = next else { break }
                lineNumber += 1
                if lineNumber % 1024 == 0 { report.linesRead(lineNumber) }
                if line.isEmpty { continue }
                guard let tab = line.firstIndex(of: UInt8(ascii: "\t")) else {
                    throw CommandError.usage("input line \(lineNumber) has no tab between key and value")
                }
                let key: [UInt8], value: [UInt8]
                do throws(KeyText.DecodingError) {
                    key = try KeyText.decode(line[..<tab])
                    do throws(KeyText.DecodingError) {
                        value = try KeyText.decode(line[(tab + 1)...])
                    } catch {
                        throw KeyText.DecodingError(offset: tab - line.startIndex + 1 + error.offset, reason: error.reason)
                    }
                } catch {
                    throw CommandError.usage("input line \(lineNumber): \(error.reason), at byte \(error.offset + 1)")
                }
                if key.isEmpty { throw CommandError.usage("input line \(lineNumber) has an empty key") }
                if !queue.push(Line(key: key, value: value), bytes: key.count + value.count) { break }
            }
        } catch {
            inputProblem = error
        }
        queue.finish()
        threads.join()
        acknowledgements.finish()
        report.finish(lines: lineNumber)
        if let failure = firstFailure.withLock({ $0 }) { throw failure }
        if let inputProblem { throw inputProblem }
        return .success
    }
}

/// Reads a file descriptor line by line, without the line feeds, holding at most one line
/// of `maxLine` bytes (and one read's worth past it).
struct LineReader {
    let descriptor: Int32
    let maxLine: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false

    enum Failure: Error {
        /// The line is longer than `maxLine`: refused as soon as that many bytes came without
        /// a line feed, before the rest is read.
        case tooLong(limit: Int)
        /// read(2) failed with this errno.
        case read(Int32)
    }

    init(descriptor: Int32, maxLine: Int) {
        self.descriptor = descriptor
        self.maxLine = maxLine
    }

    /// The next line, or nil at the end of the input. A last line without a line feed
    /// counts.
    mutating func next() throws(Failure) -> ArraySlice<UInt8>? {
        var searchFrom = start
        while true {
            if let newline = newline(from: searchFrom) {
                guard newline - start <= maxLine else { throw .tooLong(limit: maxLine) }
                let line = buffer[start..<newline]
                start = newline + 1
                return line
            }
            guard buffer.count - start <= maxLine else { throw .tooLong(limit: maxLine) }
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

    /// The index of the first line feed at or after `index` (memchr: this is the hot loop
    /// of a long line).
    private func newline(from index: Int) -> Int? {
        buffer.withUnsafeBytes { raw in
            guard index < raw.count, let found = memchr(raw.baseAddress! + index, 0x0A, raw.count - index) else {
                return nil
            }
            return raw.baseAddress!.distance(to: UnsafeRawPointer(found))
        }
    }

    private mutating func fill() throws(Failure) {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var count = 0
        repeat {
            count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
        } while count == -1 && errno == EINTR
        if count < 0 { throw .read(errno) }
        if count == 0 { atEnd = true }
        chunk.withUnsafeBytes { buffer.append(contentsOf: $0.prefix(count)) }
    }
}
