import CLMDB
import Foundation
import KVEngine

// The reader processes of the reader workloads: cairn-bench runs itself as
// `cairn-bench --reader-child SYSTEM DIRECTORY RECORDS READS BATCH PAUSE-US`, which opens the
// store read-only beside the benchmark's writer and makes READS point reads of random keys
// among RECORDS, BATCH per view (a Cairn snapshot, an LMDB read transaction), sleeping
// PAUSE-US microseconds after each view (0: none). Each read loads the value's first byte, as
// read-random's do: a point read that never looks at its value measures less than a lookup.
// It prints `ready` once the store is open, its keys are made and its first view was taken
// (a Cairn reader's first snapshot reads the log LMDB lacks: a start-up cost, like the open's,
// not a steady reader's), then, at the end, the seconds the reads took.

enum ReaderChild {
    static let flag = "--reader-child"

    /// Starts a reader process; `finish` waits for it and returns its seconds.
    static func start(system: String, directory: String, records: Int, reads: Int, batch: Int,
                      pauseMicroseconds: Int = 0) throws -> (process: Process, output: Pipe) {
        try spawnSelf([flag, system, directory, "\(records)", "\(reads)", "\(batch)", "\(pauseMicroseconds)"])
    }

    /// Runs this executable again with `arguments` (a child mode's flag first), its standard
    /// output on a pipe. `CAIRN_BENCH_CHILD_PREFIX` (words, e.g. a valgrind command) goes before
    /// the child's command line: a profiler that follows children breaks `Process.run`.
    static func spawnSelf(_ arguments: [String], input: Pipe? = nil) throws -> (process: Process, output: Pipe) {
        let process = Process()
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let prefix = ProcessInfo.processInfo.environment["CAIRN_BENCH_CHILD_PREFIX"]?
            .split(separator: " ").map(String.init) ?? []
        if prefix.isEmpty {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = prefix + [executable] + arguments
        }
        let output = Pipe()
        process.standardOutput = output
        if let input { process.standardInput = input }
        try process.run()
        return (process, output)
    }

    /// Waits for the child's `ready` line: its start (the runtime, its keys, the store's open)
    /// costs a tenth of a second of CPU, which a fixed settling sleep let overlap the timed run.
    static func waitUntilReady(_ child: (process: Process, output: Pipe)) throws {
        var line: [UInt8] = []
        while line.last != UInt8(ascii: "\n") {
            guard let byte = try child.output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty else {
                throw BenchError(description: "reader process exited before it was ready")
            }
            line += byte
        }
    }

    static func finish(_ child: (process: Process, output: Pipe)) throws -> Double {
        let data = child.output.fileHandleForReading.readDataToEndOfFile()
        child.process.waitUntilExit()
        let lastLine = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard child.process.terminationStatus == 0,
              let seconds = Double(lastLine.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError(description: "reader process exited \(child.process.terminationStatus): \(String(decoding: data, as: UTF8.self))")
        }
        return seconds
    }

    /// The child's side: runs the reads and prints their seconds; exits 3 on failure.
    static func main(_ arguments: [String]) -> Never {
        guard arguments.count == 6, let records = Int(arguments[2]), let reads = Int(arguments[3]),
              let batch = Int(arguments[4]), let pause = UInt32(arguments[5]) else {
            FileHandle.standardError.write(Data("cairn-bench: bad \(flag) arguments \(arguments)\n".utf8))
            exit(1)
        }
        let keys = Dataset.shuffled(records, seed: 29).map(Dataset.key)
        do {
            let seconds = arguments[0] == "lmdb"
                ? try readLMDB(arguments[1], keys: keys, reads: reads, batch: batch, pause: pause)
                : try readCairn(arguments[1], keys: keys, reads: reads, batch: batch, pause: pause)
            print(seconds)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("cairn-bench reader: \(error)\n".utf8))
            exit(3)
        }
    }

    private static func readCairn(_ directory: String, keys: [[UInt8]], reads: Int, batch: Int, pause: UInt32) throws -> Double {
        var options = cairnOptions()
        options.readOnly = true
        let store = try Store(directory: directory, options: options)
        defer { store.close() }
        try store.snapshot().close()
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        var found = 0, done = 0, bytes = 0
        let seconds = try timed {
            while done < reads {
                let snapshot = try store.snapshot()
                for _ in 0..<batch {
                    try snapshot.withValue(forKey: keys[done % keys.count]) { value, _ in
                        if let value {
                            found &+= 1
                            bytes &+= Int(value.load(as: UInt8.self))
                        }
                    }
                    done += 1
                }
                snapshot.close()
                if pause > 0 { usleep(pause) }
            }
        }
        guard found == done, bytes > 0 else { throw BenchError(description: "cairn reader found \(found) of \(done) keys") }
        return seconds
    }

    private static func readLMDB(_ directory: String, keys: [[UInt8]], reads: Int, batch: Int, pause: UInt32) throws -> Double {
        var environment: OpaquePointer?
        mdb_env_create(&environment)
        defer { mdb_env_close(environment) }
        mdb_env_set_mapsize(environment, benchMapSize)
        mdb_env_set_maxreaders(environment, 256)
        guard mdb_env_open(environment, directory, UInt32(MDB_NOTLS | MDB_RDONLY), 0o600) == 0 else {
            throw BenchError(description: "mdb_env_open(read-only) failed")
        }
        var transaction: OpaquePointer?
        guard mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction) == 0 else {
            throw BenchError(description: "mdb_txn_begin(read) failed")
        }
        defer { mdb_txn_abort(transaction) }
        var dbi: MDB_dbi = 0
        mdb_dbi_open(transaction, nil, 0, &dbi)
        mdb_txn_reset(transaction)
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        var found = 0, done = 0, bytes = 0
        let seconds = timed {
            while done < reads {
                // The cheapest fresh view LMDB has: renew a reset transaction.
                mdb_txn_renew(transaction)
                for _ in 0..<batch {
                    keys[done % keys.count].withUnsafeBytes { raw in
                        var key = MDB_val(mv_size: raw.count, mv_data: UnsafeMutableRawPointer(mutating: raw.baseAddress))
                        var data = MDB_val()
                        if mdb_get(transaction, dbi, &key, &data) == 0 {
                            found &+= 1
                            bytes &+= Int(data.mv_data.load(as: UInt8.self))
                        }
                    }
                    done += 1
                }
                mdb_txn_reset(transaction)
                if pause > 0 { usleep(pause) }
            }
        }
        guard found == done, bytes > 0 else { throw BenchError(description: "lmdb reader found \(found) of \(done) keys") }
        return seconds
    }
}
