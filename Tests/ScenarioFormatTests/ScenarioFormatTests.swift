import Contexts
import Foundation
import Policies
import ScenarioFormat
import Testing

/// The scenario-file parser on hostile input: every input is a scenario or a typed error,
/// never a trap. The fuzz target `fuzz-scenario-file` (Fuzz/) checks the same properties on
/// generated input; its saved inputs (Fuzz/Regressions/, Fuzz/Corpus/) are replayed here so
/// `make test` keeps them passing without building the fuzzers.
@Suite struct ScenarioFormatTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz").path

    static func fuzzInputs() -> [(name: String, bytes: [UInt8])] {
        var inputs: [(String, [UInt8])] = []
        for folder in ["Regressions", "Corpus"] {
            let directory = fuzzDirectory + "/\(folder)/fuzz-scenario-file"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") && !name.hasPrefix("README") {
                if let data = FileManager.default.contents(atPath: directory + "/" + name) {
                    inputs.append(("\(folder)/fuzz-scenario-file/\(name)", Array(data)))
                }
            }
        }
        return inputs
    }

    /// The parser's error for `text`, or nil when it reads.
    static func scenarioError(_ text: String) -> ScenarioFileError? {
        do {
            _ = try Scenario.parse(text)
            return nil
        } catch {
            return error
        }
    }

    static func jsonError(_ text: String) -> JSONSyntaxError? {
        do {
            _ = try JSONValue.parse(text)
            return nil
        } catch {
            return error
        }
    }

    // MARK: - The fuzz target's inputs

    @Test func fuzzInputsParseOrFailTypedAndWhatReadsRendersBack() throws {
        let inputs = Self.fuzzInputs()
        #expect(inputs.count >= 10, "no inputs under \(Self.fuzzDirectory)")
        var parsed = 0
        for (name, bytes) in inputs {
            if let value = try? JSONValue.parse(String(decoding: bytes, as: UTF8.self)) {
                for pretty in [true, false] {
                    let again = try JSONValue.parse(value.rendered(pretty: pretty))
                    #expect(again == Self.sortedKeys(value), "\(name): rendered JSON reads back differently")
                }
            }
            // A typed throw: the only way out besides a scenario is a ScenarioFileError.
            guard let scenario = try? Scenario.parse(fileContents: Data(bytes)) else { continue }
            parsed += 1
            for ref in scenario.refs {
                guard let values = ref.storeValues else { continue }
                for (attribute, value) in values where ref.entity.relationship(named: attribute) == nil {
                    let type = try #require(ref.entity.attribute(named: attribute)).type
                    let again = try ScenarioValues.attributeValue(ScenarioValues.json(value), type: type, at: attribute)
                    #expect(Self.readsBack(value, as: again), "\(name): \(ref.name).\(attribute) \(value) prints as \(ScenarioValues.json(value))")
                }
            }
        }
        #expect(parsed >= 6, "the canonical scenarios and every-op-and-type.json parse")
    }

    /// The fuzz target's property: a value reads back from its printed form as itself; a date
    /// as one that prints the same, within half a millisecond (plus the Double's spacing).
    static func readsBack(_ value: AttributeValue, as again: AttributeValue) -> Bool {
        if case .date(let date) = value, case .date(let dateAgain) = again {
            return ScenarioValues.isoText(dateAgain) == ScenarioValues.isoText(date)
                && abs(dateAgain.timeIntervalSince(date)) <= 0.0005 + date.timeIntervalSinceReferenceDate.ulp
        }
        return value == again
    }

    static func sortedKeys(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let elements): .array(elements.map(sortedKeys))
        case .object(let members): .object(members.sorted { $0.key < $1.key }.map { (key: $0.key, value: sortedKeys($0.value)) })
        default: value
        }
    }

    // MARK: - Nesting

    @Test func nestingUpToTheLimitReadsAndDeeperIsATypedError() throws {
        let limit = JSONValue.maxNestingDepth
        #expect(limit == 200)
        _ = try JSONValue.parse(String(repeating: "[", count: limit) + String(repeating: "]", count: limit))
        let scalarAtTheLimit = String(repeating: "[", count: limit - 1) + "1" + String(repeating: "]", count: limit - 1)
        _ = try JSONValue.parse(scalarAtTheLimit)

        let over = try #require(Self.jsonError(String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)))
        #expect(over.line == 1 && over.column == limit + 1)
        #expect(over.message == "nesting deeper than 200 levels")
        let mixed = String(repeating: #"{"a":"#, count: 150) + String(repeating: "[", count: 51)
        #expect(Self.jsonError(mixed)?.message == "nesting deeper than 200 levels")
    }

    /// Far deeper than any stack could recurse: refused at the limit, before the stack matters.
    @Test func aMillionOpenBracketsAreATypedErrorNotAStackOverflow() throws {
        let error = try #require(Self.scenarioError(String(repeating: "[", count: 1_000_000)))
        #expect(error.message == "not valid JSON: line 1, column 201: nesting deeper than 200 levels")
        let objects = try #require(Self.scenarioError(String(repeating: #"{"k":"#, count: 200_000)))
        #expect(objects.message.hasSuffix("nesting deeper than 200 levels"), "\(objects)")
    }

    // MARK: - Numbers, escapes, encodings

    @Test func numbersOutsideInt64AreDoublesAndOutsideDoubleAreTypedErrors() throws {
        #expect(try JSONValue.parse("-9223372036854775808") == .integer(.min))
        #expect(try JSONValue.parse("9223372036854775807") == .integer(.max))
        #expect(try JSONValue.parse("9223372036854775808") == .double(9223372036854775808))
        #expect(try JSONValue.parse("99999999999999999999999999") == .double(1e26))
        #expect(try JSONValue.parse("-1e-400") == .double(-0.0))
        #expect(Self.jsonError("1e309")?.message == "the number 1e309 is too large")
        #expect(Self.jsonError("-" + String(repeating: "9", count: 400))?.message.hasSuffix("is too large") == true)
        #expect(Self.jsonError("01")?.message == "a number must not start with a leading zero")
        #expect(Self.jsonError("1.")?.message == "a number needs digits after '.'")
        #expect(Self.jsonError("1e")?.message == "a number needs digits in its exponent")
        #expect(Self.jsonError("-")?.message == "a number needs digits after '-'")

        // An int attribute refuses a number that does not fit: it reads as a double.
        let scenario = #"{"name":"n","entities":{"P":{"a":"int"}},"store":{"p":{"entity":"P","values":{"a":9223372036854775808}}},"steps":[]}"#
        #expect(Self.scenarioError(scenario)?.message
            == "store.p.values.a: an int value must be a whole number (or null), not the number 9.223372036854776e+18")
    }

    @Test func badEscapesAndSurrogatesAreTypedErrorsWithTheirPosition() throws {
        #expect(Self.jsonError(#""\x""#)?.description == #"line 1, column 3: invalid escape \x"#)
        #expect(Self.jsonError(#""\u12""#)?.message == #"a \u escape needs four hex digits"#)
        #expect(Self.jsonError(#""\u12zz""#)?.message == #"a \u escape needs four hex digits"#)
        #expect(Self.jsonError(#""\ud800""#)?.message == "a high surrogate escape must be followed by a low one")
        #expect(Self.jsonError(#""\ud800\u0041""#)?.message == "invalid low surrogate escape")
        #expect(Self.jsonError(#""\udc00""#)?.message == "lone low surrogate escape")
        #expect(Self.jsonError("\"\\")?.message == "unexpected end of the text in an escape")
        #expect(Self.jsonError("\"a\nb\"")?.message == #"control character in a string (write it as an escape such as \n)"#)
        #expect(try JSONValue.parse(#""\ud83d\ude00\u00e9\/""#) == .string("😀é/"))
    }

    @Test func bytesThatAreNotUTF8AreATypedError() throws {
        let bytes: [UInt8] = Array(#"{"name":""#.utf8) + [0xFF, 0xFE] + Array(#"","entities":{},"steps":[]}"#.utf8)
        #expect(throws: ScenarioFileError.self) { try Scenario.parse(fileContents: Data(bytes)) }
        do {
            _ = try Scenario.parse(fileContents: Data(bytes))
        } catch {
            #expect(error.message == "the file is not UTF-8 text")
        }
    }

    @Test func duplicateKeysAndTrailingTextAreTypedErrors() {
        #expect(Self.jsonError(#"{"a": 1, "a": 2}"#)?.description == #"line 1, column 10: duplicate key "a""#)
        #expect(Self.jsonError("[1] x")?.message == "unexpected text after the JSON value")
        #expect(Self.jsonError("")?.message == "unexpected end of the text; expected a value")
        #expect(Self.jsonError("[1,")?.message == "unexpected end of the text; expected a value")
        #expect(Self.jsonError("{\"a\"")?.message == "expected ':' after the key \"a\", found end of text")
    }

    // MARK: - Dates

    /// Fuzz/Regressions/fuzz-scenario-file/date-999-ms-printed-one-ms-early.json: a date read
    /// from `…:59.999Z` is stored a hair below .999, and the formatter truncated it to `.998Z`;
    /// reading that back lost another millisecond. Printing now rounds to the millisecond.
    @Test(arguments: [
        "9999-12-31T23:59:59.999Z", "2024-05-01T10:00:00.999Z", "1969-12-31T23:59:59.999Z",
        "0001-01-01T00:00:00.001Z", "99999-05-01T10:00:00.999Z", "2001-01-01T00:00:00.500Z",
        "2024-05-01T10:00:00.250Z", "2024-05-01T10:00:00Z", "0000-01-01T00:00:00Z",
    ])
    func aDatePrintsAsTheTextItWasReadFrom(text: String) throws {
        let value = try ScenarioValues.attributeValue(.string(text), type: .date, at: "t")
        #expect(ScenarioValues.json(value) == .string(text))
        #expect(ScenarioValues.text(value) == text)
    }

    /// Milliseconds are printed only when the rounded value has some.
    @Test func datesPrintRoundedToTheNearestMillisecond() throws {
        func printed(_ text: String) throws -> String {
            ScenarioValues.text(try ScenarioValues.attributeValue(.string(text), type: .date, at: "t"))
        }
        #expect(try printed("2024-05-01T10:00:00.0004Z") == "2024-05-01T10:00:00Z")
        #expect(try printed("2024-05-01T10:00:00.9996Z") == "2024-05-01T10:00:01Z")
        #expect(try printed("2024-05-01T10:00:00.1236Z") == "2024-05-01T10:00:00.124Z")
        #expect(try printed("2024-05-01T12:00:00+02:00") == "2024-05-01T10:00:00Z")
        #expect(try printed("1969-12-31T23:59:59.9996Z") == "1970-01-01T00:00:00Z")
    }

    // MARK: - Scenarios

    @Test func theCanonicalScenariosRead() throws {
        let canonical = [
            "delete-both.json", "delete-vs-store-update.json", "update-update-different-properties.json",
            "update-update-same-property.json", "update-vs-store-delete.json",
        ]
        let inputs = Self.fuzzInputs().filter { input in canonical.contains { input.name == "Corpus/fuzz-scenario-file/\($0)" } }
        #expect(inputs.count == canonical.count)
        for (name, bytes) in inputs {
            let scenario = try Scenario.parse(fileContents: Data(bytes))
            #expect(scenario.expectations.map(\.policy) == ["error", "storeTrump", "objectTrump", "overwrite", "rollback"], "\(name)")
            #expect(scenario.saveStepIndices.count == 2, "\(name)")
            #expect(scenario.schema.entities.map(\.name) == ["Person"], "\(name)")
            #expect(scenario.ref(named: "p")?.storeValues?["age"] == .int(30), "\(name)")
        }
    }

    @Test func mistakesNameTheStepOrKey() {
        let base = #"{"name":"x","entities":{"P":{"a":"int"}},"store":{"p":{"entity":"P","values":{"a":1}}},"steps":["#
        #expect(Self.scenarioError(base + #"{"in":"A","do":"nope"}]}"#)?.message.hasPrefix(#"step 0: unknown op "nope""#) == true)
        #expect(Self.scenarioError(base + #"{"in":"A","do":"set","ref":"p","values":{"a":1.5}}]}"#)?.message
            == #"step 0: "values".a: an int value must be a whole number (or null), not the number 1.5"#)
        #expect(Self.scenarioError(base + #"{"in":"A","do":"fetch","ref":"q"}]}"#)?.message.hasPrefix(#"step 0: unknown ref "q""#) == true)
        #expect(Self.scenarioError(#"{"name":"x","entities":{"9P":{"a":"int"}},"steps":[]}"#)?.message.hasPrefix(
            #"entities: invalid entity name "9P""#) == true)
    }
}

/// The long entity form: attributes under "attributes", with indexes and uniqueness constraints.
@Suite struct LongEntityFormTests {
    @Test func theLongFormReadsIndexesAndUniquenessConstraints() throws {
        let scenario = try Scenario.parse(#"""
            {"name": "x", "entities": {
               "Person": {"attributes": {"name": "string", "email": "string?", "age": "int?"},
                          "indexes": [["name"], ["name", "age"]], "uniquenessConstraints": [["email"]]},
               "Tag": {"label": "string"}},
             "store": {"p": {"entity": "Person", "values": {"name": "Ann", "email": "a@x"}}},
             "steps": [{"in": "A", "do": "fetch", "ref": "p"}]}
            """#)
        let person = try #require(scenario.schema.entity(named: "Person"))
        #expect(person.attributes.map(\.name) == ["name", "email", "age"])
        #expect(person.attributes.map(\.isOptional) == [false, true, true])
        #expect(person.indexes == [["name"], ["name", "age"]])
        #expect(person.uniquenessConstraints == [["email"]])
        // The short form beside it is unchanged.
        #expect(scenario.schema.entity(named: "Tag")?.attributes.map(\.name) == ["label"])
        #expect(scenario.ref(named: "p")?.storeValues?["email"] == .string("a@x"))
    }

    @Test func longFormMistakesAreTypedErrorsNamingThePath() {
        func error(_ entity: String) -> String? {
            ScenarioFormatTests.scenarioError(#"{"name": "x", "entities": {"P": "# + entity + #"}, "steps": []}"#)?.message
        }
        #expect(error(#"{"attributes": {"a": "int"}, "relationships": []}"#)?.hasPrefix("entities.P.relationships: expected an object of relationships") == true)
        #expect(error(#"{"attributes": {"a": "int"}, "relationships": {"d": {"toOne": "P"}}}"#) == #"entities.P.relationships.d: missing "inverse""#)
        #expect(error(#"{"attributes": {"a": "int"}, "relationships": {"d": {"toOne": "P", "toMany": "P", "inverse": "d"}}}"#)?
            .hasPrefix("entities.P.relationships.d: give exactly one of") == true)
        #expect(error(#"{"attributes": {"a": "int"}, "uniquenessConstraints": [["b"]]}"#)
            == #"entities: a uniqueness constraint of entity P names "b", which is not one of its attributes"#)
        #expect(error(#"{"attributes": {"a": "int"}, "indexes": ["a"]}"#)?.hasPrefix("entities.P.indexes[0]: expected a list") == true)
        #expect(error(#"{"attributes": {"a": "int"}, "colour": 1}"#)?.hasPrefix(#"entities.P: unknown key "colour""#) == true)
        #expect(error(#"{"attributes": {"a": "integer"}}"#)?.hasPrefix(#"entities.P.attributes.a: unknown attribute type"#) == true)
    }
}
