import Foundation

// The txn request written as JSON by hand, the same document JSONEncoder makes of it (nil
// fields left out, bytes as base64, int64 as strings; a test pins the equivalence). A save
// sends one txn, and JSONEncoder spent about 300,000 instructions on a one-record txn
// (callgrind, `cairn-bench --quick --only etcd-save-1`), as much as the rest of the save's
// client side; this writer spends about 15,000.

/// A request that writes its own JSON body.
protocol WireJSONWritable {
    func write(to json: inout WireJSONWriter)
}

/// Appends one JSON object at a time to a byte buffer.
struct WireJSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Whether the object being written has a member yet (a comma goes before the next).
    private var hasMember = false

    init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    static func body(of request: some WireJSONWritable) -> Data {
        var json = WireJSONWriter()
        request.write(to: &json)
        return Data(json.bytes)
    }

    /// `{ … }` around the members `body` writes.
    mutating func object(_ body: (inout WireJSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        hasMember = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        hasMember = true
    }

    private mutating func key(_ name: StaticString) {
        if hasMember { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        hasMember = true
    }

    /// A member whose value is an object, left out when `value` is nil.
    mutating func member(_ name: StaticString, _ value: (some WireJSONWritable)?) {
        guard let value else { return }
        key(name)
        value.write(to: &self)
    }

    /// An array member, written even when empty (as JSONEncoder writes `[]`).
    mutating func member(_ name: StaticString, _ values: [some WireJSONWritable]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            value.write(to: &self)
        }
        bytes.append(UInt8(ascii: "]"))
        hasMember = true
    }

    /// Bytes as a base64 string (what Codable makes of `Data`), encoded in place: Foundation's
    /// encoder made a `Data` per value, about a fifth of the writer's time.
    mutating func member(_ name: StaticString, _ value: Data?) {
        guard let value else { return }
        key(name)
        bytes.append(UInt8(ascii: "\""))
        value.withUnsafeBytes { appendBase64($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let base64Alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Standard base64 with `=` padding (RFC 4648), as `Data.base64EncodedString()`: the
    /// output's room is made once, then filled through a pointer.
    private mutating func appendBase64(_ data: UnsafeRawBufferPointer) {
        let start = bytes.count
        let count = (data.count + 2) / 3 * 4
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "="), count: count))
        Self.base64Alphabet.withUTF8Buffer { alphabet in
            bytes.withUnsafeMutableBufferPointer { buffer in
                var out = buffer.baseAddress! + start
                var index = 0
                while index < data.count {
                    let remaining = data.count - index
                    let group = UInt32(data[index]) << 16 | (remaining > 1 ? UInt32(data[index + 1]) << 8 : 0)
                        | (remaining > 2 ? UInt32(data[index + 2]) : 0)
                    out[0] = alphabet[Int(group >> 18)]
                    out[1] = alphabet[Int((group >> 12) & 63)]
                    if remaining > 1 { out[2] = alphabet[Int((group >> 6) & 63)] }
                    if remaining > 2 { out[3] = alphabet[Int(group & 63)] }
                    out += 4
                    index += 3
                }
            }
        }
    }

    /// An int64 as the gateway's JSON string.
    mutating func member(_ name: StaticString, _ value: WireInt?) {
        guard let value else { return }
        key(name)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: String(value.value).utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func member(_ name: StaticString, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// A string member; the gateway's enum names and the like, escaped all the same.
    mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(contentsOf: [UInt8(ascii: "\\"), byte])
            case 0..<0x20:
                bytes.append(contentsOf: Array(String(format: "\\u%04x", byte).utf8))
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension WireTxnRequest: WireJSONWritable {
    func write(to json: inout WireJSONWriter) {
        json.object {
            $0.member("compare", compare)
            $0.member("success", success)
            $0.member("failure", failure)
        }
    }
}

extension WireCompare: WireJSONWritable {
    func write(to json: inout WireJSONWriter) {
        json.object {
            $0.member("key", key)
            $0.member("target", target)
            $0.member("result", result)
            $0.member("version", version)
            $0.member("mod_revision", mod_revision)
            $0.member("value", value)
        }
    }
}

extension WireRequestOp: WireJSONWritable {
    func write(to json: inout WireJSONWriter) {
        json.object {
            $0.member("request_range", request_range)
            $0.member("request_put", request_put)
            $0.member("request_delete_range", request_delete_range)
        }
    }
}

extension WireRangeRequest: WireJSONWritable {
    func write(to json: inout WireJSONWriter) {
        json.object {
            $0.member("key", key)
            $0.member("range_end", range_end)
            $0.member("limit", limit)
            $0.member("revision", revision)
            $0.member("sort_order", sort_order)
            $0.member("sort_target", sort_target)
            $0.member("count_only", count_only)
            $0.member("keys_only", keys_only)
            $0.member("min_mod_revision", min_mod_revision)
        }
    }
}

extension WirePutRequest: WireJSONWritable {
    func write(to json: inout WireJSONWriter) {
        json.object {
            $0.member("key", key)
            $0.member("value", value)
            $0.member("prev_kv", prev_kv)
        }
    }
}

extension WireDeleteRequest: WireJSONWritable {
    func write(to json: inout WireJSONWriter) {
        json.object {
            $0.member("key", key)
            $0.member("range_end", range_end)
        }
    }
}
