import Contexts
import Foundation
import KVEngine
import Policies
import Testing

@Suite("Value codec")
struct ValueCodecTests {
    @Test("the stored form is frozen: a pinned example")
    func pinned() throws {
        // The example in ValueCodec.swift's diagram.
        #expect(ValueCodec.encode(["age": .int(30)]) == [0x01, 0x01, 0x03, 0x61, 0x67, 0x65, 0x02, 0, 0, 0, 0, 0, 0, 0, 0x1E])
        // Every tag once, names sorted, nulls left out.
        let values: PropertyValues = [
            "s": .string("é"), "i": .int(-2), "d": .double(1.5), "b": .bool(true), "y": .bytes([0xAB]),
            "t": .date(Date(timeIntervalSinceReferenceDate: 0.5)), "n": .null,
        ]
        #expect(ValueCodec.encode(values) == [
            0x01, 0x06,
            0x01, 0x62, 0x04, 0x01,                                                 // b: bool true
            0x01, 0x64, 0x03, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0,                         // d: double 1.5
            0x01, 0x69, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,       // i: int -2
            0x01, 0x73, 0x01, 0x02, 0xC3, 0xA9,                                     // s: string "é"
            0x01, 0x74, 0x06, 0x3F, 0xE0, 0, 0, 0, 0, 0, 0,                         // t: date 0.5
            0x01, 0x79, 0x05, 0x01, 0xAB,                                           // y: bytes
        ])
    }

    @Test("round trip of every type, edge values included")
    func roundTrip() throws {
        let values: PropertyValues = [
            "empty": .string(""), "text": .string("naïve 🧭 \u{0}"), "long": .string(String(repeating: "x", count: 300)),
            "min": .int(.min), "max": .int(.max), "zero": .int(0),
            "nan": .double(.nan), "inf": .double(-.infinity), "tiny": .double(.leastNonzeroMagnitude), "negzero": .double(-0.0),
            "yes": .bool(true), "no": .bool(false),
            "blob": .bytes(Array(0...255)), "none": .bytes([]),
            "when": .date(Date(timeIntervalSinceReferenceDate: 1.000_000_000_1)), "past": .date(.distantPast),
        ]
        let decoded = try ValueCodec.decode(ValueCodec.encode(values))
        #expect(decoded == values)
        if case .date(let date) = decoded["when"] {
            #expect(date.timeIntervalSinceReferenceDate.bitPattern == (1.000_000_000_1 as Double).bitPattern)
        }
        #expect(try ValueCodec.decode(ValueCodec.encode([:])) == [:])
    }

    @Test("malformed input is a typed error", arguments: [
        ([UInt8](), ValueCodecError.Problem.empty, 0),
        ([0x02, 0x00], .unsupportedVersion(2), 0),
        ([0x01], .truncated, 1),
        ([0x01, 0x05], .lengthOutOfRange(5), 1),
        ([0x01, 0x01, 0x00], .emptyName, 2),
        ([0x01, 0x01, 0x01, 0x61, 0x07], .unknownTag(7), 4),
        ([0x01, 0x01, 0x01, 0x61, 0x04, 0x02], .invalidBool(2), 5),
        ([0x01, 0x01, 0x01, 0xFF, 0x00], .invalidUTF8, 3),
        ([0x01, 0x01, 0x01, 0x61, 0x01, 0x01, 0xC3], .invalidUTF8, 6),
        ([0x01, 0x01, 0x01, 0x61, 0x02, 0x00, 0x00], .truncated, 5),
        ([0x01, 0x02, 0x01, 0x61, 0x00, 0x01, 0x61, 0x00], .duplicateProperty("a"), 5),
        ([0x01, 0x00, 0x00], .trailingBytes(1), 2),
        ([0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], .overlongVarint, 1),
        ([0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], .overlongVarint, 1),
        ([0x01, 0x01, 0x01, 0x61, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], .lengthOutOfRange(0xFFFF_FFFF), 5),
        ([0x01, 0x01, 0x01, 0x61, 0x01, 0x80], .truncated, 5),
    ] as [([UInt8], ValueCodecError.Problem, Int)])
    func malformed(bytes: [UInt8], problem: ValueCodecError.Problem, offset: Int) {
        #expect(throws: ValueCodecError(offset: offset, problem: problem)) { try ValueCodec.decode(bytes) }
    }

    @Test("every strict prefix of a valid value is rejected")
    func prefixes() {
        let bytes = ValueCodec.encode(["name": .string("Ann"), "age": .int(30), "blob": .bytes([1, 2, 3])])
        for length in 0..<bytes.count {
            #expect(throws: ValueCodecError.self) { try ValueCodec.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test("random and mutated bytes never crash the decoder")
    func randomBytes() throws {
        let seed = UInt64.random(in: 0..<UInt64.max)
        print("ValueCodecTests.randomBytes seed: \(seed)")
        var random = SplitMix(seed: seed)
        let valid = ValueCodec.encode(["name": .string("Ann"), "age": .int(30), "when": .date(.now), "ok": .bool(true)])
        var decodedCount = 0
        for round in 0..<5_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = valid
                for _ in 0..<(1 + Int(random.next() % 3)) {
                    bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            } else {
                bytes = (0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                if !bytes.isEmpty { bytes[0] = 1 }
            }
            if let values = try? ValueCodec.decode(bytes) {
                decodedCount += 1
                // Whatever decodes re-encodes to something that decodes to the same values.
                #expect(try ValueCodec.decode(ValueCodec.encode(values)) == values)
            }
        }
        #expect(decodedCount > 0)
    }

    @Test("a corrupt stored record surfaces as a typed error from fetch and existingObject")
    func corruptRecord() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            var batch = WriteBatch()
            batch.put([0x01, 0x09], forKey: [0, 0, 0, 0, 0, 0, 0, 1], in: "entity:Person")
            try store.objects.store.commit(batch)
            let context = store.context("A")
            try context.performAndWait { () throws -> Void in
                do {
                    _ = try context.fetch(FetchRequest(entityName: "Person"))
                    Issue.record("expected corruptValue")
                } catch ContextError.corruptValue(let reported, let error) {
                    #expect(reported == id)
                    #expect(error.problem == .lengthOutOfRange(9))
                }
                #expect(throws: ContextError.self) { _ = try context.existingObject(with: id) }
            }
        }
    }
}
