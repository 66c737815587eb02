import Foundation

// The JSON gateway's messages (etcd v3's grpc-gateway, under /v3/): bytes are base64 (what
// Codable's `Data` already is), int64 fields are JSON strings, and a field at its default
// value (0, false, empty) is left out of replies, so every reply field is optional here.

/// An int64 the gateway writes as a JSON string (and accepts as one).
struct WireInt: Codable, Sendable, Equatable {
    var value: Int64

    init(_ value: Int64) { self.value = value }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self), let parsed = Int64(text) {
            value = parsed
        } else {
            value = try container.decode(Int64.self)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }
}

struct WireHeader: Decodable, Sendable {
    var revision: WireInt?
    var member_id: String?
}

struct WireKeyValue: Decodable, Sendable {
    var key: Data?
    var value: Data?
    var version: WireInt?
    var mod_revision: WireInt?
    var create_revision: WireInt?
}

struct WireRangeRequest: Encodable, Sendable {
    var key: Data
    var range_end: Data? = nil
    var limit: WireInt? = nil
    var revision: WireInt? = nil
    var sort_order: String? = nil
    var sort_target: String? = nil
    var count_only: Bool? = nil
    var keys_only: Bool? = nil
    var min_mod_revision: WireInt? = nil
}

struct WireRangeResponse: Decodable, Sendable {
    var header: WireHeader?
    var kvs: [WireKeyValue]?
    var more: Bool?
    var count: WireInt?
}

struct WirePutRequest: Encodable, Sendable {
    var key: Data
    var value: Data
    var prev_kv: Bool? = nil
}

struct WirePutResponse: Decodable, Sendable {
    var header: WireHeader?
    var prev_kv: WireKeyValue?
}

struct WireDeleteRequest: Encodable, Sendable {
    var key: Data
    var range_end: Data? = nil
}

struct WireDeleteResponse: Decodable, Sendable {
    var header: WireHeader?
    var deleted: WireInt?
}

/// One compare of a txn: `target` of `key` against the value in the field that target names.
struct WireCompare: Encodable, Sendable {
    var key: Data
    var target: String
    var result: String = "EQUAL"
    var version: WireInt? = nil
    var mod_revision: WireInt? = nil
    var value: Data? = nil

    static func version(of key: Data, equals version: Int64) -> WireCompare {
        WireCompare(key: key, target: "VERSION", version: WireInt(version))
    }
}

/// One operation of a txn's `success` or `failure` list: exactly one field set.
struct WireRequestOp: Encodable, Sendable {
    var request_range: WireRangeRequest? = nil
    var request_put: WirePutRequest? = nil
    var request_delete_range: WireDeleteRequest? = nil
}

struct WireResponseOp: Decodable, Sendable {
    var response_range: WireRangeResponse?
    var response_put: WirePutResponse?
    var response_delete_range: WireDeleteResponse?
}

struct WireTxnRequest: Encodable, Sendable {
    var compare: [WireCompare] = []
    var success: [WireRequestOp] = []
    var failure: [WireRequestOp] = []
}

struct WireTxnResponse: Decodable, Sendable {
    var header: WireHeader?
    var succeeded: Bool?
    var responses: [WireResponseOp]?
}

struct WireCompactionRequest: Encodable, Sendable {
    var revision: WireInt
    var physical: Bool = true
}

struct WireStatusResponse: Decodable, Sendable {
    var header: WireHeader?
    var leader: String?
    var version: String?
}

/// The gateway's error body: a gRPC status code and message.
struct WireErrorBody: Decodable, Sendable {
    var error: String?
    var message: String?
    var code: Int?
}

struct WireWatchCreate: Encodable, Sendable {
    struct Request: Encodable, Sendable {
        var key: Data
        var range_end: Data
        var start_revision: WireInt
    }

    var create_request: Request
}

/// One line of the watch stream: `{"result": WatchResponse}` (or `{"error": …}`).
struct WireWatchLine: Decodable, Sendable {
    struct Event: Decodable, Sendable {
        var type: String?
        var kv: WireKeyValue?
    }

    struct Result: Decodable, Sendable {
        var header: WireHeader?
        var created: Bool?
        var canceled: Bool?
        var compact_revision: WireInt?
        var events: [Event]?
    }

    var result: Result?
    var error: WireErrorBody?
}
