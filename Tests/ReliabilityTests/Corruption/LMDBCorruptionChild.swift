import CairnTestSupport
import Foundation
import KVEngine
#if canImport(Glibc)
import Glibc
#endif

/// The records of the LMDB corruption sweep: three tables, values from empty to several
/// pages (overflow pages), record versions 1 to 3, every eleventh key deleted (a tombstone).
/// Everything is a function of the seed, so a child process can recompute what to expect.
enum LMDBCorpus {
    static let tables = ["alpha", "beta", "gamma"]
    static let keysPerTable = 300

    static func writes(_ index: Int) -> Int { 1 + index % 3 }

    static func isDeleted(_ index: Int) -> Bool { index % 11 == 0 }

    static func value(table: String, index: Int, version: Int, seed: UInt64) -> [UInt8] {
        let hash = stableHash("\(seed)/\(table)/\(index)/\(version)")
        let length = [0, 7, 90, 700, 2500, 9000][Int(hash % 6)]
        var random = SeededRandom(seed: hash)
        return (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    /// The live records after `build`.
    static func expected(seed: UInt64) -> [ModelKey: ModelRecord] {
        var records: [ModelKey: ModelRecord] = [:]
        for table in tables {
            for index in 0..<keysPerTable where !isDeleted(index) {
                records[ModelKey(table: table, key: "key-\(index)")] =
                    ModelRecord(value: value(table: table, index: index, version: writes(index), seed: seed),
                                version: UInt64(writes(index)))
            }
        }
        return records
    }

    /// Creates the store, applied to LMDB in full and closed (the log retired). One LMDB
    /// transaction per commit (the applier waits for `flush`), so the same seed gives the
    /// same pages and a case replays exactly.
    static func build(directory: String, seed: UInt64) throws {
        var options = Store.Options()
        options.applyInterval = 3600
        options.applyThreshold = Int.max
        let store = try Store(directory: directory, options: options)
        for version in 1...3 {
            for table in tables {
                var batch = WriteBatch()
                for index in 0..<keysPerTable where writes(index) >= version {
                    batch.put(value(table: table, index: index, version: version, seed: seed),
                              forKey: Array("key-\(index)".utf8), in: table)
                }
                try store.commit(batch, durability: .normal)
                try store.flush()
            }
        }
        for table in tables {
            var batch = WriteBatch()
            for index in 0..<keysPerTable where isDeleted(index) { batch.delete(Array("key-\(index)".utf8), in: table) }
            try store.commit(batch)
            try store.flush()
        }
        store.close()
    }

    /// Damages the LMDB data file the way the case seed says; returns what it did.
    static func damage(_ bytes: inout [UInt8], random: inout SeededRandom) -> String {
        let pageSize = 4096
        let pages = max(1, bytes.count / pageSize)
        switch random.int(20) {
        case 0..<8:
            let offset = random.int(bytes.count)
            bytes[offset] ^= UInt8(random.int(in: 1...255))
            return "flip byte \(offset) (page \(offset / pageSize))"
        case 8..<12:
            var offsets: [Int] = []
            for _ in 0..<8 {
                let offset = random.int(bytes.count)
                bytes[offset] ^= UInt8(random.int(in: 1...255))
                offsets.append(offset)
            }
            return "flip 8 bytes \(offsets)"
        case 12..<14:
            let page = random.int(pages)
            for index in page * pageSize..<min(bytes.count, (page + 1) * pageSize) { bytes[index] = 0 }
            return "zero page \(page)"
        case 14..<16:
            let page = random.int(pages)
            for index in page * pageSize..<min(bytes.count, (page + 1) * pageSize) {
                bytes[index] = UInt8(truncatingIfNeeded: random.next())
            }
            return "garbage page \(page)"
        case 16..<19:
            let offset = random.int(min(bytes.count, 2 * pageSize))
            bytes[offset] ^= UInt8(random.int(in: 1...255))
            return "flip meta byte \(offset)"
        default:
            let page = random.int(in: 1...max(1, pages - 1))
            bytes.removeSubrange(min(bytes.count, page * pageSize)...)
            return "truncate at page \(page)"
        }
    }
}

/// The child that opens damaged copies of the corpus store, one case after the other, and
/// writes one `start <case> <what was damaged>` line before each risky open and one `done <case> …` line after:
/// a case with a start and no done is the one the child died in (a crash inside LMDB).
///
///   done <case> <outcome> wrong=<n> missing=<n> detected=<n> check=<sound|unsound> <what was damaged>
///
/// Outcomes: `open-error:<case>` (a typed error), `clean` (every record as written),
/// `detected` (some reads threw typed errors, none returned a wrong value),
/// `missing` (records silently absent: LMDB's tree lost them and nothing could tell),
/// `WRONG` (a read returned a value or version that was never written: a failure).
enum LMDBCorruptionChild {
    static let role = "lmdb-corruption"

    static func main() -> Int32 {
        let base = ChildProcess.argument("BASE")
        let work = ChildProcess.argument("WORK")
        let seed = UInt64(ChildProcess.argument("SEED")) ?? 0
        let first = Int(ChildProcess.argument("FIRST")) ?? 0
        let count = Int(ChildProcess.argument("COUNT")) ?? 0
        let results = LineWriter(path: ChildProcess.argument("RESULTS"))
        let expected = LMDBCorpus.expected(seed: seed)
        for index in first..<(first + count) {
            do {
                results.line("done \(index) " + (try runCase(base: base, work: work, seed: seed, index: index,
                                                             expected: expected, results: results)))
            } catch {
                results.line("done \(index) harness-error \(error)")
            }
        }
        return 0
    }

    /// Runs one case in `work/<index>` (under the parent's directory, so the copy of a case
    /// the child died in is removed with it).
    static func runCase(base: String, work: String, seed: UInt64, index: Int, expected: [ModelKey: ModelRecord],
                        results: LineWriter) throws -> String {
        var random = SeededRandom(seed: Reliability.caseSeed(seed, index))
        try PosixFileSystem().createDirectory(work)
        let path = work + "/\(index)"
        defer { removeDirectory(path) }
        try copyDirectory(base, to: path)
        var bytes = try readWholeFile(path + "/data.mdb")
        let damage = LMDBCorpus.damage(&bytes, random: &random)
        try writeWholeFile(path + "/data.mdb", bytes)
        results.line("start \(index) \(damage)")

        var options = Store.Options()
        options.createIfMissing = false
        let store: Store
        do {
            store = try Store(directory: path, options: options)
        } catch {
            return "open-error:\(error.caseName) wrong=0 missing=0 detected=1 check=- \(damage)"
        }
        var wrong = 0, missing = 0, detected = 0
        var examples: [String] = []
        do {
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for (key, record) in expected {
                do {
                    if let found = try snapshot.get(key.key, in: key.table) {
                        if found.value != record.value || found.version != record.version {
                            wrong += 1
                            examples.append("get \(key) returned version \(found.version), \(found.value.count) bytes")
                        }
                    } else {
                        missing += 1
                    }
                } catch {
                    detected += 1
                }
            }
            for table in LMDBCorpus.tables {
                do {
                    try snapshot.forEach(in: table) { key, value, version in
                        let modelKey = ModelKey(table: table, key: String(decoding: key, as: UTF8.self))
                        if let record = expected[modelKey] {
                            if Array(value) != record.value || version != record.version {
                                wrong += 1
                                examples.append("scan \(modelKey) gave version \(version), \(value.count) bytes")
                            }
                        } else {
                            wrong += 1
                            examples.append("scan gave key \(modelKey) that was never written (or was deleted)")
                        }
                        return true
                    }
                } catch {
                    detected += 1
                }
            }
        } catch {
            detected += 1
        }
        store.close()
        let check: String
        do {
            check = try Store.check(directory: path).isSound ? "sound" : "unsound"
        } catch {
            check = "error:\(error.caseName)"
        }
        if check != "sound" { detected += 1 }
        let outcome = wrong > 0 ? "WRONG" : missing > 0 ? "missing" : detected > 0 ? "detected" : "clean"
        return "\(outcome) wrong=\(wrong) missing=\(missing) detected=\(detected) check=\(check) \(damage)"
            + (examples.isEmpty ? "" : " e.g. \(examples.prefix(3))")
    }
}

/// The child that opens one store and reads every table of it; writes `opened <records>`,
/// `open-error:<case>` or `read-error:<case>` to its RESULTS file.
enum OpenAndReadChild {
    static let role = "open-and-read"

    static func main() -> Int32 {
        let results = LineWriter(path: ChildProcess.argument("RESULTS"))
        var options = Store.Options()
        options.createIfMissing = false
        let store: Store
        do {
            store = try Store(directory: ChildProcess.argument("STORE"), options: options)
        } catch {
            results.line("open-error:\(error.caseName) \(error)")
            return 0
        }
        defer { store.close() }
        var records = 0
        do {
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for table in try store.stats().recordsPerTable.keys {
                try snapshot.forEach(in: table) { _, _, _ in
                    records += 1
                    return true
                }
            }
        } catch let error as KVError {
            results.line("read-error:\(error.caseName) \(error)")
            return 0
        } catch {
            results.line("read-error \(error)")
            return 0
        }
        results.line("opened \(records)")
        return 0
    }
}

/// Removes a store copy (flat, with one `wal` directory) made by `copyDirectory`.
func removeDirectory(_ path: String) {
    let fileSystem = PosixFileSystem()
    for name in (try? fileSystem.contentsOfDirectory(path)) ?? [] {
        if name == "wal" {
            removeDirectory(path + "/wal")
        } else {
            unlink(path + "/" + name)
        }
    }
    rmdir(path)
}
