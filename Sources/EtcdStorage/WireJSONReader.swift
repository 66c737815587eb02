import Foundation

// The gateway's txn replies and watch lines read by hand, to the same values JSONDecoder makes
// of them (unknown members ignored, null or absent members nil, a member of the wrong type an
// error; a test pins the equivalence on recorded replies). Every save reads one txn reply and
// its watch reads the save back: JSONDecoder spent about 140,000 instructions on a one-record
// txn reply and 180,000 on its watch line (callgrind, `cairn-bench --quick --only etcd-save-1`).

/// One parsed JSON value.
enum WireJSONValue {
    case object(WireJSONObject)
    case array([WireJSONValue])
    case string(String)
    /// A number's text, as written.
    case number(String)
    case bool(Bool)
    case null
}

/// An object's members in the order written, looked up by a scan from the last (a name
/// written twice: the last counts, as in a dictionary). Replies have a handful of members a
/// level, and hashing every name cost more than scanning them (callgrind, etcd-save-1).
struct WireJSONObject {
    var members: [(name: String, value: WireJSONValue)] = []

    subscript(name: String) -> WireJSONValue? {
        var index = members.count
        while index > 0 {
            index -= 1
            if members[index].name == name { return members[index].value }
        }
        return nil
    }
}

/// A reply that reads itself from a parsed JSON value.
protocol WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError)
}

struct WireJSONError: Error, CustomStringConvertible {
    let description: String
}

/// A recursive-descent JSON parser over the reply's bytes.
struct WireJSONReader {
    private let bytes: [UInt8]
    private var position = 0
    private var depth = 0

    /// `data` as one JSON value, nothing but whitespace after it.
    static func parse(_ data: some Collection<UInt8>) throws(WireJSONError) -> WireJSONValue {
        var reader = WireJSONReader(bytes: Array(data))
        let value = try reader.value()
        reader.skipWhitespace()
        guard reader.position == reader.bytes.count else { throw reader.failure("trailing bytes") }
        return value
    }

    /// Reads `data` as `Reply`.
    static func read<Reply: WireJSONReadable>(_ type: Reply.Type, from data: some Collection<UInt8>) throws(WireJSONError) -> Reply {
        try Reply(json: parse(data))
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func failure(_ what: String) -> WireJSONError {
        WireJSONError(description: "malformed JSON at byte \(position): \(what)")
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    private mutating func expect(_ literal: StaticString) throws(WireJSONError) {
        let count = literal.utf8CodeUnitCount
        let matches = literal.withUTF8Buffer { wanted in
            position + count <= bytes.count && bytes[position..<(position + count)].elementsEqual(wanted)
        }
        guard matches else { throw failure("expected \(literal)") }
        position += count
    }

    private mutating func value() throws(WireJSONError) -> WireJSONValue {
        skipWhitespace()
        guard position < bytes.count else { throw failure("unexpected end") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        default: return try number()
        }
    }

    private mutating func object() throws(WireJSONError) -> WireJSONValue {
        var object = WireJSONObject()
        try list(closedBy: "}") { (reader: inout WireJSONReader) throws(WireJSONError) in
            guard reader.position < reader.bytes.count, reader.bytes[reader.position] == UInt8(ascii: "\"") else {
                throw reader.failure("expected a member name")
            }
            let name = try reader.string()
            reader.skipWhitespace()
            try reader.expect(":")
            object.members.append((name, try reader.value()))
        }
        return .object(object)
    }

    private mutating func array() throws(WireJSONError) -> WireJSONValue {
        var elements: [WireJSONValue] = []
        try list(closedBy: "]") { (reader: inout WireJSONReader) throws(WireJSONError) in elements.append(try reader.value()) }
        return .array(elements)
    }

    /// From an opening bracket to `close`: `element` read once per comma-separated entry.
    private mutating func list(closedBy close: Unicode.Scalar,
                               _ element: (inout WireJSONReader) throws(WireJSONError) -> Void) throws(WireJSONError) {
        depth += 1
        guard depth <= 64 else { throw failure("nested too deep") }
        defer { depth -= 1 }
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: close) {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            try element(&self)
            skipWhitespace()
            guard position < bytes.count else { throw failure("unexpected end") }
            let separator = bytes[position]
            position += 1
            if separator == UInt8(ascii: close) { return }
            guard separator == UInt8(ascii: ",") else { throw failure("expected , or \(close)") }
        }
    }

    private mutating func number() throws(WireJSONError) -> WireJSONValue {
        let start = position
        while position < bytes.count, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
        guard position > start else { throw failure("unexpected byte") }
        return .number(String(decoding: bytes[start..<position], as: UTF8.self))
    }

    /// A string from its opening quote; escapes decoded.
    private mutating func string() throws(WireJSONError) -> String {
        position += 1
        let start = position
        // The common case, no escape: the bytes as they are.
        while position < bytes.count, bytes[position] != UInt8(ascii: "\""), bytes[position] != UInt8(ascii: "\\") { position += 1 }
        guard position < bytes.count else { throw failure("unterminated string") }
        if bytes[position] == UInt8(ascii: "\"") {
            defer { position += 1 }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }
        var text = Array(bytes[start..<position])
        var pendingHigh: UInt32? = nil
        while true {
            guard position < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: "\"") { break }
            guard byte == UInt8(ascii: "\\") else { text.append(byte); continue }
            guard position < bytes.count else { throw failure("unterminated escape") }
            let escaped = bytes[position]
            position += 1
            switch escaped {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
            case UInt8(ascii: "b"): text.append(0x08)
            case UInt8(ascii: "f"): text.append(0x0C)
            case UInt8(ascii: "n"): text.append(0x0A)
            case UInt8(ascii: "r"): text.append(0x0D)
            case UInt8(ascii: "t"): text.append(0x09)
            case UInt8(ascii: "u"):
                guard position + 4 <= bytes.count, let unit = UInt32(String(decoding: bytes[position..<(position + 4)], as: UTF8.self), radix: 16) else {
                    throw failure("bad \\u escape")
                }
                position += 4
                var scalarValue = unit
                if (0xD800..<0xDC00).contains(unit) {
                    pendingHigh = unit
                    continue
                }
                if (0xDC00..<0xE000).contains(unit), let high = pendingHigh {
                    scalarValue = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)
                }
                pendingHigh = nil
                text.append(contentsOf: Array(String(Unicode.Scalar(scalarValue).map(Character.init) ?? "\u{FFFD}").utf8))
            default:
                throw failure("bad escape")
            }
        }
        return String(decoding: text, as: UTF8.self)
    }
}

// MARK: - Reading members

extension WireJSONValue {
    /// The members of an object, or a type error naming `what`.
    func members(_ what: String) throws(WireJSONError) -> WireJSONObject {
        guard case .object(let members) = self else { throw WireJSONError(description: "\(what): expected an object") }
        return members
    }
}

extension WireJSONObject {
    /// Member `name` read as `T`; nil when absent or null.
    func read<T: WireJSONReadable>(_ name: String) throws(WireJSONError) -> T? {
        guard let value = self[name] else { return nil }
        if case .null = value { return nil }
        return try T(json: value)
    }

    func readArray<T: WireJSONReadable>(_ name: String) throws(WireJSONError) -> [T]? {
        guard let value = self[name] else { return nil }
        switch value {
        case .null: return nil
        case .array(let elements):
            var result: [T] = []
            result.reserveCapacity(elements.count)
            for element in elements { result.append(try T(json: element)) }
            return result
        default: throw WireJSONError(description: "\(name): expected an array")
        }
    }
}

extension Bool: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        guard case .bool(let value) = json else { throw WireJSONError(description: "expected a Boolean") }
        self = value
    }
}

extension String: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        guard case .string(let value) = json else { throw WireJSONError(description: "expected a string") }
        self = value
    }
}

extension Int: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        guard case .number(let text) = json, let value = Int(text) else { throw WireJSONError(description: "expected an integer") }
        self = value
    }
}

extension Data: WireJSONReadable {
    /// Base64, as JSONDecoder's default for `Data`.
    init(json: WireJSONValue) throws(WireJSONError) {
        guard case .string(let text) = json, let value = Data(base64Encoded: text) else {
            throw WireJSONError(description: "expected base64 bytes")
        }
        self = value
    }
}

extension WireInt: WireJSONReadable {
    /// A JSON string of an int64, or a number (as `init(from:)` takes).
    init(json: WireJSONValue) throws(WireJSONError) {
        switch json {
        case .string(let text) where Int64(text) != nil: self.init(Int64(text)!)
        case .number(let text) where Int64(text) != nil: self.init(Int64(text)!)
        default: throw WireJSONError(description: "expected an int64")
        }
    }
}

extension WireHeader: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("header")
        self.init(revision: try members.read("revision"), member_id: try members.read("member_id"))
    }
}

extension WireKeyValue: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("kv")
        self.init(key: try members.read("key"), value: try members.read("value"), version: try members.read("version"),
                  mod_revision: try members.read("mod_revision"), create_revision: try members.read("create_revision"))
    }
}

extension WireRangeResponse: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("range response")
        self.init(header: try members.read("header"), kvs: try members.readArray("kvs"), more: try members.read("more"),
                  count: try members.read("count"))
    }
}

extension WirePutResponse: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("put response")
        self.init(header: try members.read("header"), prev_kv: try members.read("prev_kv"))
    }
}

extension WireDeleteResponse: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("delete response")
        self.init(header: try members.read("header"), deleted: try members.read("deleted"))
    }
}

extension WireResponseOp: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("response op")
        self.init(response_range: try members.read("response_range"), response_put: try members.read("response_put"),
                  response_delete_range: try members.read("response_delete_range"))
    }
}

extension WireTxnResponse: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("txn response")
        self.init(header: try members.read("header"), succeeded: try members.read("succeeded"),
                  responses: try members.readArray("responses"))
    }
}

extension WireErrorBody: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("error")
        self.init(error: try members.read("error"), message: try members.read("message"), code: try members.read("code"))
    }
}

extension WireWatchLine.Event: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("watch event")
        self.init(type: try members.read("type"), kv: try members.read("kv"))
    }
}

extension WireWatchLine.Result: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("watch result")
        self.init(header: try members.read("header"), created: try members.read("created"), canceled: try members.read("canceled"),
                  compact_revision: try members.read("compact_revision"), events: try members.readArray("events"))
    }
}

extension WireWatchLine: WireJSONReadable {
    init(json: WireJSONValue) throws(WireJSONError) {
        let members = try json.members("watch line")
        self.init(result: try members.read("result"), error: try members.read("error"))
    }
}
