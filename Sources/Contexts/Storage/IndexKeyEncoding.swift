import Foundation
import Policies

/// Attribute values as bytes whose order is the values' order (``AttributeOrder``): the keys of
/// index tables (Docs/Contexts.md, "The index key format", draws the bytes).
///
/// Each value is a tag (null first, then by type) and a payload that sorts as the value does:
/// ints with the sign bit flipped, doubles and dates by their IEEE bits made monotonic, strings
/// (the UTF-8 of their NFC form, the order ``AttributeOrder`` defines) and bytes escaped so that a
/// shorter value sorts before its extensions. Every encoding is self-delimiting, so a key of
/// several values compares value by value. Strings and bytes longer than an index's cap keep
/// their first `cap` bytes and a "truncated" terminator: such keys still sort correctly
/// against every shorter value, and equal prefixes sort together.
package enum IndexKeyEncoding {
    static let nullTag: UInt8 = 0x00
    static let boolTag: UInt8 = 0x01
    static let intTag: UInt8 = 0x02
    static let doubleTag: UInt8 = 0x03
    static let stringTag: UInt8 = 0x04
    static let bytesTag: UInt8 = 0x05
    static let dateTag: UInt8 = 0x06

    /// After a variable-length value: complete, or cut at the cap. Both sort below the escape
    /// `00 FF` of a content zero byte, so a value sorts before its extensions.
    static let endMark: [UInt8] = [0x00, 0x00]
    static let truncatedMark: [UInt8] = [0x00, 0x02]

    /// The tag of the values an attribute of `type` holds.
    static func tag(of type: AttributeType) -> UInt8 {
        switch type {
        case .bool: return boolTag
        case .int: return intTag
        case .double: return doubleTag
        case .string: return stringTag
        case .bytes: return bytesTag
        case .date: return dateTag
        }
    }

    /// Appends `value`; returns false when it was cut at `cap` content bytes.
    @discardableResult
    static func append(_ value: AttributeValue, to key: inout [UInt8], cap: Int) -> Bool {
        switch value {
        case .null:
            key.append(nullTag)
            return true
        case .bool(let flag):
            key.append(boolTag)
            key.append(flag ? 1 : 0)
            return true
        case .int(let number):
            key.append(intTag)
            appendBigEndian(UInt64(bitPattern: number) ^ (1 << 63), to: &key)
            return true
        case .double(let number):
            key.append(doubleTag)
            appendBigEndian(orderedBits(number), to: &key)
            return true
        case .date(let date):
            key.append(dateTag)
            appendBigEndian(orderedBits(date.timeIntervalSinceReferenceDate), to: &key)
            return true
        case .string(let text):
            var text = text
            // ASCII is its own NFC form: tested on the contiguous bytes, not through the view,
            // and appended from the same look at them.
            let ascii = text.withUTF8 { bytes -> Bool? in
                guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
                return appendEscaped(bytes, tag: stringTag, to: &key, cap: cap)
            }
            if let ascii { return ascii }
            text = normalized(text)
            return text.withUTF8 { appendEscaped($0, tag: stringTag, to: &key, cap: cap) }
        case .bytes(let bytes):
            return bytes.withUnsafeBufferPointer { appendEscaped($0, tag: bytesTag, to: &key, cap: cap) }
        }
    }

    /// The key of one index entry: the object's values of the index's attributes, then its
    /// primary key (8 bytes big-endian), so equal values order by primary key.
    static func entryKey(_ values: ObjectValues, index: IndexLayout, primaryKey: UInt64) -> [UInt8] {
        entryKey(index: index, primaryKey: primaryKey) { values[$0] }
    }

    /// The primary key at the end of an entry key, nil when it is too short to hold one.
    static func primaryKey(ofEntry key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count > 8 else { return nil }
        return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self))
    }

    /// The least byte string greater than every string starting with `prefix` (nil: none is,
    /// the prefix is all 0xFF): the exclusive upper bound of a prefix's range.
    static func successor(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }

    /// Doubles as unsigned bits that order as the numbers: negative ones with every bit
    /// flipped, others with the sign bit set. -0 is +0 and every NaN one quiet NaN (above +inf),
    /// as ``AttributeOrder`` sees them.
    static func orderedBits(_ number: Double) -> UInt64 {
        let canonical = number.isNaN ? Double.nan : (number == 0 ? 0.0 : number)
        let bits = canonical.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    /// NFC (``AttributeOrder/nfc(_:)``): string order is its byte order, equality its bytes'.
    static func normalized(_ text: String) -> String { AttributeOrder.nfc(text) }

    /// Appends `tag`, then `bytes` escaped and cut at `cap`, then the mark.
    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, tag: UInt8, to key: inout [UInt8], cap: Int) -> Bool {
        let complete = bytes.count <= cap
        let content = UnsafeBufferPointer(rebasing: bytes.prefix(cap))
        // Room for the tag, the content and its mark at once, not by doubling from an empty key
        // (a planner's bounds start empty); a content zero that needs escaping may still grow it.
        let needed = key.count + 1 + content.count + 2
        if key.capacity < needed { key.reserveCapacity(max(needed, 2 * key.capacity)) }
        key.append(tag)
        if content.contains(0) {
            for byte in content {
                key.append(byte)
                if byte == 0 { key.append(0xFF) }
            }
        } else {
            key.append(contentsOf: content)  // nothing to escape: one copy
        }
        key.append(0x00)  // `endMark` or `truncatedMark`
        key.append(complete ? 0x00 : 0x02)
        return complete
    }

    static func appendBigEndian(_ number: UInt64, to key: inout [UInt8]) {
        withUnsafeBytes(of: number.bigEndian) { key.append(contentsOf: $0) }
    }
}

extension IndexKeyEncoding {
    /// How many content bytes of a string or bytes value the entries of an index on attributes
    /// of `types` keep: the key (with the 8-byte primary key) must fit the engine's key limit,
    /// with every content byte escaped.
    static func contentCap(types: [AttributeType]) -> Int {
        var variable = 0
        for type in types where type == .string || type == .bytes { variable += 1 }
        let fixed = (types.count - variable) * 9
        guard variable > 0 else { return 0 }
        let room = StorageMapping.maxKeyBytes - 8 - fixed
        return max(1, (room / variable - 3) / 2)
    }
}

extension IndexKeyEncoding {
    /// How many bytes the first `count` values of an entry key take (the key must be one this
    /// encoding made).
    static func length(ofValues count: Int, in key: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        for _ in 0..<count where offset < key.count {
            let tag = key[offset]
            offset += 1
            switch tag {
            case nullTag: break
            case boolTag: offset += 1
            case intTag, doubleTag, dateTag: offset += 8
            default:
                // Escaped content up to `00 00` or `00 02` (a content zero is `00 FF`).
                while offset + 1 < key.count, !(key[offset] == 0 && key[offset + 1] != 0xFF) {
                    offset += key[offset] == 0 ? 2 : 1
                }
                offset += 2
            }
        }
        return min(offset, key.count)
    }
}

extension IndexKeyEncoding {
    /// One value's bytes, uncut: for tests of the order property. `package`: not public API.
    package static func encoded(_ value: AttributeValue) -> [UInt8] {
        var bytes: [UInt8] = []
        append(value, to: &bytes, cap: .max)
        return bytes
    }
}
