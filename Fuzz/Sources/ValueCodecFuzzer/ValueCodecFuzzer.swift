@testable import Contexts

// libFuzzer target: the Contexts value codec (the stored form of an object's values) on
// arbitrary bytes.
//
// Properties checked (a failure traps, and libFuzzer saves the input):
// - decoding never traps; a rejection is a ValueCodecError whose offset lies in the input;
// - what decodes encodes to bytes that decode again, to values that encode the same way.
// Crashers go to Fuzz/Regressions/fuzz-value-codec/, which ReliabilityTests replays.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzValueCodec(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    checkValue(bytes)
    return 0
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
