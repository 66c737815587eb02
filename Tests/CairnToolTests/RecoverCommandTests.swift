import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension CairnToolTests {
    /// Log damage used to leave the tool with no way forward: every command refused, even
    /// when LMDB held every commit. `check` now says whether LMDB alone is complete and what
    /// recovery would drop; `cairn recover` makes that cut and says what it dropped.
    @Suite struct RecoverCommandTests {
        /// A store of `count` puts, all applied to LMDB (each `cairn put` opens, commits and
        /// closes, which applies), whose log segments are then damaged by `damage`.
        func damagedStore(_ store: String, count: Int, _ damage: (String) throws -> Void) throws {
            for index in 0..<count { #expect(try cairn("put", store, "k\(index)", "v\(index)").status == 0) }
            try damage(store + "/wal")
        }

        func segments(_ wal: String) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: wal).filter { $0.hasSuffix(".log") }.sorted().map { wal + "/" + $0 }
        }

        /// A store killed after `applied` commits reached LMDB and `pending` more only the log;
        /// then 16 bytes of garbage over the newest segment's record number `damaged` (from 0).
        func crashedStore(_ store: String, applied: Int, pending: Int, damaged: Int) throws {
            var options = Store.Options()
            options.applyInterval = 3600
            options.applyThreshold = Int.max
            options.mapSize = 64 << 20
            let opened = try Store(directory: store, options: options)
            for index in 0..<(applied + pending) {
                var batch = WriteBatch()
                batch.put("v\(index)", forKey: "k\(index)")
                try opened.commit(batch)
                if index == applied - 1 { try opened.flush() }
            }
            opened.simulateCrash()
            let path = try segments(store + "/wal").last!
            // Records of this size: a 32-byte header, then 24-byte record headers and payloads.
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            var offset = 32
            for _ in 0..<damaged {
                let length = data[offset + 4..<offset + 8].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
                offset += 24 + length
            }
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            try handle.seek(toOffset: UInt64(offset + 4))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: 16))
            try handle.close()
        }

        @Test func garbageInRecordsLMDBHoldsIsRecoveredLosingNothing() throws {
            let directory = try TemporaryDirectory(purpose: "recover-garbage")
            defer { directory.remove() }
            let store = directory.path + "/store"
            try crashedStore(store, applied: 10, pending: 0, damaged: 4)
            let refused = try cairn("get", store, "k0")
            #expect(refused.status == 3 && refused.errorOutput.contains("corrupt log"), "\(refused)")
            let check = try cairn("check", store)
            #expect(check.status == 3, "\(check)")
            #expect(check.lines.contains { $0.contains("LMDB alone complete") && $0.contains("yes") }, "\(check)")
            #expect(check.output.contains("would make this cut"), "\(check)")
            let recover = try cairn("recover", store)
            #expect(recover.status == 0, "\(recover)")
            #expect(recover.output.contains("no commit is lost"), "\(recover)")
            for index in 0..<10 { #expect(try cairn("get", store, "k\(index)").output == "v\(index)\n") }
            #expect(try cairn("check", store).status == 0)
        }

        @Test func garbageBeforeCommitsOnlyTheLogHeldSaysWhichAreLost() throws {
            let directory = try TemporaryDirectory(purpose: "recover-loss")
            defer { directory.remove() }
            let store = directory.path + "/store"
            // Records 1-5 applied; garbage over record 7 (index 6); 8-10 intact after it.
            try crashedStore(store, applied: 5, pending: 5, damaged: 6)
            let check = try cairn("check", store)
            #expect(check.status == 3, "\(check)")
            #expect(check.lines.contains { $0.contains("LMDB alone complete") && $0.contains("no") }, "\(check)")
            let recover = try cairn("recover", store)
            #expect(recover.status == 0, "\(recover)")
            #expect(recover.output.contains("commits 7 through 10 (4) are lost"), "\(recover)")
            #expect(try cairn("get", store, "k5").output == "v5\n")
            #expect(try cairn("get", store, "k6").status == 2)
        }

        @Test func aDeletedLogIsRecoveredSayingWhatCannotBeKnown() throws {
            let directory = try TemporaryDirectory(purpose: "recover-wal")
            defer { directory.remove() }
            let store = directory.path + "/store"
            try damagedStore(store, count: 3) { wal in
                for path in try segments(wal) { unlink(path) }
            }
            #expect(try cairn("get", store, "k0").status == 3)
            let check = try cairn("check", store)
            #expect(check.status == 3, "\(check)")
            #expect(check.output.contains("unknown"), "\(check)")
            let recover = try cairn("recover", store)
            #expect(recover.status == 0, "\(recover)")
            #expect(recover.output.contains("LMDB holds every commit through version 3"), "\(recover)")
            for index in 0..<3 { #expect(try cairn("get", store, "k\(index)").output == "v\(index)\n") }
            #expect(try cairn("put", store, "after", "x").status == 0)
            #expect(try cairn("check", store).status == 0)
        }

        @Test func recoverOnASoundStoreChangesNothing() throws {
            let directory = try TemporaryDirectory(purpose: "recover-sound")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v").status == 0)
            let recover = try cairn("recover", store)
            #expect(recover.status == 0, "\(recover)")
            #expect(recover.output.contains("needed no recovery"), "\(recover)")
            #expect(try cairn("check", store).output.contains("LMDB alone complete"))
        }
    }
}
