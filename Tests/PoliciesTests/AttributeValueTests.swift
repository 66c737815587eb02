import Foundation
import Policies
import Testing

@Suite("AttributeValue")
struct AttributeValueTests {
    /// The coded form is frozen: these exact bytes must keep decoding, and keep being written.
    @Test(
        "the JSON form is pinned",
        arguments: [
            (AttributeValue.string("Ann"), #"{"type":"string","value":"Ann"}"#),
            (.int(-42), #"{"type":"int","value":-42}"#),
            (.int(.max), #"{"type":"int","value":9223372036854775807}"#),
            (.double(2.5), #"{"type":"double","value":2.5}"#),
            (.bool(true), #"{"type":"bool","value":true}"#),
            (.bytes([0x00, 0x01, 0xFF]), #"{"type":"bytes","value":"AAH\/"}"#),
            (.date(Date(timeIntervalSinceReferenceDate: 86_400)), #"{"type":"date","value":86400}"#),
            (.null, #"{"type":"null"}"#),
        ]
    )
    func pinnedJSON(value: AttributeValue, json: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == json)
        #expect(try JSONDecoder().decode(AttributeValue.self, from: Data(json.utf8)) == value)
    }

    @Test("an unknown type tag is a decoding error, not a guess")
    func unknownTag() {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(AttributeValue.self, from: Data(#"{"type":"decimal","value":1}"#.utf8))
        }
    }

    @Test(
        "descriptions are unambiguous",
        arguments: [
            (AttributeValue.string("null"), #""null""#),
            (.int(30), "30"),
            (.double(2.5), "2.5"),
            (.bool(false), "false"),
            (.bytes([0x0A, 0xFF]), "<0aff>"),
            (.bytes([]), "<>"),
            (.date(Date(timeIntervalSince1970: 0.25)), "1970-01-01T00:00:00.250Z"),
            (.null, "null"),
        ]
    )
    func description(value: AttributeValue, text: String) {
        #expect(value.description == text)
    }

    @Test("NaN equals NaN, so a stored NaN never looks changed")
    func nanEquality() {
        #expect(AttributeValue.double(.nan) == .double(.nan))
        #expect(AttributeValue.double(.nan) == .double(-.nan))
        #expect(Set<AttributeValue>([.double(.nan), .double(-.nan)]).count == 1)
        #expect(AttributeValue.double(0.0) == .double(-0.0))
        #expect(Set<AttributeValue>([.double(0.0), .double(-0.0)]).count == 1)
        let values: PropertyValues = ["score": .double(.nan)]
        #expect(values.differingProperties(from: values).isEmpty)
        // A date whose time interval is NaN, too.
        let nanDate = Date(timeIntervalSinceReferenceDate: .nan)
        #expect(AttributeValue.date(nanDate) == .date(Date(timeIntervalSinceReferenceDate: -.nan)))
        #expect(Set<AttributeValue>([.date(nanDate), .date(Date(timeIntervalSinceReferenceDate: -.nan))]).count == 1)
        #expect(AttributeValue.date(nanDate) != .date(Date(timeIntervalSinceReferenceDate: 0)))
        let dated: PropertyValues = ["when": .date(nanDate)]
        #expect(dated.differingProperties(from: dated).isEmpty)
    }

    @Test("different cases never compare equal, even with equal payloads")
    func casesDiffer() {
        #expect(AttributeValue.int(1) != .double(1))
        #expect(AttributeValue.string("") != .null)
        #expect(AttributeValue.bool(false) != .int(0))
    }

    @Test("absent and null are the same property value")
    func absentIsNull() {
        let sparse: PropertyValues = ["name": .string("Ann")]
        let explicit: PropertyValues = ["name": .string("Ann"), "city": .null]
        #expect(sparse.value(of: "city") == .null)
        #expect(sparse.hasSameValues(as: explicit))
        #expect(!sparse.hasSameValues(as: ["name": .string("Bea")]))
        #expect(explicit.differingProperties(from: ["city": .string("Oslo")]) == ["name", "city"])
    }
}
