import Foundation
import Policies

// The stored form of an object's values: the value of its record in the entity's table.
//
//   value    := formatVersion:u8 (= 1)  count:varint  property{count}
//   property := nameLength:varint  name:UTF-8[nameLength]  tag:u8  payload
//
//   tag  type    payload
//   0    null    (none)                       never written; accepted when read
//   1    string  length:varint  UTF-8[length]
//   2    int     8 bytes, big-endian two's complement
//   3    double  8 bytes, big-endian IEEE 754 bit pattern
//   4    bool    1 byte, 0 or 1
//   5    bytes   length:varint  bytes[length]
//   6    date    8 bytes, big-endian bit pattern of the Double timeIntervalSinceReferenceDate
//
//   varint: unsigned LEB128, 7 bits per byte, low group first, at most 10 bytes.
//
// Example: ["age": .int(30)] is
//
//   01 | 01 | 03 61 67 65 | 02 | 00 00 00 00 00 00 00 1E
//   v1   1     "age"        int  30
//
// The format version, the tags and the layout are FROZEN: stored values outlive this build.
// A test pins the bytes above. Properties are written sorted by name (so equal values encode
// to equal bytes) and null properties are left out (absent counts as null everywhere). Dates
// keep Foundation's own reference-date Double, so a Date survives the round trip bit for bit.
//
// Decoding treats its input as hostile (a damaged disk, a fuzzer): every length is checked
// against the bytes left before anything is allocated, and every problem is a typed
// ValueCodecError, never a trap.

/// Encodes and decodes ``PropertyValues`` in the binary form diagrammed above.
///
/// ```swift
/// let bytes = ValueCodec.encode(["age": .int(30)])
/// let values = try ValueCodec.decode(bytes)   // ["age": .int(30)]
/// ```
package enum ValueCodec {
    /// The current (and only) format version, the first byte of every value.
    package static let formatVersion: UInt8 = 1

    enum Tag: UInt8 {
        case null = 0, string, int, double, bool, bytes, date
    }

    /// The bytes of `values`: properties sorted by name, nulls left out.
    ///
    /// ```swift
    /// ValueCodec.encode(["age": .int(30)])   // [1, 1, 3, 97, 103, 101, 2, 0, 0, 0, 0, 0, 0, 0, 30]
    /// ```
    package static func encode(_ values: PropertyValues) -> [UInt8] {
        let present = values.filter { $0.value != .null }.sorted { $0.key < $1.key }
        var out: [UInt8] = [formatVersion]
        appendVarint(UInt64(present.count), to: &out)
        for (name, value) in present {
            appendVarint(UInt64(name.utf8.count), to: &out)
            out.append(contentsOf: name.utf8)
            switch value {
            case .null:
                break  // filtered out above
            case .string(let text):
                out.append(Tag.string.rawValue)
                appendVarint(UInt64(text.utf8.count), to: &out)
                out.append(contentsOf: text.utf8)
            case .int(let number):
                out.append(Tag.int.rawValue)
                appendFixed(UInt64(bitPattern: number), to: &out)
            case .double(let number):
                out.append(Tag.double.rawValue)
                appendFixed(number.bitPattern, to: &out)
            case .bool(let flag):
                out.append(Tag.bool.rawValue)
                out.append(flag ? 1 : 0)
            case .bytes(let bytes):
                out.append(Tag.bytes.rawValue)
                appendVarint(UInt64(bytes.count), to: &out)
                out.append(contentsOf: bytes)
            case .date(let date):
                out.append(Tag.date.rawValue)
                appendFixed(date.timeIntervalSinceReferenceDate.bitPattern, to: &out)
            }
        }
        return out
    }

    /// The values stored in `bytes`.
    ///
    /// ```swift
    /// try ValueCodec.decode([1, 0])   // [:]
    /// try ValueCodec.decode([9])      // throws ValueCodecError (unsupported version 9)
    /// ```
    ///
    /// - Throws: ``ValueCodecError`` naming the offset and the problem, for any input that is
    ///   not exactly one well-formed value.
    package static func decode(_ bytes: [UInt8]) throws(ValueCodecError) -> PropertyValues {
        var reader = Reader(bytes: bytes)
        guard let version = reader.nextByte() else { throw ValueCodecError(offset: 0, problem: .empty) }
        guard version == formatVersion else {
            throw ValueCodecError(offset: 0, problem: .unsupportedVersion(version))
        }
        let count = try reader.length()
        var values = PropertyValues()
        var seen = Set<String>()  // also catches a repeated name whose first value was null
        for _ in 0..<count {
            let nameOffset = reader.offset
            let nameLength = try reader.length()
            guard nameLength > 0 else { throw ValueCodecError(offset: nameOffset, problem: .emptyName) }
            let name = try reader.text(count: nameLength)
            guard seen.insert(name).inserted else {
                throw ValueCodecError(offset: nameOffset, problem: .duplicateProperty(name))
            }
            let tagOffset = reader.offset
            guard let tagByte = reader.nextByte() else { throw ValueCodecError(offset: tagOffset, problem: .truncated) }
            guard let tag = Tag(rawValue: tagByte) else {
                throw ValueCodecError(offset: tagOffset, problem: .unknownTag(tagByte))
            }
            let value: AttributeValue
            switch tag {
            case .null:
                value = .null
            case .string:
                value = .string(try reader.text(count: try reader.length()))
            case .int:
                value = .int(Int64(bitPattern: try reader.fixed()))
            case .double:
                value = .double(Double(bitPattern: try reader.fixed()))
            case .bool:
                let flagOffset = reader.offset
                guard let flag = reader.nextByte() else { throw ValueCodecError(offset: flagOffset, problem: .truncated) }
                guard flag <= 1 else { throw ValueCodecError(offset: flagOffset, problem: .invalidBool(flag)) }
                value = .bool(flag == 1)
            case .bytes:
                value = .bytes(try reader.bytes(count: try reader.length()))
            case .date:
                value = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.fixed())))
            }
            // A stored null is accepted but, like everywhere else, kept as an absent property.
            if value != .null { values[name] = value }
        }
        guard reader.isAtEnd else {
            throw ValueCodecError(offset: reader.offset, problem: .trailingBytes(reader.remaining))
        }
        return values
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    static func appendFixed(_ value: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// A cursor over the input that never reads past its end.
    struct Reader {
        let bytes: [UInt8]
        private(set) var offset = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var remaining: Int { bytes.count - offset }
        var isAtEnd: Bool { offset == bytes.count }

        mutating func nextByte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() throws(ValueCodecError) -> UInt64 {
            let start = offset
            var result: UInt64 = 0
            for index in 0..<10 {
                guard let byte = nextByte() else { throw ValueCodecError(offset: start, problem: .truncated) }
                // The tenth byte may carry only the 64th bit.
                if index == 9 && byte > 1 { throw ValueCodecError(offset: start, problem: .overlongVarint) }
                result |= UInt64(byte & 0x7F) << UInt64(7 * index)
                if byte & 0x80 == 0 { return result }
            }
            throw ValueCodecError(offset: start, problem: .overlongVarint)
        }

        /// A varint used as a count or length: it must not exceed the bytes left, so a forged
        /// huge length can never make us allocate or loop for nothing.
        mutating func length() throws(ValueCodecError) -> Int {
            let start = offset
            let value = try varint()
            guard value <= UInt64(remaining) else {
                throw ValueCodecError(offset: start, problem: .lengthOutOfRange(value))
            }
            return Int(value)
        }

        mutating func bytes(count: Int) throws(ValueCodecError) -> [UInt8] {
            guard count <= remaining else { throw ValueCodecError(offset: offset, problem: .truncated) }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        mutating func text(count: Int) throws(ValueCodecError) -> String {
            let start = offset
            let raw = try bytes(count: count)
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw ValueCodecError(offset: start, problem: .invalidUTF8)
            }
            return text
        }

        mutating func fixed() throws(ValueCodecError) -> UInt64 {
            let raw = try bytes(count: 8)
            return raw.reduce(0) { ($0 << 8) | UInt64($1) }
        }
    }
}
