#if canImport(Glibc)
import Glibc
#endif

// LMDB keeps no page checksums and trusts every page it maps: a damaged branch page, a
// damaged page header or a page number past the end of the file makes it fail an assertion
// (SIGABRT) or touch memory past the end of the file (SIGBUS). The verifier reads the data
// file itself, before LMDB maps it, and checks every structure LMDB would trust blindly, so
// that a damaged file is a typed error (`KVError.wrongFormat`) and never a crash.
//
// It reads with pread on its own O_RDONLY descriptor, never through a map, and checks every
// offset against the size fstat reported, so a short or damaged file cannot crash it either.
//
// The on-disk layout it reads (LMDB 0.9, 64-bit, little-endian, as in liblmdb's mdb.c;
// frozen by LMDB's MDB_DATA_VERSION 1, which the meta page carries):
//
//   page header (PAGEHDRSZ = 16 bytes), at the start of every page:
//     0  mp_pgno   u64   the page's own number
//     8  mp_pad    u16
//    10  mp_flags  u16   P_BRANCH 0x01, P_LEAF 0x02, P_OVERFLOW 0x04, P_META 0x08,
//                        P_LEAF2 0x20 and P_SUBP 0x40 (DUPSORT only, never in Cairn's files)
//    12  mp_lower  u16   end of the node-offset array   } branch and leaf pages
//    14  mp_upper  u16   start of the node area          }
//    12  mp_pages  u32   pages in this overflow run       (overflow pages)
//    16  mp_ptrs   u16 × NUMKEYS, NUMKEYS = (mp_lower - 16) / 2: offsets of the nodes
//
//   node (NODESIZE = 8 bytes, then the key, then the data), 2-byte aligned:
//     0  mn_lo     u16   leaf: data size bits 0-15;  branch: child page bits 0-15
//     2  mn_hi     u16   leaf: data size bits 16-31; branch: child page bits 16-31
//     4  mn_flags  u16   leaf: F_BIGDATA 0x01, F_SUBDATA 0x02, F_DUPDATA 0x04;
//                        branch: child page bits 32-47 (PGNO_TOPWORD on 64-bit)
//     6  mn_ksize  u16   key size
//     8  key, then data: the data itself, an 8-byte overflow page number (F_BIGDATA),
//        or an MDB_db record (F_SUBDATA, a named database in the main tree)
//   Each node takes EVEN(8 + key + data) bytes; the nodes fill [mp_upper, page size).
//
//   MDB_db (48 bytes): md_pad u32, md_flags u16, md_depth u16, md_branch_pages u64,
//     md_leaf_pages u64, md_overflow_pages u64, md_entries u64, md_root u64 (~0: empty)
//
//   meta page (pages 0 and 1), MDB_meta after the page header:
//     0  mm_magic 0xBEEFC0DE u32, 4 mm_version 1 u32, 8 mm_address u64, 16 mm_mapsize u64,
//    24  mm_dbs[0] free-page tree (its md_pad is the page size), 72 mm_dbs[1] main tree,
//   120  mm_last_pg u64, 128 mm_txnid u64
//   LMDB uses the meta page with the larger txnid (page 0 on a tie).
//
//   free-page tree (FREE_DBI): key = the 8-byte txnid that freed the pages, compared as an
//     integer; data = an ID list: a u64 count, then that many u64 page numbers (its record may
//     be larger than the count needs: LMDB reserves room and zeroes the count).
//
//   overflow run: OVPAGES(size) = (16 - 1 + size) / pagesize + 1 pages, one header.

/// Checks LMDB's data file before LMDB opens it. See the comment at the top of the file.
///
/// ```swift
/// let summary = try LMDBVerifier.verify(path: directory + "/data.mdb")
/// print(summary.livePages, summary.freePages)
/// ```
///
/// Throws `KVError.wrongFormat(file:reason:)` naming the damaged page for structural damage,
/// `KVError.io` when the file cannot be read.
package enum LMDBVerifier {
    /// What a clean file held.
    package struct Summary: Sendable, Hashable {
        package var pageSize = 0
        /// The last page the chosen meta page uses.
        package var lastPage = 0
        /// The transaction of the chosen meta page, and which meta page it is (0 or 1).
        package var transaction: UInt64 = 0
        package var metaPage = 0
        /// Pages reachable from the chosen meta page (branch, leaf and overflow pages).
        package var livePages = 0
        /// Pages listed in the free-page tree.
        package var freePages = 0
        /// Pages neither reachable nor free (LMDB leaks none; not a danger when it does).
        package var unaccountedPages = 0
        /// Page, entry and depth counts per tree: "free", "main" and one per named table.
        package var trees: [String: TreeCounts] = [:]
        /// Bytes read from the file.
        package var bytesRead = 0
    }

    /// The counts LMDB keeps in a tree's MDB_db record, as the verifier found them.
    package struct TreeCounts: Sendable, Hashable {
        package var depth = 0
        package var branchPages = 0
        package var leafPages = 0
        package var overflowPages = 0
        package var entries = 0

        package init(depth: Int = 0, branchPages: Int = 0, leafPages: Int = 0, overflowPages: Int = 0, entries: Int = 0) {
            self.depth = depth
            self.branchPages = branchPages
            self.leafPages = leafPages
            self.overflowPages = overflowPages
            self.entries = entries
        }
    }

    /// Verifies the LMDB data file at `path`.
    package static func verify(path: String) throws(KVError) -> Summary {
        // A FIFO under this name would block a plain read-only open forever.
        let descriptor = try StoreFiles.open(path, flags: O_RDONLY)
        defer { close(descriptor) }
        var info = stat()
        try systemCall("fstat", path: path) { fstat(descriptor, &info) }
        var file = try PageFile(descriptor: descriptor, path: path, size: Int(info.st_size))
        defer { file.deallocate() }
        return try file.verify()
    }
}

// MARK: - Layout constants (LMDB 0.9, frozen by the file's version number)

private enum Layout {
    static let magic: UInt32 = 0xBEEF_C0DE
    static let dataVersion: UInt32 = 1
    static let headerSize = 16
    static let nodeSize = 8
    static let dbRecordSize = 48
    static let metaSize = 136
    static let invalidPage = UInt64.max
    /// LMDB's cursor stack (CURSOR_STACK): no tree is deeper.
    static let maxDepth = 32
    static let minPageSize = 512
    /// MAX_PAGESIZE without MDB_DEVEL: offsets are 16-bit.
    static let maxPageSize = 0x8000

    static let branch: UInt16 = 0x01
    static let leaf: UInt16 = 0x02
    static let overflow: UInt16 = 0x04
    static let meta: UInt16 = 0x08

    static let bigData: UInt16 = 0x01
    static let subData: UInt16 = 0x02
    static let dupData: UInt16 = 0x04

    static let integerKey: UInt16 = 0x08
    /// MDB_DUPSORT, MDB_DUPFIXED, MDB_INTEGERDUP, MDB_REVERSEDUP: Cairn creates none, and a
    /// cursor on a tree LMDB believes is DUPSORT expects structures that are not there.
    static let duplicateFlags: UInt16 = 0x04 | 0x10 | 0x20 | 0x40
    /// MDB_REVERSEKEY and MDB_INTEGERKEY change the key order; Cairn's tables use neither.
    static let keyOrderFlags: UInt16 = 0x02 | 0x08

    static func overflowPages(dataSize: Int, pageSize: Int) -> Int { (headerSize - 1 + dataSize) / pageSize + 1 }
}

/// An MDB_db record.
private struct TreeRecord {
    var flags: UInt16
    var depth: Int
    var branchPages: UInt64
    var leafPages: UInt64
    var overflowPages: UInt64
    var entries: UInt64
    var root: UInt64

    init(_ bytes: UnsafeRawPointer) {
        flags = bytes.loadUnaligned(fromByteOffset: 4, as: UInt16.self).littleEndian
        depth = Int(bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self).littleEndian)
        branchPages = bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian
        leafPages = bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian
        overflowPages = bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self).littleEndian
        entries = bytes.loadUnaligned(fromByteOffset: 32, as: UInt64.self).littleEndian
        root = bytes.loadUnaligned(fromByteOffset: 40, as: UInt64.self).littleEndian
    }
}

/// Which of LMDB's trees a walk is in: what its leaves may hold and how its keys sort.
private enum TreeKind: Equatable {
    case free
    case main
    case table(String)

    var name: String {
        switch self {
        case .free: return "free-page tree"
        case .main: return "main tree"
        case .table(let name): return "table \"\(name)\""
        }
    }

    var summaryName: String {
        switch self {
        case .free: return "free"
        case .main: return "main"
        case .table(let name): return name
        }
    }
}

/// One bit per page.
private struct PageSet {
    private var words: [UInt64]
    private(set) var count = 0

    init(pages: Int) { words = Array(repeating: 0, count: pages / 64 + 1) }

    func contains(_ page: Int) -> Bool { words[page >> 6] & (1 << UInt64(page & 63)) != 0 }

    /// Adds `page`; false when it was there already.
    mutating func insert(_ page: Int) -> Bool {
        let bit: UInt64 = 1 << UInt64(page & 63)
        if words[page >> 6] & bit != 0 { return false }
        words[page >> 6] |= bit
        count += 1
        return true
    }
}

/// A key inside one of the walk's page buffers (valid while that buffer holds its page).
private struct KeyBytes {
    var start: UnsafeRawPointer
    var count: Int
}

/// The data file, read page by page into one buffer per tree level.
private struct PageFile {
    let descriptor: Int32
    let path: String
    let size: Int
    var pageSize = 0
    var lastPage = 0
    var transaction: UInt64 = 0
    /// One page buffer per level of the tree being walked, plus one for overflow headers.
    private var buffers: UnsafeMutableRawPointer?
    private var live = PageSet(pages: 0)
    private var bytesRead = 0
    /// Page numbers listed in the free-page tree, with the txnid of their record.
    private var freeList: [(page: UInt64, transaction: UInt64)] = []

    init(descriptor: Int32, path: String, size: Int) throws(KVError) {
        self.descriptor = descriptor
        self.path = path
        self.size = size
    }

    mutating func deallocate() {
        buffers?.deallocate()
        buffers = nil
    }

    private func damaged(_ reason: String) -> KVError { KVError.wrongFormat(file: path, reason: "LMDB's data file is damaged: " + reason) }

    /// Reads `count` bytes at `offset` into `destination`; the range is within the file.
    private mutating func read(_ destination: UnsafeMutableRawPointer, count: Int, at offset: Int) throws(KVError) {
        precondition(offset >= 0 && count >= 0 && offset + count <= size, "the verifier reads inside the file only")
        var done = 0
        while done < count {
            let got = try systemCall("pread", path: path) {
                pread(descriptor, destination + done, count - done, off_t(offset + done))
            }
            if got == 0 { throw damaged("the file shrank while it was being verified") }
            done += got
        }
        bytesRead += count
    }

    // MARK: Meta pages

    mutating func verify() throws(KVError) -> LMDBVerifier.Summary {
        // Page 0 first: it tells the page size, and so where page 1 is (as mdb_env_read_header).
        let metaBytes = Layout.headerSize + Layout.metaSize
        guard size >= metaBytes else {
            throw damaged("page 0: the file is \(size) bytes, too short for LMDB's meta page")
        }
        let metaBuffer = UnsafeMutableRawPointer.allocate(byteCount: metaBytes, alignment: 16)
        defer { metaBuffer.deallocate() }
        try read(metaBuffer, count: metaBytes, at: 0)
        let meta0 = try checkMeta(metaBuffer, page: 0)
        pageSize = meta0.pageSize
        guard size >= 2 * pageSize else {
            throw damaged("page 1: the file is \(size) bytes, too short for two meta pages of \(pageSize) bytes")
        }
        try read(metaBuffer, count: metaBytes, at: pageSize)
        let meta1 = try checkMeta(metaBuffer, page: 1)
        guard meta1.pageSize == pageSize else {
            throw damaged("page 1: the meta page says pages are \(meta1.pageSize) bytes, page 0 says \(pageSize)")
        }
        let chosen = meta1.transaction > meta0.transaction ? meta1 : meta0
        let chosenPage = meta1.transaction > meta0.transaction ? 1 : 0
        transaction = chosen.transaction
        guard chosen.lastPage >= 1, chosen.lastPage < UInt64(Int.max / pageSize) else {
            throw damaged("page \(chosenPage): the meta page's last page \(chosen.lastPage) is impossible")
        }
        lastPage = Int(chosen.lastPage)
        let needed = (lastPage + 1) * pageSize
        guard needed <= size else {
            throw damaged("page \(chosenPage): truncated: the file is \(size) bytes, but the meta page uses \(lastPage + 1) pages of \(pageSize) bytes (\(needed) bytes)")
        }

        buffers = UnsafeMutableRawPointer.allocate(byteCount: (Layout.maxDepth + 2) * pageSize, alignment: 16)
        live = PageSet(pages: lastPage + 1)
        var summary = LMDBVerifier.Summary()
        summary.pageSize = pageSize
        summary.lastPage = lastPage
        summary.transaction = transaction
        summary.metaPage = chosenPage

        let freeTree = chosen.trees.0, mainTree = chosen.trees.1
        if freeTree.flags & (Layout.duplicateFlags | Layout.keyOrderFlags) != Layout.integerKey {
            throw damaged("page \(chosenPage): the free-page tree's flags are 0x\(String(freeTree.flags, radix: 16)), LMDB writes MDB_INTEGERKEY (0x8) only")
        }
        summary.trees["free"] = try walk(freeTree, kind: .free, metaPage: chosenPage)
        var tables: [(name: String, record: TreeRecord, page: Int)] = []
        if mainTree.flags != 0 {
            throw damaged("page \(chosenPage): the main tree's flags are 0x\(String(mainTree.flags, radix: 16)), Cairn's are 0")
        }
        summary.trees["main"] = try walk(mainTree, kind: .main, metaPage: chosenPage) { name, record, page in
            tables.append((name, record, page))
        }
        for table in tables {
            let kind = TreeKind.table(table.name)
            if table.record.flags != 0 {
                throw damaged("page \(table.page): \(kind.name)'s flags are 0x\(String(table.record.flags, radix: 16)), Cairn creates its tables with none")
            }
            summary.trees[table.name] = try walk(table.record, kind: kind, metaPage: table.page)
        }

        // Free pages: inside the file, not in use by any tree, listed once.
        var free = PageSet(pages: lastPage + 1)
        for (page, transaction) in freeList {
            guard page >= 2, page <= UInt64(lastPage) else {
                throw damaged("page \(page): listed as free by transaction \(transaction), but pages run from 2 to \(lastPage)")
            }
            if live.contains(Int(page)) {
                throw damaged("page \(page): listed as free by transaction \(transaction), but a tree still uses it")
            }
            if !free.insert(Int(page)) {
                throw damaged("page \(page): listed as free twice (again by transaction \(transaction))")
            }
        }
        summary.livePages = live.count
        summary.freePages = free.count
        summary.unaccountedPages = lastPage + 1 - 2 - live.count - free.count
        summary.bytesRead = bytesRead
        return summary
    }

    private struct Meta {
        var pageSize: Int
        var transaction: UInt64
        var lastPage: UInt64
        var trees: (TreeRecord, TreeRecord)
    }

    private func checkMeta(_ bytes: UnsafeRawPointer, page: Int) throws(KVError) -> Meta {
        let base = bytes
        let number = base.loadUnaligned(as: UInt64.self).littleEndian
        let flags = base.loadUnaligned(fromByteOffset: 10, as: UInt16.self).littleEndian
        guard flags == Layout.meta else {
            throw damaged("page \(page): flags 0x\(String(flags, radix: 16)), a meta page has P_META (0x8) only")
        }
        guard number == UInt64(page) else {
            throw damaged("page \(page): the meta page's header says it is page \(number)")
        }
        let meta = base + Layout.headerSize
        let magic = meta.loadUnaligned(as: UInt32.self).littleEndian
        guard magic == Layout.magic else {
            throw damaged("page \(page): magic 0x\(String(magic, radix: 16)), not LMDB's 0xbeefc0de")
        }
        let version = meta.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian
        guard version == Layout.dataVersion else {
            throw damaged("page \(page): LMDB data version \(version), this LMDB reads version \(Layout.dataVersion)")
        }
        let free = TreeRecord(meta + 24)
        let pageSize = Int(meta.loadUnaligned(fromByteOffset: 24, as: UInt32.self).littleEndian)
        guard pageSize >= Layout.minPageSize, pageSize <= Layout.maxPageSize, pageSize & (pageSize - 1) == 0 else {
            throw damaged("page \(page): page size \(pageSize) is not a power of two from \(Layout.minPageSize) to \(Layout.maxPageSize)")
        }
        return Meta(pageSize: pageSize,
                    transaction: meta.loadUnaligned(fromByteOffset: 128, as: UInt64.self).littleEndian,
                    lastPage: meta.loadUnaligned(fromByteOffset: 120, as: UInt64.self).littleEndian,
                    trees: (free, TreeRecord(meta + 72)))
    }

    // MARK: Trees

    /// The walk of one tree: what it counted so far.
    private struct Walk {
        var kind: TreeKind
        var depth: Int
        var counts = LMDBVerifier.TreeCounts()
    }

    /// Walks the tree of `record` (found in `metaPage`, the meta or main-tree page holding
    /// it) and checks its counts; `table` receives the named databases of the main tree.
    private mutating func walk(_ record: TreeRecord, kind: TreeKind, metaPage: Int,
                               table: ((String, TreeRecord, Int) -> Void)? = nil) throws(KVError) -> LMDBVerifier.TreeCounts {
        let owner = "page \(metaPage): the record of the \(kind.name)"
        if record.root == Layout.invalidPage {
            guard record.depth == 0, record.branchPages == 0, record.leafPages == 0, record.overflowPages == 0,
                  record.entries == 0 else {
                throw damaged("\(owner) says it is empty but counts depth \(record.depth), \(record.leafPages) leaf pages, \(record.entries) entries")
            }
            return LMDBVerifier.TreeCounts()
        }
        guard record.root >= 2, record.root <= UInt64(lastPage) else {
            throw damaged("\(owner) has root page \(record.root), but pages run from 2 to \(lastPage)")
        }
        guard record.depth >= 1, record.depth <= Layout.maxDepth else {
            throw damaged("\(owner) has depth \(record.depth), LMDB's trees are 1 to \(Layout.maxDepth) deep")
        }
        var state = Walk(kind: kind, depth: record.depth)
        state.counts.depth = record.depth
        try walkPage(Int(record.root), level: 1, from: "\(owner) (root)", lower: nil, upper: nil,
                     state: &state, table: table)
        let counts = state.counts
        func mismatch(_ what: String, _ found: Int, _ recorded: UInt64) throws(KVError) {
            if UInt64(found) != recorded {
                throw damaged("page \(record.root): the \(kind.name) rooted here has \(found) \(what), its record in page \(metaPage) says \(recorded)")
            }
        }
        try mismatch("branch pages", counts.branchPages, record.branchPages)
        try mismatch("leaf pages", counts.leafPages, record.leafPages)
        try mismatch("overflow pages", counts.overflowPages, record.overflowPages)
        try mismatch("entries", counts.entries, record.entries)
        return counts
    }

    private func buffer(level: Int) -> UnsafeMutableRawPointer { buffers! + level * pageSize }

    /// Checks page `number` at `level` (1 = root) and everything below it. Its keys must lie
    /// in [lower, upper) (the separators of its parent); `from` says who points at it.
    private mutating func walkPage(_ number: Int, level: Int, from: String, lower: KeyBytes?, upper: KeyBytes?,
                                   state: inout Walk, table: ((String, TreeRecord, Int) -> Void)?) throws(KVError) {
        guard live.insert(number) else {
            throw damaged("page \(number): reached a second time (\(from)): a cycle or a page shared by two parents")
        }
        let page = UnsafeRawPointer(buffer(level: level))
        try read(buffer(level: level), count: pageSize, at: number * pageSize)
        let stored = page.loadUnaligned(as: UInt64.self).littleEndian
        guard stored == UInt64(number) else {
            throw damaged("page \(number): its header says it is page \(stored) (\(from))")
        }
        let isLeaf = level == state.depth
        let flags = page.loadUnaligned(fromByteOffset: 10, as: UInt16.self).littleEndian
        let expected = isLeaf ? Layout.leaf : Layout.branch
        guard flags == expected else {
            throw damaged("page \(number): flags 0x\(String(flags, radix: 16)), expected a \(isLeaf ? "leaf" : "branch") page (0x\(String(expected, radix: 16))) at level \(level) of the \(state.kind.name), which is \(state.depth) deep (\(from))")
        }
        let lowerBound = Int(page.loadUnaligned(fromByteOffset: 12, as: UInt16.self).littleEndian)
        let upperBound = Int(page.loadUnaligned(fromByteOffset: 14, as: UInt16.self).littleEndian)
        guard lowerBound >= Layout.headerSize, lowerBound <= upperBound, upperBound <= pageSize,
              (lowerBound - Layout.headerSize) % 2 == 0 else {
            throw damaged("page \(number): free-space bounds lower \(lowerBound), upper \(upperBound) are impossible in a page of \(pageSize) bytes")
        }
        let count = (lowerBound - Layout.headerSize) / 2
        guard count >= (isLeaf ? 1 : 2) else {
            throw damaged("page \(number): a \(isLeaf ? "leaf" : "branch") page with \(count) nodes")
        }
        if isLeaf { state.counts.leafPages += 1 } else { state.counts.branchPages += 1 }

        // Every node lies inside the node area, and the nodes fill it exactly.
        var used = 0
        var previous: KeyBytes? = nil
        for index in 0..<count {
            let offset = Int(page.loadUnaligned(fromByteOffset: Layout.headerSize + 2 * index, as: UInt16.self).littleEndian)
            guard offset >= upperBound, offset % 2 == 0, offset + Layout.nodeSize <= pageSize else {
                throw damaged("page \(number): node \(index) at offset \(offset) is outside the node area [\(upperBound), \(pageSize))")
            }
            let node = page + offset
            let low = Int(node.loadUnaligned(as: UInt16.self).littleEndian)
            let high = Int(node.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian)
            let nodeFlags = node.loadUnaligned(fromByteOffset: 4, as: UInt16.self).littleEndian
            let keySize = Int(node.loadUnaligned(fromByteOffset: 6, as: UInt16.self).littleEndian)
            let key = KeyBytes(start: node + Layout.nodeSize, count: keySize)
            if isLeaf {
                let dataSize = low | high << 16
                guard nodeFlags & ~(Layout.bigData | Layout.subData | Layout.dupData) == 0 else {
                    throw damaged("page \(number): node \(index) has unknown flags 0x\(String(nodeFlags, radix: 16))")
                }
                let big = nodeFlags & Layout.bigData != 0
                let inPage = big ? 8 : dataSize
                guard offset + Layout.nodeSize + keySize + inPage <= pageSize else {
                    throw damaged("page \(number): node \(index) (key \(keySize) bytes, data \(inPage) bytes at offset \(offset)) runs past the end of the page")
                }
                used += (Layout.nodeSize + keySize + inPage + 1) & ~1
                try checkLeafNode(page: number, index: index, flags: nodeFlags, key: key, dataSize: dataSize,
                                  data: node + Layout.nodeSize + keySize, state: &state, table: table)
            } else {
                guard offset + Layout.nodeSize + keySize <= pageSize else {
                    throw damaged("page \(number): node \(index) (key \(keySize) bytes at offset \(offset)) runs past the end of the page")
                }
                used += (Layout.nodeSize + keySize + 1) & ~1
            }
            // Keys ascend; a branch page's first key is not used (its child holds the
            // smallest keys), the others separate its children.
            if isLeaf || index > 0 {
                if let previous, compare(previous, key, kind: state.kind) >= 0 {
                    throw damaged("page \(number): key of node \(index) does not sort after the key of node \(index - 1)")
                }
                if index == (isLeaf ? 0 : 1), let lower, compare(lower, key, kind: state.kind) > 0 {
                    throw damaged("page \(number): key of node \(index) sorts before the separator that leads here (\(from))")
                }
                if index == count - 1, let upper, compare(key, upper, kind: state.kind) >= 0 {
                    throw damaged("page \(number): key of node \(index) does not sort before the next separator of its parent (\(from))")
                }
                previous = key
            }
        }
        guard used == pageSize - upperBound else {
            throw damaged("page \(number): its \(count) nodes take \(used) bytes, but the node area is \(pageSize - upperBound) bytes")
        }
        if isLeaf {
            state.counts.entries += count
            return
        }
        for index in 0..<count {
            let offset = Int(page.loadUnaligned(fromByteOffset: Layout.headerSize + 2 * index, as: UInt16.self).littleEndian)
            let node = page + offset
            let child = UInt64(node.loadUnaligned(as: UInt16.self).littleEndian)
                | UInt64(node.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian) << 16
                | UInt64(node.loadUnaligned(fromByteOffset: 4, as: UInt16.self).littleEndian) << 32
            guard child >= 2, child <= UInt64(lastPage) else {
                throw damaged("page \(number): node \(index) points to page \(child), but pages run from 2 to \(lastPage)")
            }
            func key(at index: Int) -> KeyBytes {
                let offset = Int(page.loadUnaligned(fromByteOffset: Layout.headerSize + 2 * index, as: UInt16.self).littleEndian)
                let size = Int(page.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self).littleEndian)
                return KeyBytes(start: page + offset + Layout.nodeSize, count: size)
            }
            try walkPage(Int(child), level: level + 1, from: "node \(index) of page \(number)",
                         lower: index == 0 ? lower : key(at: index), upper: index == count - 1 ? upper : key(at: index + 1),
                         state: &state, table: table)
        }
    }

    /// Checks what a leaf node holds, by tree: a free-page list, a named database, a value.
    private mutating func checkLeafNode(page: Int, index: Int, flags: UInt16, key: KeyBytes, dataSize: Int,
                                        data: UnsafeRawPointer, state: inout Walk,
                                        table: ((String, TreeRecord, Int) -> Void)?) throws(KVError) {
        let big = flags & Layout.bigData != 0
        if flags & Layout.dupData != 0 {
            throw damaged("page \(page): node \(index) has F_DUPDATA, but no tree of Cairn's has duplicates")
        }
        if flags & Layout.subData != 0 {
            guard state.kind == .main, !big, dataSize == Layout.dbRecordSize else {
                throw damaged("page \(page): node \(index) has F_SUBDATA (flags 0x\(String(flags, radix: 16)), \(dataSize) bytes) outside a database record of the main tree")
            }
            let name = String(decoding: UnsafeRawBufferPointer(start: key.start, count: key.count), as: UTF8.self)
            table?(name, TreeRecord(data), page)
            return
        }
        var overflow: (first: Int, pages: Int)? = nil
        if big {
            let first = data.loadUnaligned(as: UInt64.self).littleEndian
            guard first >= 2, first <= UInt64(lastPage) else {
                throw damaged("page \(page): node \(index) points to overflow page \(first), but pages run from 2 to \(lastPage)")
            }
            overflow = try checkOverflow(Int(first), dataSize: dataSize, from: "node \(index) of page \(page)")
            state.counts.overflowPages += overflow!.pages
        }
        guard state.kind == .free else { return }
        // A free-page record: an 8-byte txnid, then a u64 count and that many page numbers.
        guard key.count == 8 else {
            throw damaged("page \(page): node \(index) of the free-page tree has a \(key.count)-byte key, not a txnid")
        }
        let freedBy = key.start.loadUnaligned(as: UInt64.self).littleEndian
        guard freedBy >= 1, freedBy <= transaction else {
            throw damaged("page \(page): node \(index) of the free-page tree is for transaction \(freedBy), after the file's last (\(transaction))")
        }
        guard dataSize >= 8, dataSize % 8 == 0 else {
            throw damaged("page \(page): node \(index) of the free-page tree holds \(dataSize) bytes, not a list of page numbers")
        }
        if let overflow {
            // Large lists live in overflow pages: read them whole.
            let bytes = overflow.pages * pageSize
            let list = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
            defer { list.deallocate() }
            try read(list, count: bytes, at: overflow.first * pageSize)
            try collectFreePages(list + Layout.headerSize, dataSize: dataSize, transaction: freedBy, page: page, index: index)
        } else {
            try collectFreePages(data, dataSize: dataSize, transaction: freedBy, page: page, index: index)
        }
    }

    private mutating func collectFreePages(_ list: UnsafeRawPointer, dataSize: Int, transaction: UInt64, page: Int,
                                           index: Int) throws(KVError) {
        let count = list.loadUnaligned(as: UInt64.self).littleEndian
        guard count <= UInt64(dataSize / 8 - 1) else {
            throw damaged("page \(page): node \(index) of the free-page tree lists \(count) pages in \(dataSize) bytes")
        }
        for position in 0..<Int(count) {
            freeList.append((list.loadUnaligned(fromByteOffset: 8 + 8 * position, as: UInt64.self).littleEndian, transaction))
        }
    }

    /// Checks the header of an overflow run and claims its pages.
    private mutating func checkOverflow(_ first: Int, dataSize: Int, from: String) throws(KVError) -> (first: Int, pages: Int) {
        let header = buffer(level: Layout.maxDepth + 1)
        try read(header, count: Layout.headerSize, at: first * pageSize)
        let stored = header.loadUnaligned(as: UInt64.self).littleEndian
        let flags = header.loadUnaligned(fromByteOffset: 10, as: UInt16.self).littleEndian
        let pages = Int(header.loadUnaligned(fromByteOffset: 12, as: UInt32.self).littleEndian)
        guard stored == UInt64(first) else {
            throw damaged("page \(first): its header says it is page \(stored) (overflow page of \(from))")
        }
        guard flags == Layout.overflow else {
            throw damaged("page \(first): flags 0x\(String(flags, radix: 16)), expected an overflow page (0x4) for \(from)")
        }
        let needed = Layout.overflowPages(dataSize: dataSize, pageSize: pageSize)
        guard pages >= needed, first + pages - 1 <= lastPage else {
            throw damaged("page \(first): an overflow run of \(pages) pages for \(dataSize) bytes (\(from)); it needs \(needed) and the file ends at page \(lastPage)")
        }
        for page in first..<(first + pages) where !live.insert(page) {
            throw damaged("page \(page): reached a second time (overflow run at page \(first), \(from)): a page shared by two owners")
        }
        return (first, pages)
    }

    /// LMDB's key order: integers for the free-page tree, else memcmp and then shorter first.
    private func compare(_ left: KeyBytes, _ right: KeyBytes, kind: TreeKind) -> Int {
        if kind == .free, left.count == 8, right.count == 8 {
            let a = left.start.loadUnaligned(as: UInt64.self).littleEndian
            let b = right.start.loadUnaligned(as: UInt64.self).littleEndian
            return a < b ? -1 : a > b ? 1 : 0
        }
        let common = min(left.count, right.count)
        let difference = common == 0 ? 0 : memcmp(left.start, right.start, common)
        if difference != 0 { return Int(difference) }
        return left.count < right.count ? -1 : left.count > right.count ? 1 : 0
    }
}
