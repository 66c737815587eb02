import Contexts
import Foundation
import Policies
import Testing

@Suite("Codable convenience")
struct CodableTests {
    enum Kind: String, Codable, Equatable { case admin, member }

    struct Address: Codable, Equatable {
        var street: String
        var number: Int
    }

    struct Profile: Codable, Equatable {
        var name: String
        var age: Int
        var city: String?
        var score: Double
        var active: Bool
        var avatar: Data
        var born: Date
        var tags: [String: Address]
        var kind: Kind
        var homepage: URL?
    }

    static let sample = Profile(
        name: "Ann", age: 30, city: nil, score: 9.5, active: false, avatar: Data([0, 1, 255]),
        born: Date(timeIntervalSinceReferenceDate: 123.456_789), tags: ["home": Address(street: "Main", number: 7)],
        kind: .admin, homepage: URL(string: "https://example.com/ann"))

    @Test("a Codable struct round-trips through an object and the store")
    func roundTrip() throws {
        try withTestStore { store in
            let writer = store.context("writer")
            let id = try writer.performAndWait {
                let object = writer.insert(entity: "Profile")
                try object.setValues(from: Self.sample)
                try writer.save()
                return object.objectID
            }
            let reader = store.context("reader")
            try reader.performAndWait {
                let object = try reader.existingObject(with: id)
                #expect(try object.decode(Profile.self) == Self.sample)
                // The type mapping, as documented.
                #expect(object["age"] == .int(30))
                #expect(object["score"] == .double(9.5))
                #expect(object["active"] == .bool(false))
                #expect(object["avatar"] == .bytes([0, 1, 255]))
                #expect(object["born"] == .date(Self.sample.born))
                #expect(object["kind"] == .string("admin"))
                #expect(object["city"] == .null)
                #expect(object["homepage"] == .string("https://example.com/ann"))
                #expect(object["tags"] == .string(#"{"home":{"number":7,"street":"Main"}}"#))
            }
        }
    }

    @Test("setValues(from:) replaces every attribute: ones the struct leaves nil become null")
    func replacesValues() throws {
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait {
                let object = context.insert(entity: "Profile")
                var profile = Self.sample
                profile.city = "Oslo"
                try object.setValues(from: profile)
                #expect(object["city"] == .string("Oslo"))
                profile.city = nil
                try object.setValues(from: profile)
                #expect(object["city"] == .null)
            }
        }
    }

    @Test("a struct with a property the entity lacks is a typed error and changes nothing")
    func unknownProperty() throws {
        struct Extra: Codable { var name: String; var shoeSize: Int }
        try withTestStore { store in
            let context = store.context("A")
            try context.performAndWait { () throws -> Void in
                let object = context.insert(entity: "Person")
                object["name"] = .string("Ann")
                let error = try #require(throws: ValidationError.self) { try object.setValues(from: Extra(name: "Bob", shoeSize: 44)) }
                #expect(error.entityName == "Person")
                #expect(error.attributeName == "shoeSize")
                #expect(error.problem == .unknownAttribute)
                #expect(object["name"] == .string("Ann"))
            }
        }
    }

    @Test("decoding reports the property that does not fit")
    func decodingErrors() throws {
        struct Strict: Codable { var name: String; var age: Int }
        #expect(throws: DecodingError.self) { try PropertyValuesDecoder.decode(Strict.self, from: ["name": .string("Ann")]) }
        #expect(throws: DecodingError.self) { try PropertyValuesDecoder.decode(Strict.self, from: ["name": .string("Ann"), "age": .string("30")]) }
        #expect(throws: DecodingError.self) { try PropertyValuesDecoder.decode(Strict.self, from: ["name": .string("Ann"), "age": .null]) }
        struct Small: Codable { var tiny: Int8 }
        #expect(throws: DecodingError.self) { try PropertyValuesDecoder.decode(Small.self, from: ["tiny": .int(300)]) }
        #expect(throws: EncodingError.self) { try PropertyValuesEncoder.encode([1, 2, 3]) }
        #expect(throws: EncodingError.self) { try PropertyValuesEncoder.encode(["huge": UInt64.max]) }
        let decoded = try PropertyValuesDecoder.decode(Strict.self, from: ["name": .string("Ann"), "age": .int(30)])
        #expect(decoded.name == "Ann" && decoded.age == 30)
    }
}
