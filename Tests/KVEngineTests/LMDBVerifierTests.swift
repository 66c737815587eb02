import CLMDB
import CairnTestSupport
import Testing
import KVEngine

/// LMDB trusts every page of its data file: a damaged branch page or page header makes it
/// abort on an assertion or read past the end of the map. The verifier reads the file
/// before LMDB opens it; each test damages one structure of a real store's data.mdb and
/// expects a typed error naming the page, from the verifier, from opening the store and
/// from `Store.check`.
@Suite struct LMDBVerifierTests {
    /// An undamaged store with several tables, overflow values, overwrites and deletions
    /// verifies clean, and the verifier counts what LMDB's own `mdb_stat` counts.
    @Test func anUndamagedStoreVerifiesCleanAndCountsWhatLMDBCounts() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try VerifierCorpus.build(directory.path)
        let summary = try LMDBVerifier.verify(path: directory.path + "/data.mdb")
        #expect(summary.unaccountedPages == 0)
        #expect(summary.freePages > 0)
        #expect(summary.trees["deep"]?.depth == 3)
        #expect((summary.trees["alpha"]?.overflowPages ?? 0) > 0)

        let env = try LMDBEnvironment(directory: directory.path, mapSize: 64 << 20, maxReaders: 4, maxTables: 16)
        defer { env.close() }
        let transaction = try env.beginTransaction(readOnly: true)
        defer { transaction.abort() }
        func lmdbCounts(_ dbi: MDB_dbi) -> LMDBVerifier.TreeCounts {
            var stat = MDB_stat()
            mdb_stat(transaction.handle, dbi, &stat)
            return LMDBVerifier.TreeCounts(depth: Int(stat.ms_depth), branchPages: stat.ms_branch_pages,
                                           leafPages: stat.ms_leaf_pages, overflowPages: stat.ms_overflow_pages,
                                           entries: stat.ms_entries)
        }
        #expect(summary.trees["free"] == lmdbCounts(0))
        #expect(summary.trees["main"] == lmdbCounts(1))
        let names = try transaction.tableNames()
        #expect(Set(names) == Set(summary.trees.keys).subtracting(["free", "main"]))
        for name in names {
            let dbi = try #require(try transaction.openTable(name, create: false))
            #expect(summary.trees[name] == lmdbCounts(dbi), "\(name)")
        }
        #expect(summary.lastPage == env.info.lastPage)
        #expect(summary.livePages + summary.freePages + 2 == summary.lastPage + 1)
    }

    @Test func aZeroedBranchPageIsATypedErrorNamingIt() throws {
        try expectDamage { file in
            let root = file.root(of: "deep")
            let branch = file.child(of: root, at: 1)
            file.zero(page: branch)
            return "page \(branch):"
        }
    }

    @Test func aBranchNodePointingAtALeafOfTheWrongLevelIsATypedError() throws {
        try expectDamage { file in
            let root = file.root(of: "deep")
            let leaf = file.child(of: file.child(of: root, at: 1), at: 0)
            file.setChild(of: root, at: 0, to: leaf)
            return "page \(leaf): flags 0x2, expected a branch page"
        }
    }

    @Test func aBranchNodePointingPastTheLastPageIsATypedError() throws {
        try expectDamage { file in
            let root = file.root(of: "deep")
            let past = file.lastPage + 1000
            file.setChild(of: root, at: 1, to: past)
            return "page \(root): node 1 points to page \(past)"
        }
    }

    @Test func aBranchNodePointingAtAMetaPageIsATypedError() throws {
        try expectDamage { file in
            let branch = file.child(of: file.root(of: "deep"), at: 0)
            file.setChild(of: branch, at: 1, to: 1)
            return "page \(branch): node 1 points to page 1"
        }
    }

    @Test func aLeafWithImpossibleFreeSpaceBoundsIsATypedError() throws {
        try expectDamage { file in
            let leaf = file.child(of: file.child(of: file.root(of: "deep"), at: 0), at: 3)
            let upper = file.u16(leaf * file.pageSize + 14)
            file.setU16(leaf * file.pageSize + 12, upper + 2)  // lower past upper
            return "page \(leaf): free-space bounds"
        }
    }

    @Test func aSubDatabaseRecordWithAnotherRootIsATypedError() throws {
        try expectDamage { file in
            // beta's record now names gamma's root: two tables share pages.
            let gamma = file.root(of: "gamma")
            file.setU64(file.tableRecord("beta") + 40, UInt64(gamma))
            return "page \(gamma): reached a second time"
        }
        try expectDamage { file in
            let record = file.tableRecord("beta")
            file.setU64(record + 40, UInt64(file.lastPage + 7))
            return "page \(record / file.pageSize): the record of the table \"beta\" has root page \(file.lastPage + 7)"
        }
    }

    @Test func aCycleInATreeIsATypedError() throws {
        try expectDamage { file in
            let root = file.root(of: "deep")
            let branch = file.child(of: root, at: 1)
            file.setChild(of: branch, at: 2, to: root)
            return "page \(root): reached a second time (node 2 of page \(branch))"
        }
    }

    @Test func anEntryCountThatDisagreesWithTheTreeIsATypedError() throws {
        try expectDamage { file in
            let record = file.tableRecord("alpha")
            file.setU64(record + 32, file.u64(record + 32) + 1)
            return "page \(file.root(of: "alpha")): the table \"alpha\" rooted here has"
        }
    }

    @Test func aFreePageThatATreeStillUsesIsATypedError() throws {
        try expectDamage { file in
            // The first page number of the first free-list record becomes a live page.
            let root = file.root(of: "alpha")
            var page = file.meta.freeRoot
            while file.u16(page * file.pageSize + 10) == 0x01 { page = file.child(of: page, at: 0) }
            let node = file.node(page, 0)
            let dataSize = Int(file.u16(node)) | Int(file.u16(node + 2)) << 16
            #expect(file.u16(node + 4) == 0 && dataSize >= 16, "a small free-list record")
            file.setU64(node + 8 + 8 + 8, UInt64(root))
            return "page \(root): listed as free by transaction"
        }
    }

    @Test func aDamagedMetaPageIsATypedError() throws {
        try expectDamage { file in
            file.bytes[16] ^= 0x01  // the magic of page 0
            return "page 0: magic"
        }
        try expectDamage { file in
            let chosen = file.meta.page
            file.setU64(chosen * file.pageSize + 16 + 120, UInt64(file.bytes.count / file.pageSize + 3))
            return "page \(chosen): truncated"
        }
    }

    /// Builds the corpus, lets `damage` change data.mdb (it returns the text the error's
    /// reason must contain), and expects that text from the verifier, from opening the store
    /// (a typed error, not a crash inside LMDB) and from `Store.check`.
    private func expectDamage(sourceLocation: SourceLocation = #_sourceLocation,
                              _ damage: (inout LMDBFileImage) -> String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try VerifierCorpus.build(directory.path)
        let path = directory.path + "/data.mdb"
        var file = try LMDBFileImage(bytes: readFile(path))
        let expected = damage(&file)
        try writeFile(path, file.bytes)

        func expectReason(_ error: KVError, _ what: String) {
            guard case let .wrongFormat(errorFile, reason) = error else {
                Issue.record("\(what): \(error), not wrongFormat", sourceLocation: sourceLocation)
                return
            }
            #expect(errorFile == path, sourceLocation: sourceLocation)
            #expect(reason.contains(expected), "\(what): \(reason)", sourceLocation: sourceLocation)
        }
        do {
            let summary = try LMDBVerifier.verify(path: path)
            Issue.record("the verifier found nothing: \(summary)", sourceLocation: sourceLocation)
        } catch {
            expectReason(error, "verify")
        }
        var options = Store.Options()
        options.createIfMissing = false
        do {
            let store = try Store(directory: directory.path, options: options)
            store.close()
            Issue.record("the damaged store opened", sourceLocation: sourceLocation)
        } catch {
            expectReason(error, "open")
        }
        let report = try Store.check(directory: directory.path)
        #expect(report.problems.contains { $0.contains(expected) }, "\(report.problems)", sourceLocation: sourceLocation)
    }
}

/// The store the tests damage: a three-level table ("deep"), tables with overflow values
/// (values over 2 KB), overwrites and deletions, closed with everything applied to LMDB.
enum VerifierCorpus {
    static func build(_ directory: String) throws {
        var options = Store.Options()
        options.mapSize = 256 << 20
        let store = try Store(directory: directory, options: options)
        defer { store.close() }
        var batch = WriteBatch()
        for index in 0..<6000 {
            batch.put(Array(repeating: UInt8(index & 0xFF), count: 200), forKey: Array("deep-\(index)".utf8), in: "deep")
        }
        try store.commit(batch)
        for round in 0..<3 {
            for table in ["alpha", "beta", "gamma"] {
                var batch = WriteBatch()
                for index in stride(from: round, to: 400, by: 2) {
                    let size = index % 5 == 0 ? 2500 + index * 7 : 40 + index % 90
                    batch.put(Array(repeating: UInt8(truncatingIfNeeded: index + round), count: size),
                              forKey: Array("\(table)-\(index)".utf8), in: table)
                }
                for index in stride(from: 0, to: 400, by: 9 + round) {
                    batch.delete(Array("\(table)-\(index)".utf8), in: table)
                }
                try store.commit(batch)
                try store.flush()
            }
        }
    }
}

/// An LMDB data file in memory, with just enough of its layout to damage chosen structures
/// (deliberately separate from the verifier's reading of it).
struct LMDBFileImage {
    var bytes: [UInt8]
    let pageSize: Int

    init(bytes: [UInt8]) {
        self.bytes = bytes
        pageSize = Int(bytes[40]) | Int(bytes[41]) << 8 | Int(bytes[42]) << 16 | Int(bytes[43]) << 24
    }

    func u16(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
    func u64(_ offset: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * $1) } }
    mutating func setU16(_ offset: Int, _ value: Int) {
        bytes[offset] = UInt8(value & 0xFF)
        bytes[offset + 1] = UInt8(value >> 8 & 0xFF)
    }
    mutating func setU64(_ offset: Int, _ value: UInt64) {
        for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
    }

    /// The meta page LMDB uses: the one with the larger txnid.
    var meta: (page: Int, mainRoot: Int, freeRoot: Int) {
        let page = u64(pageSize + 16 + 128) > u64(16 + 128) ? 1 : 0
        let base = page * pageSize + 16
        return (page, Int(u64(base + 72 + 40)), Int(u64(base + 24 + 40)))
    }

    var lastPage: Int { Int(u64(meta.page * pageSize + 16 + 120)) }

    /// The file offset of node `index` of `page`.
    func node(_ page: Int, _ index: Int) -> Int { page * pageSize + u16(page * pageSize + 16 + 2 * index) }

    func child(of page: Int, at index: Int) -> Int {
        let node = node(page, index)
        return u16(node) | u16(node + 2) << 16 | u16(node + 4) << 32
    }

    mutating func setChild(of page: Int, at index: Int, to child: Int) {
        let node = node(page, index)
        setU16(node, child & 0xFFFF)
        setU16(node + 2, child >> 16 & 0xFFFF)
        setU16(node + 4, child >> 32 & 0xFFFF)
    }

    /// The file offset of a table's MDB_db record in the main tree (a single leaf here).
    func tableRecord(_ name: String) -> Int {
        let root = meta.mainRoot
        let count = (u16(root * pageSize + 12) - 16) / 2
        for index in 0..<count {
            let node = node(root, index)
            let keySize = u16(node + 6)
            if Array(bytes[(node + 8)..<(node + 8 + keySize)]) == Array(name.utf8) { return node + 8 + keySize }
        }
        fatalError("no table \(name) in the main tree's root leaf")
    }

    func root(of table: String) -> Int { Int(u64(tableRecord(table) + 40)) }

    mutating func zero(page: Int) {
        for index in (page * pageSize)..<((page + 1) * pageSize) { bytes[index] = 0 }
    }
}
