import CairnTestSupport
import Contexts
import Foundation
import Testing

/// The byte reading of a permanent ID's URI (ObjectID+URIParsing.swift) accepts only what the
/// general reading by characters accepts, giving the same ID.
@Suite("Object IDs: reading URIs back")
struct ObjectIDURIParsingTests {
    static let edgeCases = [
        "cairn://Person/p7", "cairn://Person/p0", "cairn://Person/p07", "cairn://Person/p00", "cairn://Person/p",
        "cairn://Person/p18446744073709551615", "cairn://Person/p18446744073709551616", "cairn://Person/p99999999999999999999",
        "cairn://Person/p+7", "cairn://Person/p-7", "cairn://Person/p7/", "cairn://Person/p7 ", "cairn://Person/p7\u{301}",
        "cairn://Person/\u{301}p7", "cairn://Person\u{301}/p7", "cairn:/Person/p7", "Cairn://Person/p7", "cairn://Person/q7",
        "cairn:///p7", "cairn://1Person/p7", "cairn://_Person2/p7", "cairn://Per-son/p7", "cairn://Pérson/p7",
        "cairn://Person//p7", "cairn://Person", "cairn://", "", "cairn://P/p1",
        "cairn://" + String(repeating: "A", count: 100) + "/p1", "cairn://" + String(repeating: "A", count: 101) + "/p1",
        "cairn://Person/t" + UUID().uuidString, "cairn://Person/t" + UUID().uuidString.lowercased(),
    ]

    @Test("the byte reading agrees with the general one: on edge cases and on random near-URIs (prints its seed)")
    func theByteReadingAgreesWithTheGeneralOne() {
        for uri in Self.edgeCases { Self.check(uri) }
        // The permanent fast path covers the canonical form: always found, and the same.
        #expect(ObjectID(canonicalPermanentURI: "cairn://Person/p42") == ObjectID(entityName: "Person", primaryKey: 42))
        #expect(ObjectID(canonicalPermanentURI: "cairn://Person/p0") == ObjectID(entityName: "Person", primaryKey: 0))
        #expect(ObjectID(canonicalPermanentURI: "cairn://Person/p\(UInt64.max)")?.primaryKey == UInt64.max)
        let seed = SeededRandom.seed()
        print("ObjectIDURIParsingTests seed: \(seed) (replay with CAIRN_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let alphabet = Array("cairn:/Pp0123456789t_Ae-é\u{301} ")
        for _ in 0..<20_000 {
            // A valid URI with a few characters changed, dropped or added.
            var characters = Array("cairn://Person/p\(random.next(upTo: 1_000_000))")
            for _ in 0..<Int(random.next(upTo: 3)) {
                let position = Int(random.next(upTo: UInt64(characters.count)))
                let character = alphabet[Int(random.next(upTo: UInt64(alphabet.count)))]
                switch random.next(upTo: 3) {
                case 0: characters[position] = character
                case 1: characters.remove(at: position)
                default: characters.insert(character, at: position)
                }
            }
            Self.check(String(characters), seed: seed)
        }
    }

    static func check(_ uri: String, seed: UInt64 = 0) {
        let general = ObjectID(anyURI: uri)
        if let fast = ObjectID(canonicalPermanentURI: uri) {
            #expect(fast == general && fast.entityName == general?.entityName, "\(uri.debugDescription), seed \(seed)")
        }
        #expect(ObjectID(uriString: uri) == general, "\(uri.debugDescription), seed \(seed)")
        if let general, !general.isTemporaryID {
            // Every permanent ID's canonical URI takes the fast path.
            #expect(ObjectID(canonicalPermanentURI: general.uriString) == general, "\(uri.debugDescription), seed \(seed)")
        }
    }
}
