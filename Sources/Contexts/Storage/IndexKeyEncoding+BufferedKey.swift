import Policies

// An entry key written in one pass into a buffer on the stack, then copied once into an array
// of its size: the save's path, two keys per changed index per object. Appending value by value
// grew and checked the array at each step (about 330 instructions a value, 4,100 an object of
// `context-save-indexed`); counting the size first and writing after read every value twice.

extension IndexKeyEncoding {
    /// The longest entry key the stack buffer takes: the engine's key limit. A key past it (an
    /// index of very many attributes) takes the appending path and meets the engine's limit.
    private static let bufferedKeyBytes = StorageMapping.maxKeyBytes

    /// The entry key of the values `value(position)` gives for the index's positions (as
    /// ``entryKey(_:index:primaryKey:)``), without making the object's values.
    ///
    /// A non-ASCII string (whose NFC form must be made first) takes the appending path: the
    /// same bytes either way, which `IndexKeyEncodingTests` pins.
    static func entryKey(index: IndexLayout, primaryKey: UInt64, value: (Int) -> AttributeValue) -> [UInt8] {
        let cap = index.contentCap
        let written: [UInt8]? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bufferedKeyBytes) { buffer in
            var writer = BufferedKeyWriter(buffer: buffer)
            for position in index.positions {
                guard writer.write(value(position), cap: cap) else { return nil }
            }
            guard writer.writeBigEndian(primaryKey) else { return nil }
            // Reserved at its size and copied in: Array's `init(unsafeUninitializedCapacity:)`
            // looked up the array's generic metadata in the runtime on each call (about 680
            // instructions a key, four times a reserve's).
            var key: [UInt8] = []
            key.reserveCapacity(writer.offset)
            key.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<writer.offset]))
            return key
        }
        return written ?? appendedEntryKey(index: index, primaryKey: primaryKey, value: value)
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

/// Writes encoded values into a buffer; each write says whether it could: false when the
/// buffer is full, or for a non-ASCII string (the appending path makes its NFC form).
private struct BufferedKeyWriter {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    var offset = 0

    mutating func write(_ value: AttributeValue, cap: Int) -> Bool {
        switch value {
        case .null:
            return byte(IndexKeyEncoding.nullTag)
        case .bool(let flag):
            return byte(IndexKeyEncoding.boolTag) && byte(flag ? 1 : 0)
        case .int(let number):
            return byte(IndexKeyEncoding.intTag) && writeBigEndian(UInt64(bitPattern: number) ^ (1 << 63))
        case .double(let number):
            return byte(IndexKeyEncoding.doubleTag) && writeBigEndian(IndexKeyEncoding.orderedBits(number))
        case .date(let date):
            return byte(IndexKeyEncoding.dateTag)
                && writeBigEndian(IndexKeyEncoding.orderedBits(date.timeIntervalSinceReferenceDate))
        case .string(let text):
            // ASCII is its own NFC form: tested on the whole string's contiguous bytes (a
            // combining mark past the cap could change a byte before it).
            return byte(IndexKeyEncoding.stringTag)
                && text.utf8.withContiguousStorageIfAvailable { bytes in
                    bytes.allSatisfy { $0 < 0x80 } && writeEscaped(bytes, cap: cap)
                } == true
        case .bytes(let bytes):
            return byte(IndexKeyEncoding.bytesTag) && bytes.withUnsafeBufferPointer { writeEscaped($0, cap: cap) }
        }
    }

    mutating func writeBigEndian(_ number: UInt64) -> Bool {
        guard buffer.count - offset >= 8 else { return false }
        UnsafeMutableRawPointer(buffer.baseAddress! + offset).storeBytes(of: number.bigEndian, as: UInt64.self)
        offset += 8
        return true
    }

    private mutating func byte(_ value: UInt8) -> Bool {
        guard offset < buffer.count else { return false }
        buffer[offset] = value
        offset += 1
        return true
    }

    /// The content cut at `cap`, each zero byte escaped, then `endMark` or `truncatedMark`.
    private mutating func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, cap: Int) -> Bool {
        let content = UnsafeBufferPointer(rebasing: bytes.prefix(cap))
        if content.contains(0) {
            for item in content {
                guard byte(item), item != 0 || byte(0xFF) else { return false }
            }
        } else if let source = content.baseAddress {
            guard buffer.count - offset >= content.count else { return false }
            (buffer.baseAddress! + offset).update(from: source, count: content.count)
            offset += content.count
        }
        return byte(0x00) && byte(bytes.count <= cap ? 0x00 : 0x02)
    }
}

extension IndexKeyEncoding {
    /// An entry key of `values` (attributes of `types`) made both ways, buffered and appended:
    /// for the test that they agree. `package`: not public API.
    package static func entryKeyBothWays(
        _ values: [AttributeValue], types: [AttributeType], primaryKey: UInt64
    ) -> (buffered: [UInt8], appended: [UInt8]) {
        let index = IndexLayout(entityName: "Test", attributeNames: values.indices.map { "a\($0)" },
                                positions: Array(values.indices), types: types)
        return (entryKey(index: index, primaryKey: primaryKey) { values[$0] },
                appendedEntryKey(index: index, primaryKey: primaryKey) { values[$0] })
    }
}
