import Foundation
import Policies

// Records kept undecoded (ObjectOrigin.swift): checked when read from the store, so that a fetch still
// fails on a record that does not decode, and decoded later, an attribute at a time or whole.
//
// `validate` accepts exactly the records the lean decoder (`decodeAttributes`) decodes: the
// same header, names, tags, lengths and UTF-8 checks, in the same order, without making a
// value. So `decodeValidated` and `validatedValue` cannot fail on what it
// accepted, and a record it refuses is decoded at once by the fetch's decoder, which gives the
// extras or the error it always did. Pinned by `ValueCodecLayoutTests`' validation tests.

extension ValueCodec {
    /// Whether the lean decoder decodes `bytes` for `layout`, checked without making any value;
    /// and, when the attribute at `referencePosition` holds a string, its bytes' range in
    /// `reference`. When `valueOffsets` is given (room for one per attribute), it gets each
    /// attribute's value's offset (that of its tag; 0 when absent, `UInt16.max` when farther):
    /// what ``validatedValue(at:in:layout:valueOffset:inlineLimit:)`` reads an attribute with.
    package static func validate(_ bytes: UnsafeRawBufferPointer, layout: EntityLayout, referencePosition: Int = -1,
                                 reference: inout Range<Int>?, valueOffsets: UnsafeMutablePointer<UInt16>? = nil) -> Bool {
        let end = bytes.count
        let attributes = layout.count
        guard attributes <= 64, end <= Int(UInt32.max) - 256, end >= 2, let base = bytes.baseAddress,
              base.load(as: UInt8.self) == formatVersion
        else { return false }
        var offset = 1
        guard let count = length(base, end, &offset) else { return false }
        if let valueOffsets {
            return validate(base, end, offset, count, layout, referencePosition, &reference, valueOffsets)
        }
        return validateToScratch(base, end, offset, count, layout, referencePosition, &reference)
    }

    /// `validate` with offsets nobody wants, which go to a scratch buffer (room for 64): one
    /// store per property, no test. Apart, so that the usual path has the loop inlined.
    @inline(never)
    private static func validateToScratch(
        _ base: UnsafeRawPointer, _ end: Int, _ start: Int, _ count: Int, _ layout: EntityLayout, _ referencePosition: Int,
        _ reference: inout Range<Int>?
    ) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt16.self, capacity: 64) { scratch in
            validate(base, end, start, count, layout, referencePosition, &reference, scratch.baseAddress!)
        }
    }

    @inline(__always)
    private static func validate(
        _ base: UnsafeRawPointer, _ end: Int, _ start: Int, _ count: Int, _ layout: EntityLayout, _ referencePosition: Int,
        _ reference: inout Range<Int>?, _ valueOffsets: UnsafeMutablePointer<UInt16>
    ) -> Bool {
        let attributes = layout.count
        var offset = start
        var seen: UInt64 = 0
        var expected = 0
        return layout.headersByName.withUnsafeBufferPointer { headers -> Bool in
            for _ in 0..<count {
                let position: Int
                // Through a pointer: the header's fields read where they are, not the header copied first.
                let header = headers.baseAddress.unsafelyUnwrapped + expected
                if attributes > 0, NameHeader.matches(header, base, at: offset, end: end) {
                    offset += header.pointee.count
                    position = header.pointee.position
                    expected = expected + 1 == attributes ? 0 : expected + 1
                } else {
                    guard let nameLength = length(base, end, &offset), nameLength > 0,
                          let found = layout.position(ofName: UnsafeRawBufferPointer(start: base + offset, count: nameLength), after: &expected)
                    else { return false }
                    offset += nameLength
                    position = found
                }
                let bit: UInt64 = 1 &<< UInt64(truncatingIfNeeded: position)  // position < 64
                guard seen & bit == 0, offset < end else { return false }
                seen |= bit
                valueOffsets[position] = UInt16(truncatingIfNeeded: min(offset, Int(UInt16.max)))
                let tag = base.load(fromByteOffset: offset, as: UInt8.self)
                offset += 1
                switch tag {
                case Tag.null.rawValue:
                    break
                case Tag.string.rawValue:
                    guard let count = length(base, end, &offset) else { return false }
                    let text = UnsafeRawBufferPointer(start: base + offset, count: count)
                    guard isASCII(text, endingAt: offset + count, of: base) || String(validating: Array(text), as: UTF8.self) != nil
                    else { return false }
                    if position == referencePosition { reference = offset..<offset + count }
                    offset += count
                case Tag.int.rawValue, Tag.double.rawValue, Tag.date.rawValue:
                    guard end - offset >= 8 else { return false }
                    offset += 8
                case Tag.bool.rawValue:
                    guard offset < end, base.load(fromByteOffset: offset, as: UInt8.self) <= 1 else { return false }
                    offset += 1
                case Tag.bytes.rawValue:
                    guard let count = length(base, end, &offset) else { return false }
                    offset += count
                default:
                    return false
                }
            }
            guard offset == end else { return false }
            // Absent attributes' offsets: none to write when the record holds every attribute (the usual).
            if seen != (attributes == 64 ? UInt64.max : (1 &<< UInt64(attributes)) &- 1) {
                for position in 0..<attributes where seen & (1 &<< UInt64(position)) == 0 { valueOffsets[position] = 0 }
            }
            return true
        }
    }

    /// Whether `text`, which ends `textEnd` bytes into `base`, is ASCII: a short one tested as
    /// the word that ends where it does (its bytes and the ones before it in the record).
    @inline(__always)
    private static func isASCII(_ text: UnsafeRawBufferPointer, endingAt textEnd: Int, of base: UnsafeRawPointer) -> Bool {
        let count = text.count
        if count >= 8 && count <= 16 {
            // Two words, the second ending where the text does (they overlap below sixteen bytes).
            let words = text.loadUnaligned(fromByteOffset: 0, as: UInt64.self) | text.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            return words & 0x8080_8080_8080_8080 == 0
        }
        guard count < 8, count > 0, textEnd >= 8 else { return Reader.isASCII(text) }
        let word = base.loadUnaligned(fromByteOffset: textEnd - 8, as: UInt64.self) &>> UInt64(8 * (8 - count))
        return word & 0x8080_8080_8080_8080 == 0
    }

    /// The values of a record ``validate(_:layout:referencePosition:reference:valueOffsets:)`` accepted;
    /// the string at `shared`'s position is `shared`'s when it holds one with those bytes.
    package static func decodeValidated(_ bytes: UnsafeRawBufferPointer, layout: EntityLayout, sharing shared: SharedStrings? = nil) -> ObjectValues {
        guard let values = decodeAttributes(bytes, layout: layout, sharing: shared) else {
            preconditionFailure("a record that validated did not decode")
        }
        return values
    }

    /// `validatedValue(at:in:layout:inlineLimit:)`, with the value's offset that `validate` gave.
    @inline(__always)
    package static func validatedValue(at position: Int, in bytes: UnsafeRawBufferPointer, layout: EntityLayout,
                                       valueOffset: UInt16, inlineLimit: Int = 15) -> AttributeValue? {
        switch valueOffset {
        case 0: return .null
        case UInt16.max: return validatedValue(at: position, in: bytes, layout: layout, inlineLimit: inlineLimit)
        default: return validatedValue(atTag: Int(valueOffset), in: bytes, inlineLimit: inlineLimit)
        }
    }

    /// The value of the attribute at `position` in a record ``validate(_:layout:referencePosition:reference:valueOffsets:)``
    /// accepted (`.null` when absent); nil when it is a string of more than `inlineLimit` UTF-8
    /// bytes or non-empty bytes: values that allocate, which the caller decodes with the whole
    /// record instead, so that reading them again shares them.
    ///
    /// Only the attribute's own header is looked for: in a validated record every name is an
    /// attribute's, once, so the first property with that header is the attribute.
    package static func validatedValue(at position: Int, in bytes: UnsafeRawBufferPointer, layout: EntityLayout,
                               inlineLimit: Int = 15) -> AttributeValue? {
        let end = bytes.count
        guard end >= 2, let base = bytes.baseAddress else { return nil }
        let header = layout.headersByPosition[position]
        var offset = 1
        guard let count = length(base, end, &offset) else { return nil }
        for _ in 0..<count {
            if header.matches(base, at: offset, end: end) {
                return validatedValue(atTag: offset + header.count, in: bytes, inlineLimit: inlineLimit)
            }
            // Another attribute: its name, then its value, passed over.
            guard let nameLength = length(base, end, &offset), offset + nameLength < end else { return nil }
            offset += nameLength
            let tag = base.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
            switch tag {
            case Tag.string.rawValue, Tag.bytes.rawValue:
                guard let length = length(base, end, &offset) else { return nil }
                offset += length
            case Tag.int.rawValue, Tag.double.rawValue, Tag.date.rawValue:
                offset += 8
            case Tag.bool.rawValue:
                offset += 1
            default:
                break
            }
            guard offset <= end else { return nil }
        }
        return .null
    }

    /// The value whose tag is at `offset` of a validated record; nil for one that allocates
    /// (see `validatedValue(at:in:layout:inlineLimit:)`).
    @inline(__always)
    private static func validatedValue(atTag tagOffset: Int, in bytes: UnsafeRawBufferPointer, inlineLimit: Int) -> AttributeValue? {
        let end = bytes.count
        guard tagOffset < end, let base = bytes.baseAddress else { return nil }
        var offset = tagOffset + 1
        switch base.load(fromByteOffset: tagOffset, as: UInt8.self) {
        case Tag.string.rawValue:
            // Valid UTF-8 (validated): copied in as it is.
            guard let length = length(base, end, &offset), length <= inlineLimit else { return nil }
            if let small = SmallASCIIString.make(base, at: offset, count: length, end: end) { return .string(small) }
            let text = UnsafeRawBufferPointer(start: base + offset, count: length)
            return .string(String(unsafeUninitializedCapacity: length) { buffer in
                UnsafeMutableRawBufferPointer(buffer).copyMemory(from: text)
                return length
            })
        case Tag.int.rawValue:
            guard end - offset >= 8 else { return nil }
            return .int(Int64(bitPattern: UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))))
        case Tag.bytes.rawValue:
            guard let length = length(base, end, &offset), length == 0 else { return nil }
            return .bytes([])
        default:
            var reader = Reader(bytes: bytes, offset: tagOffset)
            return try? reader.value()
        }
    }

    /// Whether the value whose offset `validate` gave (`valueOffset`) in a validated record is
    /// a string of exactly `text`'s UTF-8 bytes; nil when that offset was not kept
    /// (`UInt16.max`): the caller compares the value read otherwise.
    @inline(__always)
    package static func validatedValue(atOffset valueOffset: UInt16, in bytes: UnsafeRawBufferPointer, isStringOf text: String) -> Bool? {
        guard valueOffset != UInt16.max else { return nil }
        let end = bytes.count
        var offset = Int(valueOffset)
        guard offset != 0, offset < end, let base = bytes.baseAddress,
              base.load(fromByteOffset: offset, as: UInt8.self) == Tag.string.rawValue
        else { return false }
        offset += 1
        guard let length = length(base, end, &offset) else { return false }
        let stored = UnsafeRawBufferPointer(start: base + offset, count: length)
        return text.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.count == length && (length == 0 || memcmp(utf8.baseAddress!, stored.baseAddress!, length) == 0)
        } ?? text.utf8.elementsEqual(stored)
    }

    /// A varint at `offset` used as a count or length, as `Reader.length()` reads it: nil when
    /// it is malformed or exceeds the bytes left after it. Moves past it.
    @inline(__always)
    private static func length(_ base: UnsafeRawPointer, _ end: Int, _ offset: inout Int) -> Int? {
        guard offset < end else { return nil }
        let first = base.load(fromByteOffset: offset, as: UInt8.self)
        if first < 0x80 {
            offset += 1
            return Int(first) <= end - offset ? Int(first) : nil
        }
        var reader = Reader(bytes: UnsafeRawBufferPointer(start: base, count: end), offset: offset)
        guard let value = try? reader.length() else { return nil }
        offset = reader.offset
        return value
    }
}

extension EntityLayout {
    /// The position of the attribute whose name is `name`'s bytes, or nil; as
    /// `position(ofName:in:after:)`, trying the attribute after the one matched last first.
    func position(ofName name: UnsafeRawBufferPointer, after expected: inout Int) -> Int? {
        let count = self.count
        for step in 0..<count {
            let index = (expected + step) % count
            let candidate = positionsByName[index]
            let matched = nameBytes[candidate].withUnsafeBytes { candidate in
                candidate.count == name.count && (name.isEmpty || memcmp(candidate.baseAddress!, name.baseAddress!, name.count) == 0)
            }
            if matched {
                expected = (index + 1) % count
                return candidate
            }
        }
        return nil
    }
}
