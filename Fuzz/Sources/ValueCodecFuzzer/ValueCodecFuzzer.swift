@testable import Contexts
import Policies

// libFuzzer target: the Contexts value codec (the stored form of an object's values) on
// arbitrary bytes.
//
// Properties checked (a failure traps, and libFuzzer saves the input):
// - decoding never traps; a rejection is a ValueCodecError whose offset lies in the input;
// - what decodes encodes to bytes that decode again, to values that encode the same way;
// - the by-position decoder that fetches use (`decode(_:layout:)`, for a few entity shapes)
//   agrees with the by-name decoder: the same values (stored nulls aside) or the same error.
// Crashers go to Fuzz/Regressions/fuzz-value-codec/, which ReliabilityTests replays.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzValueCodec(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    checkValue(bytes)
    for layout in layouts { checkPositional(bytes, layout: layout) }
    return 0
}

/// Entity shapes for the by-position decoder: none, a few attributes, a name that is a prefix
/// of another, and more than its 64-attribute fast path takes.
let layouts: [EntityLayout] = [
    EntityDescription("Empty", attributes: []).layout,
    EntityDescription("Item", attributes: [
        AttributeDescription("name", .string), AttributeDescription("count", .int),
        AttributeDescription("score", .double), AttributeDescription("when", .date),
    ]).layout,
    EntityDescription("Prefixes", attributes: [
        AttributeDescription("a", .string), AttributeDescription("ab", .bytes),
        AttributeDescription("abc", .bool),
    ]).layout,
    EntityDescription("Wide", attributes: (0..<70).map { AttributeDescription("p\($0)", .int) }).layout,
]

func checkPositional(_ bytes: [UInt8], layout: EntityLayout) {
    let byName: Result<PropertyValues, ValueCodecError> = Result { () throws(ValueCodecError) in
        try ValueCodec.decode(bytes)
    }
    let byPosition: Result<PropertyValues, ValueCodecError> = bytes.withUnsafeBytes { raw in
        do throws(ValueCodecError) {
            return .success(try ValueCodec.decode(raw, layout: layout).dictionary(layout))
        } catch {
            return .failure(error)
        }
    }
    switch (byName, byPosition) {
    case let (.success(named), .success(positioned)):
        precondition(named.filter { $0.value != .null } == positioned,
                     "by-position decoding of \(layout.name) differs: \(positioned) against \(named)")
    case let (.failure(left), .failure(right)):
        precondition(left == right, "by-position decoding of \(layout.name) fails otherwise: \(right) against \(left)")
    default:
        preconditionFailure("the decoders disagree on \(layout.name): \(byName) against \(byPosition)")
    }
}

func checkValue(_ bytes: [UInt8]) {
    do {
        let values = try ValueCodec.decode(bytes)
        let encoded = ValueCodec.encode(values)
        do {
            let again = try ValueCodec.decode(encoded)
            precondition(ValueCodec.encode(again) == encoded, "decode(encode(values)) encodes differently")
        } catch {
            preconditionFailure("the encoder wrote bytes the decoder rejects: \(error)")
        }
    } catch {
        precondition(error.offset >= 0 && error.offset <= bytes.count, "error offset \(error.offset) outside the input")
    }
}
