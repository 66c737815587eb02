import Foundation
import KVEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension CairnToolTests {
    /// Keys and values of any bytes through every command that reads or prints them (put,
    /// get, delete, scan and its prefix, dump, ingest and its acknowledgements), in the
    /// tool's one encoding: printed records never hold a raw tab or line break, two keys
    /// never print alike, and `dump | ingest` copies a table exactly.
    @Suite struct BinaryKeyTests {
        /// Records whose keys and values hold what text cannot: bytes that are not UTF-8,
        /// tabs, line feeds, carriage returns, backslashes (also one followed by "x41"), NUL,
        /// ESC, DEL, a C1 control (0x9B, a terminal's CSI), and plain UTF-8 for contrast.
        static let records: [(key: [UInt8], value: [UInt8])] = [
            ([0xFF, 0xFE], Array("v".utf8)),
            ([0xFF, 0xFD], Array("v".utf8)),
            (Array("tab\there".utf8), Array("line\nfeed".utf8)),
            (Array("cr\r".utf8), Array("back\\slash \\x41".utf8)),
            (Array("\\x41".utf8), [0x00, 0x1B, 0x7F]),
            ([0x41], Array("A itself".utf8)),
            ([0xC2, 0x9B, 0x32, 0x4A], [0xC3]),
            (Array("dürüm ✓".utf8), Array("héllo\t\t".utf8)),
            ([0x00, 0x01], []),
        ]

        /// The records as `ingest` lines: key and value escaped (what `dump` prints).
        static func escapedLines() -> [String] {
            records.map { escape($0.key) + "\t" + escape($0.value) }
        }

        /// An independent encoder for the test: \xHH for every byte that is not printable
        /// ASCII, \\ for a backslash. `cairn` prints valid UTF-8 as is; both must decode alike.
        static func escape(_ bytes: [UInt8]) -> String {
            bytes.map { byte in
                if byte == UInt8(ascii: "\\") { return "\\\\" }
                if byte >= 0x20 && byte < 0x7F { return String(UnicodeScalar(byte)) }
                return "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }.joined()
        }

        /// The store's records of `table`, read through the library.
        static func stored(_ path: String, table: String = WriteBatch.defaultTable) throws -> [[UInt8]: [UInt8]] {
            let store = try Store(directory: path)
            defer { store.close() }
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            var found: [[UInt8]: [UInt8]] = [:]
            for record in try snapshot.scan(in: table) { found[record.key] = record.value }
            return found
        }

        static var expected: [[UInt8]: [UInt8]] {
            Dictionary(uniqueKeysWithValues: records.map { ($0.key, $0.value) })
        }

        @Test func ingestTellsBinaryKeysApartAndDumpRoundTrips() throws {
            let directory = try TemporaryDirectory(purpose: "binary")
            defer { directory.remove() }
            let first = directory.path + "/first", second = directory.path + "/second"
            // The input, raw bytes: two different keys, two acknowledgements.
            let raw = try cairn(["ingest", first], input: [0xFF, 0xFE, 0x09, 0x76, 0x0A, 0xFF, 0xFD, 0x09, 0x76, 0x0A])
            #expect(raw.status == 0, "\(raw)")
            #expect(Set(raw.lines) == ["ok \\xff\\xfe", "ok \\xff\\xfd"], "\(raw)")
            #expect(try Self.stored(first) == [[0xFF, 0xFE]: Array("v".utf8), [0xFF, 0xFD]: Array("v".utf8)])

            let ingest = try cairn(["ingest", first], input: Self.escapedLines().joined(separator: "\n") + "\n")
            #expect(ingest.status == 0, "\(ingest)")
            #expect(ingest.lines.count == Self.records.count)
            #expect(try Self.stored(first) == Self.expected)

            let dump = try cairn("dump", first)
            #expect(dump.status == 0, "\(dump)")
            #expect(dump.lines.count == Self.records.count, "a record printed over several lines: \(dump.output)")
            #expect(dump.lines.allSatisfy { $0.filter { $0 == "\t" }.count == 1 && !$0.contains("\r") })
            #expect(dump.output.unicodeScalars.allSatisfy { $0 == "\n" || $0 == "\t" || $0.value >= 0x20 && $0.value != 0x7F && !(0x80..<0xA0).contains($0.value) })
            let copy = try cairn(["ingest", second], input: dump.outputBytes)
            #expect(copy.status == 0, "\(copy)")
            #expect(try Self.stored(second) == Self.expected)
            #expect(try cairn("dump", second).outputBytes == dump.outputBytes)
            // Acknowledgements name keys as dump prints them.
            let printedKeys = Set(dump.lines.map { String($0.split(separator: "\t", omittingEmptySubsequences: false)[0]) })
            #expect(Set(copy.lines.map { String($0.dropFirst(3)) }) == printedKeys)
        }

        @Test func putGetDeleteAndScanTakeTheEncodingToo() throws {
            let directory = try TemporaryDirectory(purpose: "binary-args")
            defer { directory.remove() }
            let store = directory.path + "/store"
            for record in Self.records {
                let put = try cairn("put", store, "--", Self.escape(record.key), Self.escape(record.value))
                #expect(put.status == 0, "\(put)")
            }
            #expect(try Self.stored(store) == Self.expected)
            for record in Self.records {
                let get = try cairn("get", store, "--", Self.escape(record.key))
                #expect(get.status == 0, "\(get)")
                // Printed escaped on one line; read back, the same bytes.
                #expect(get.lines.count == 1, "\(get)")
                let ingestBack = try cairn(["ingest", directory.path + "/back"], input: "k\t" + get.output)
                #expect(ingestBack.status == 0)
                #expect(try Self.stored(directory.path + "/back")[Array("k".utf8)] == record.value)
                let raw = try cairn("get", store, "--raw", "--", Self.escape(record.key))
                #expect(raw.outputBytes == record.value)
            }
            let prefix = try cairn("scan", store, "--prefix", "\\xff")
            #expect(prefix.lines == ["\\xff\\xfd\tv", "\\xff\\xfe\tv"], "\(prefix)")
            let missing = try cairn("get", store, "\\xff")
            #expect(missing.status == 2, "\(missing)")
            #expect(missing.errorOutput.contains("\\xff"), "\(missing)")

            #expect(try cairn("delete", store, "\\xFF\\xFE").status == 0)
            #expect(try Self.stored(store)[[0xFF, 0xFE]] == nil)
            #expect(try Self.stored(store)[[0xFF, 0xFD]] == Array("v".utf8))
            // "\\x41" names the four bytes \ x 4 1, "\x41" the byte A: two records.
            #expect(try cairn("get", store, "\\x41").output == "A itself\n")
            #expect(try cairn("get", store, "\\\\x41").output == "\\x00\\x1b\\x7f\n")
        }

        @Test(arguments: ["\\q", "trailing\\", "\\x4", "\\xZZ"])
        func aBadEscapeIsAUsageErrorAndWritesNothing(key: String) throws {
            let directory = try TemporaryDirectory(purpose: "bad-escape")
            defer { directory.remove() }
            let store = directory.path + "/store"
            #expect(try cairn("put", store, "k", "v").status == 0)
            for arguments in [["put", store, key, "v"], ["put", store, "k", key], ["get", store, key], ["delete", store, key],
                              ["scan", store, "--prefix", key]] {
                let run = try cairn(arguments)
                #expect(run.status == 1, "\(run)")
                #expect(run.errorOutput.contains("escape") || run.errorOutput.contains("\\x needs"), "\(run)")
            }
            let ingest = try cairn(["ingest", store], input: "a\t1\n\(key)\t2\nb\t3\n")
            #expect(ingest.status == 1, "\(ingest)")
            #expect(ingest.errorOutput.contains("line 2"), "\(ingest)")
            #expect(try cairn("dump", store).lines == ["a\t1", "k\tv"])
        }

        @Test func anArgumentThatIsNotUTF8IsRefusedNotRepaired() throws {
            let directory = try TemporaryDirectory(purpose: "argv")
            defer { directory.remove() }
            let store = directory.path + "/store"
            // Before: both keys became U+FFFD and the second put overwrote the first.
            let run = try shell("exec \"$CAIRN\" put \"$S\" \"$(printf '\\377')\" v", ["S": store])
            #expect(run.status == 1, "\(run)")
            #expect(run.errorOutput.contains("not valid UTF-8"), "\(run)")
            #expect(!FileManager.default.fileExists(atPath: store))
        }
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
