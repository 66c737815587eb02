import Policies

// An entry key written in one allocation of its exact size: the save's path, two keys per
// changed index per object. Appending value by value grew and checked the array at each step
// (about 330 instructions a value, 4,100 an object of `context-save-indexed`).

extension IndexKeyEncoding {
    /// The entry key of the values `value(position)` gives for the index's positions (as
    /// ``entryKey(_:index:primaryKey:)``), without making the object's values.
    ///
    /// The exact size is counted first, then the bytes written into place. A non-ASCII string
    /// (whose NFC form must be made first) takes the appending path: the same bytes either way,
    /// which `IndexKeyEncodingTests` pins.
    static func entryKey(index: IndexLayout, primaryKey: UInt64, value: (Int) -> AttributeValue) -> [UInt8] {
        let cap = index.contentCap
        var size = 8
        for position in index.positions {
            guard let length = SizedKeyWriter.length(of: value(position), cap: cap) else {
                return appendedEntryKey(index: index, primaryKey: primaryKey, value: value)
            }
            size += length
        }
        // Written on the stack and copied once into an array reserved at its size: Array's
        // `init(unsafeUninitializedCapacity:)` looked up the array's generic metadata in the
        // runtime on each call (about 680 instructions a key, four times a reserve's).
        var key: [UInt8] = []
        key.reserveCapacity(size)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { buffer in
            var writer = SizedKeyWriter(buffer: buffer)
            for position in index.positions { writer.write(value(position), cap: cap) }
            writer.writeBigEndian(primaryKey)
            precondition(writer.offset == size, "an index key's bytes differ from its counted size")
            key.append(contentsOf: UnsafeBufferPointer(buffer))
        }
        return key
    }

    /// The same key made by appending each value (``append(_:to:cap:)``).
    static func appendedEntryKey(index: IndexLayout, primaryKey: UInt64, value: (Int) -> AttributeValue) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(16 * index.positions.count + 8)
        let cap = index.contentCap
        for position in index.positions { append(value(position), to: &key, cap: cap) }
        appendBigEndian(primaryKey, to: &key)
        return key
    }
}

/// Writes encoded values into a buffer that `length(of:cap:)` sized for the same values; each
/// write checks that it stays inside the buffer, and `entryKey` that it filled it.
private struct SizedKeyWriter {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    var offset = 0

    /// How many bytes `value` encodes to, nil for a non-ASCII string (see `entryKey`).
    static func length(of value: AttributeValue, cap: Int) -> Int? {
        switch value {
        case .null: return 1
        case .bool: return 2
        case .int, .double, .date: return 9
        case .string(var text):
            return text.withUTF8 { bytes -> Int? in
                guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
                return escapedLength(bytes, cap: cap)
            }
        case .bytes(let bytes):
            return bytes.withUnsafeBufferPointer { escapedLength($0, cap: cap) }
        }
    }

    /// A tag, the content cut at `cap` with each zero byte escaped, and a two-byte mark.
    private static func escapedLength(_ bytes: UnsafeBufferPointer<UInt8>, cap: Int) -> Int {
        var zeros = 0
        for byte in bytes.prefix(cap) where byte == 0 { zeros += 1 }
        return 1 + min(bytes.count, cap) + zeros + 2
    }

    mutating func write(_ value: AttributeValue, cap: Int) {
        switch value {
        case .null:
            byte(IndexKeyEncoding.nullTag)
        case .bool(let flag):
            byte(IndexKeyEncoding.boolTag)
            byte(flag ? 1 : 0)
        case .int(let number):
            byte(IndexKeyEncoding.intTag)
            writeBigEndian(UInt64(bitPattern: number) ^ (1 << 63))
        case .double(let number):
            byte(IndexKeyEncoding.doubleTag)
            writeBigEndian(IndexKeyEncoding.orderedBits(number))
        case .date(let date):
            byte(IndexKeyEncoding.dateTag)
            writeBigEndian(IndexKeyEncoding.orderedBits(date.timeIntervalSinceReferenceDate))
        case .string(var text):
            byte(IndexKeyEncoding.stringTag)
            text.withUTF8 { writeEscaped($0, cap: cap) }
        case .bytes(let bytes):
            byte(IndexKeyEncoding.bytesTag)
            bytes.withUnsafeBufferPointer { writeEscaped($0, cap: cap) }
        }
    }

    mutating func writeBigEndian(_ number: UInt64) {
        precondition(offset + 8 <= buffer.count, "an index key outgrew its counted size")
        UnsafeMutableRawPointer(buffer.baseAddress! + offset).storeBytes(of: number.bigEndian, as: UInt64.self)
        offset += 8
    }

    private mutating func byte(_ value: UInt8) {
        precondition(offset < buffer.count, "an index key outgrew its counted size")
        buffer[offset] = value
        offset += 1
    }

    private mutating func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, cap: Int) {
        let content = UnsafeBufferPointer(rebasing: bytes.prefix(cap))
        if content.contains(0) {
            for item in content {
                byte(item)
                if item == 0 { byte(0xFF) }
            }
        } else if let source = content.baseAddress {
            precondition(offset + content.count <= buffer.count, "an index key outgrew its counted size")
            (buffer.baseAddress! + offset).update(from: source, count: content.count)
            offset += content.count
        }
        // `endMark` or `truncatedMark`.
        byte(0x00)
        byte(bytes.count <= cap ? 0x00 : 0x02)
    }
}

extension IndexKeyEncoding {
    /// An entry key of `values` (attributes of `types`) made both ways, sized and appended:
    /// for the test that they agree. `package`: not public API.
    package static func entryKeyBothWays(
        _ values: [AttributeValue], types: [AttributeType], primaryKey: UInt64
    ) -> (sized: [UInt8], appended: [UInt8]) {
        let index = IndexLayout(entityName: "Test", attributeNames: values.indices.map { "a\($0)" },
                                positions: Array(values.indices), types: types)
        return (entryKey(index: index, primaryKey: primaryKey) { values[$0] },
                appendedEntryKey(index: index, primaryKey: primaryKey) { values[$0] })
    }
}
