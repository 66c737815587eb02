import Contexts
import Foundation
import Policies
import ScenarioFormat

// libFuzzer target: the merge-scenario file parser of `cairn scenario` (ScenarioFormat) on
// arbitrary bytes, through its public API only. The seed corpus holds the canonical scenarios
// and the dictionary (Dictionaries/fuzz-scenario-file.dict) the format's keys and ops, so the
// fuzzer gets past the JSON syntax into the scenario checks.
//
// Properties checked (a failure traps, and libFuzzer saves the input):
// - `Scenario.parse(fileContents:)`, what `cairn scenario FILE` does with the file's bytes,
//   never traps: it returns a scenario or throws a `ScenarioFileError`;
// - the JSON reader on the same bytes (as text, invalid UTF-8 repaired) never traps, and
//   what it reads renders, pretty and compact, to text that reads back to the same value
//   (keys sorted, as rendering sorts them);
// - every attribute value of a scenario that parses prints (`ScenarioValues.json`, `.text`)
//   without trapping, and its JSON form reads back as the same value; a date, printed to the
//   millisecond, reads back as one that prints the same and lies within half a millisecond
//   (plus the Double's rounding) of it.
// Crashers go to Fuzz/Regressions/fuzz-scenario-file/, which ScenarioFormatTests replays.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenarioFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    checkJSON(String(decoding: bytes, as: UTF8.self))
    if let scenario = try? Scenario.parse(fileContents: Data(bytes)) {
        checkValues(of: scenario)
    }
    return 0
}

/// What the JSON reader accepts renders to text it reads back as the same value.
func checkJSON(_ text: String) {
    guard let value = try? JSONValue.parse(text) else { return }
    let expected = sortedKeys(value)
    for pretty in [true, false] {
        let rendered = value.rendered(pretty: pretty)
        do {
            let again = try JSONValue.parse(rendered)
            precondition(again == expected, "rendered JSON reads back differently: \(rendered)")
        } catch {
            preconditionFailure("rendered JSON does not read back (\(error)): \(rendered)")
        }
    }
}

/// `value` with every object's members in key order, as `rendered` writes them.
func sortedKeys(_ value: JSONValue) -> JSONValue {
    switch value {
    case .array(let elements):
        return .array(elements.map(sortedKeys))
    case .object(let members):
        return .object(members.sorted { $0.key < $1.key }.map { (key: $0.key, value: sortedKeys($0.value)) })
    default:
        return value
    }
}

/// Every attribute value the scenario holds prints, and its JSON form reads back.
func checkValues(of scenario: Scenario) {
    var sets: [(PropertyValues, EntityDescription)] = []
    for ref in scenario.refs {
        if let values = ref.storeValues { sets.append((values, ref.entity)) }
    }
    for step in scenario.steps {
        switch step.action {
        case .set(let ref, let values):
            sets.append((values, scenario.ref(named: ref)!.entity))
        case .insert(let ref, _, let values):
            sets.append((values, scenario.ref(named: ref)!.entity))
        default:
            break
        }
    }
    for (_, expectation) in scenario.expectations {
        for (ref, values) in expectation.store ?? [] {
            if let values { sets.append((values, scenario.ref(named: ref)!.entity)) }
        }
        for (_, refs) in expectation.contexts ?? [] {
            for (ref, state) in refs {
                if case .values(let values) = state { sets.append((values, scenario.ref(named: ref)!.entity)) }
            }
        }
    }
    for (values, entity) in sets {
        _ = ScenarioValues.text(values, of: entity)
        checkJSON(ScenarioValues.json(values, of: entity).rendered())
        // Relationship values name refs (ScenarioValues); the property is about attribute values.
        for (name, value) in values where entity.relationship(named: name) == nil {
            let attribute = entity.attribute(named: name)!
            _ = ScenarioValues.text(value)
            let json = ScenarioValues.json(value)
            let again: AttributeValue
            do {
                again = try ScenarioValues.attributeValue(json, type: attribute.type, at: name)
            } catch {
                preconditionFailure("\(entity.name).\(name): the printed value \(json.rendered()) does not read back: \(error)")
            }
            precondition(readsBack(value, as: again),
                         "\(entity.name).\(name): \(value) prints as \(json.rendered()), which reads back as \(again)")
        }
    }
}

/// Whether `again`, read from the printed form of `value`, is `value`: for dates, one that
/// prints the same and lies within half a millisecond of it (`ScenarioValues.isoText` rounds to
/// the millisecond), plus the Double's spacing at that date (under 0.5 ms up to year 99999,
/// the largest the date parser takes).
func readsBack(_ value: AttributeValue, as again: AttributeValue) -> Bool {
    if case .date(let date) = value, case .date(let dateAgain) = again {
        let spacing = date.timeIntervalSinceReferenceDate.ulp
        return ScenarioValues.isoText(dateAgain) == ScenarioValues.isoText(date)
            && abs(dateAgain.timeIntervalSince(date)) <= 0.0005 + spacing
    }
    return value == again
}
