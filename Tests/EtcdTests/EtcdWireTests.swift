@testable import EtcdStorage
import Foundation
import Testing

/// The hand-written wire pieces against what they replace: the txn's JSON against
/// JSONEncoder's, the response head against the headers it reads. No cluster needed.
@Suite("etcd wire")
struct EtcdWireTests {
    /// Both encodings, as the parsed JSON objects they denote.
    private func parsedBoth(_ request: WireTxnRequest) throws -> (written: NSDictionary, encoded: NSDictionary) {
        let written = try #require(JSONSerialization.jsonObject(with: WireJSONWriter.body(of: request)) as? NSDictionary)
        let encoded = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? NSDictionary)
        return (written, encoded)
    }

    @Test("a txn written by hand is the document JSONEncoder makes of it, every field kind included")
    func txnMatchesJSONEncoder() throws {
        var txn = WireTxnRequest()
        let key = Data([0x62, 0x00, 0xFF, 0x01, 0x2F])
        txn.compare = [.version(of: key, equals: 7), .version(of: Data("marker".utf8), equals: 0),
                       WireCompare(key: key, target: "MOD", mod_revision: WireInt(-3)),
                       WireCompare(key: key, target: "VALUE", result: "NOT_EQUAL", value: Data())]
        txn.success = [WireRequestOp(request_put: WirePutRequest(key: key, value: Data(repeating: 0xAB, count: 100), prev_kv: true)),
                       WireRequestOp(request_put: WirePutRequest(key: Data("m".utf8), value: Data())),
                       WireRequestOp(request_delete_range: WireDeleteRequest(key: key, range_end: Data([0x63])))]
        txn.failure = [WireRequestOp(request_range: WireRangeRequest(key: key, range_end: Data([0x00]), limit: WireInt(Int64.max),
                                                                   revision: WireInt(12), sort_order: "DESCEND", sort_target: "KEY",
                                                                   count_only: false, keys_only: true, min_mod_revision: WireInt(5)))]
        let (written, encoded) = try parsedBoth(txn)
        #expect(written == encoded)
        // A different value must show: the comparison is not vacuous.
        var changed = txn
        changed.compare[0] = .version(of: key, equals: 8)
        #expect(try parsedBoth(changed).written != encoded)
    }

    @Test("an empty txn keeps its three empty lists, as JSONEncoder writes them")
    func emptyTxn() throws {
        let (written, encoded) = try parsedBoth(WireTxnRequest())
        #expect(written == encoded)
        #expect((written["compare"] as? NSArray)?.count == 0)
    }

    @Test("a string with quotes, backslashes and control bytes is escaped")
    func escapedString() throws {
        var txn = WireTxnRequest()
        txn.compare = [WireCompare(key: Data(), target: "a\"b\\c\nd\u{01}é")]
        let (written, encoded) = try parsedBoth(txn)
        #expect(written == encoded)
    }

    @Test("a response head: status, Content-Length, chunked and Connection: close, in any case")
    func responseHead() throws {
        let head = try #require(HTTPResponseHead(ArraySlice(Array(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-LENGTH:  42 \r\nTransfer-Encoding: gzip, Chunked\r\nCONNECTION: Close\r\nX-Other: 1".utf8))))
        #expect(head == HTTPResponseHead(status: 503, contentLength: 42, chunked: true, keepAlive: false))
        let plain = try #require(HTTPResponseHead(ArraySlice(Array("HTTP/1.1 200 OK\r\nContent-Length: 233\r\nConnection: keep-alive".utf8))))
        #expect(plain == HTTPResponseHead(status: 200, contentLength: 233, chunked: false, keepAlive: true))
        #expect(HTTPResponseHead(ArraySlice(Array("HTTP/1.1 200 OK".utf8)))?.contentLength == nil)
        #expect(HTTPResponseHead(ArraySlice(Array("HTTP/1.1 2x0 OK\r\n".utf8))) == nil)
        #expect(HTTPResponseHead(ArraySlice(Array("SMTP 220 hello".utf8))) == nil)
        #expect(HTTPResponseHead(ArraySlice(Array("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999".utf8)))?.contentLength == nil)
    }

    @Test("find: a pattern at the start, after a partial match, at the very end, and absent")
    func find() {
        let bytes: [UInt8] = Array("ab\r\n\r\r\n\r\nxy\r\n".utf8)
        #expect(HTTPTransport.find([13, 10, 13, 10], in: bytes, from: 0) == 5)
        #expect(HTTPTransport.find([13, 10], in: bytes, from: 3) == 5)
        #expect(HTTPTransport.find([13, 10], in: bytes, from: 10) == 11)
        #expect(HTTPTransport.find([0x7A], in: bytes, from: 0) == nil)
        #expect(HTTPTransport.chunkSize(ArraySlice(Array("1a;ext=1".utf8))) == 26)
    }

    // Replies as the gateway sends them (etcd 3.4, recorded with strace), plus the shapes a
    // failed txn, a compaction and an error take.
    static let replies: [String] = [
        #"{"header":{"cluster_id":"7230172772795642211","member_id":"1570875715872838631","revision":"8","raft_term":"2"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"8"}}},{"response_put":{"header":{"revision":"8"}}}]}"#,
        #"{"header":{"revision":"41"},"responses":[{"response_range":{"header":{"revision":"41"},"kvs":[{"key":"YmVuY2gtcmF3","create_revision":"4","mod_revision":"40","version":"37","value":"dnZ2dg=="}],"count":"1"}},{"response_range":{"header":{"revision":"41"}}}]}"#,
        #"{"header":{"revision":"9"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"9"},"prev_kv":{"key":"YQ==","version":"3"}}},{"response_delete_range":{"header":{"revision":"9"},"deleted":"1"}}]}"#,
        " {\"succeeded\" : false ,\n \"responses\":[ ], \"extra\": {\"nested\": [1, -2.5e3, null, \"x\\\"y\\u00e9\\ud83d\\ude00\"]}} ",
    ]

    static let watchLines: [String] = [
        #"{"result":{"header":{"cluster_id":"7230172772795642211","member_id":"1570875715872838631","revision":"6","raft_term":"2"},"events":[{"kv":{"key":"YmVuY2gv","create_revision":"4","mod_revision":"6","version":"3","value":"AAEBBWNvdW50AgAAAAAAAAAC"}},{"type":"DELETE","kv":{"key":"YmVuY2gvAQ==","mod_revision":"6"}}]}}"#,
        #"{"result":{"header":{"revision":"3"},"created":true}}"#,
        #"{"result":{"header":{"revision":"90"},"canceled":true,"compact_revision":"70"}}"#,
        #"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable","code":14}}"#,
    ]

    @Test("txn replies and watch lines read by hand are what JSONDecoder reads")
    func readerMatchesJSONDecoder() throws {
        for reply in Self.replies {
            let data = Data(reply.utf8)
            let read = try WireJSONReader.read(WireTxnResponse.self, from: data)
            let decoded = try JSONDecoder().decode(WireTxnResponse.self, from: data)
            #expect(String(describing: read) == String(describing: decoded), "\(reply)")
        }
        for line in Self.watchLines {
            let data = Data(line.utf8)
            let read = try WireJSONReader.read(WireWatchLine.self, from: data)
            let decoded = try JSONDecoder().decode(WireWatchLine.self, from: data)
            #expect(String(describing: read) == String(describing: decoded), "\(line)")
        }
        let first = try WireJSONReader.read(WireTxnResponse.self, from: Data(Self.replies[1].utf8))
        #expect(first.succeeded == nil)
        #expect(first.responses?[0].response_range?.kvs?[0].version == WireInt(37))
        #expect(first.responses?[0].response_range?.kvs?[0].value == Data("vvvv".utf8))
        let error = try WireJSONReader.read(WireWatchLine.self, from: Data(Self.watchLines[3].utf8))
        #expect(error.error?.code == 14 && error.error?.message == "etcdserver: no leader")
    }

    @Test("a member written twice reads as the last one, as a dictionary keeps it")
    func repeatedMember() throws {
        let reply = try WireJSONReader.read(WireTxnResponse.self, from: Data(#"{"succeeded":false,"header":{"revision":"3"},"succeeded":true}"#.utf8))
        #expect(reply.succeeded == true && reply.header?.revision == WireInt(3))
    }

    @Test("strings keep their escapes' meaning: quotes, \\u escapes, surrogate pairs")
    func readerStrings() throws {
        let value = try WireJSONReader.parse(Data(#"["a\"b\\c\/d\n", "\u00e9\ud83d\ude00", ""]"#.utf8))
        guard case .array(let elements) = value, elements.count == 3,
              case .string(let first) = elements[0], case .string(let second) = elements[1], case .string(let third) = elements[2]
        else {
            Issue.record("not an array of three strings: \(value)")
            return
        }
        #expect(first == "a\"b\\c/d\n")
        #expect(second == "é😀")
        #expect(third.isEmpty)
    }

    @Test("malformed JSON and a member of the wrong type are errors, as with JSONDecoder")
    func readerRefuses() {
        for text in [#"{"succeeded":true"#, #"{"succeeded":tru}"#, #"{"a":1,}"#, #"{"a" 1}"#, #"{"a":1} x"#, #"["#, ""] {
            #expect(throws: WireJSONError.self, "\(text)") { try WireJSONReader.parse(Data(text.utf8)) }
        }
        for text in [#"{"succeeded":"yes"}"#, #"{"header":{"revision":"r9"}}"#, #"{"responses":{}}"#,
                     #"{"responses":[{"response_range":{"kvs":[{"key":"***"}]}}]}"#] {
            #expect(throws: WireJSONError.self, "\(text)") { try WireJSONReader.read(WireTxnResponse.self, from: Data(text.utf8)) }
            #expect(throws: (any Error).self, "\(text)") { try JSONDecoder().decode(WireTxnResponse.self, from: Data(text.utf8)) }
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: WireJSONError.self) { try WireJSONReader.parse(Data(deep.utf8)) }
    }
}
