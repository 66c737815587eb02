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
//
// Two forms of each direction share one reader and one writer of properties: by name
// (PropertyValues, for the API, tests and tools) and by attribute position (ObjectValues, what
// contexts hold). The positional decoder reads straight from the engine's buffer and matches
// property names against the entity's attribute names byte for byte, so a record of known
// attributes decodes without hashing or building a String per name; the errors, their offsets
// and their order are the same in both forms.

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

    // MARK: - Encoding

    /// The bytes of `values`: properties sorted by name, nulls left out.
    ///
    /// ```swift
    /// ValueCodec.encode(["age": .int(30)])   // [1, 1, 3, 97, 103, 101, 2, 0, 0, 0, 0, 0, 0, 0, 30]
    /// ```
    package static func encode(_ values: PropertyValues) -> [UInt8] {
        let present = values.filter { $0.value != .null }.sorted { $0.key < $1.key }
        var size = 1 + varintSize(UInt64(present.count))
        for (name, value) in present {
            let length = name.utf8.count
            size += varintSize(UInt64(length)) + length + encodedSize(of: value)
        }
        return write(size: size) { writer in
            writer.byte(formatVersion)
            writer.varint(UInt64(present.count))
            for (name, value) in present {
                writer.varint(UInt64(name.utf8.count))
                writer.text(name)
                writer.value(value)
            }
        }
    }

    /// The bytes of an object's values: the same bytes ``encode(_:)`` makes of them as a
    /// dictionary, written from the slots in the layout's name order, into one allocation of
    /// the exact size.
    static func encode(_ values: ObjectValues, layout: EntityLayout) -> [UInt8] {
        // Extras interleave with attribute names in sort order: rare, so the dictionary path.
        if values.extras != nil { return encode(values.dictionary(layout)) }
        return values.withSlots { slots in
            var count = 0
            var size = 0
            for position in layout.positionsByName {
                let value = slots[position]
                if case .null = value { continue }
                count += 1
                size += layout.nameHeaders[position].count + encodedSize(of: value)
            }
            size += 1 + varintSize(UInt64(count))
            return write(size: size) { writer in
                writer.byte(formatVersion)
                writer.varint(UInt64(count))
                for position in layout.positionsByName {
                    let value = slots[position]
                    if case .null = value { continue }
                    writer.bytes(layout.nameHeaders[position])
                    writer.value(value)
                }
            }
        }
    }

    /// The bytes `body` writes, exactly `size` of them.
    ///
    /// Written into a temporary buffer (on the stack when small) and copied into the array:
    /// making an array by copying a buffer takes the specialized allocation path, where
    /// `Array(unsafeUninitializedCapacity:)` takes the runtime's generic one, which costs more
    /// than the copy.
    private static func write(size: Int, _ body: (inout Writer) -> Void) -> [UInt8] {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { buffer in
            var writer = Writer(buffer)
            body(&writer)
            precondition(writer.offset == size, "ValueCodec sized \(size) bytes but wrote \(writer.offset)")
            return Array(UnsafeBufferPointer(rebasing: buffer[..<writer.offset]))
        }
    }

    /// A non-null value's size: its tag and payload.
    private static func encodedSize(of value: AttributeValue) -> Int {
        switch value {
        case .null: return 0
        case .string(let text):
            let length = text.utf8.count
            return 1 + varintSize(UInt64(length)) + length
        case .int, .double, .date: return 1 + 8
        case .bool: return 1 + 1
        case .bytes(let bytes): return 1 + varintSize(UInt64(bytes.count)) + bytes.count
        }
    }

    static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        var rest = value
        while rest >= 0x80 {
            size += 1
            rest >>= 7
        }
        return size
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
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    /// Writes into a buffer of the size computed beforehand; every write is bounds-checked.
    struct Writer {
        private let buffer: UnsafeMutableBufferPointer<UInt8>
        private(set) var offset = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        private func reserve(_ count: Int) -> UnsafeMutablePointer<UInt8> {
            precondition(count <= buffer.count - offset, "ValueCodec.Writer overflow")
            return buffer.baseAddress! + offset
        }

        mutating func byte(_ byte: UInt8) {
            reserve(1).initialize(to: byte)
            offset += 1
        }

        mutating func varint(_ value: UInt64) {
            var rest = value
            while rest >= 0x80 {
                byte(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            byte(UInt8(rest))
        }

        mutating func fixed(_ value: UInt64) {
            UnsafeMutableRawPointer(reserve(8)).storeBytes(of: value.bigEndian, as: UInt64.self)
            offset += 8
        }

        mutating func bytes(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
            reserve(bytes.count).initialize(from: source, count: bytes.count)
            offset += bytes.count
        }

        mutating func bytes(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { self.bytes($0) }
        }

        mutating func text(_ text: String) {
            let written: Void? = text.utf8.withContiguousStorageIfAvailable { bytes($0) }
            if written == nil { for unit in text.utf8 { byte(unit) } }
        }

        /// A non-null value's tag and payload.
        mutating func value(_ value: AttributeValue) {
            switch value {
            case .null:
                break  // never written: callers leave nulls out
            case .string(let text):
                byte(Tag.string.rawValue)
                varint(UInt64(text.utf8.count))
                self.text(text)
            case .int(let number):
                byte(Tag.int.rawValue)
                fixed(UInt64(bitPattern: number))
            case .double(let number):
                byte(Tag.double.rawValue)
                fixed(number.bitPattern)
            case .bool(let flag):
                byte(Tag.bool.rawValue)
                byte(flag ? 1 : 0)
            case .bytes(let bytes):
                byte(Tag.bytes.rawValue)
                varint(UInt64(bytes.count))
                self.bytes(bytes)
            case .date(let date):
                byte(Tag.date.rawValue)
                fixed(date.timeIntervalSinceReferenceDate.bitPattern)
            }
        }
    }

    // MARK: - Decoding

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
        try bytes.withUnsafeBytes { raw in Result { () throws(ValueCodecError) in try decode(raw) } }.get()
    }

    /// The values stored in `bytes`, by name.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(ValueCodecError) -> PropertyValues {
        var reader = Reader(bytes: bytes)
        let count = try reader.header()
        var values = PropertyValues()
        var seen = Set<String>()  // also catches a repeated name whose first value was null
        for _ in 0..<count {
            let nameOffset = reader.offset
            let name = try reader.name()
            guard seen.insert(name).inserted else {
                throw ValueCodecError(offset: nameOffset, problem: .duplicateProperty(name))
            }
            let value = try reader.value()
            // A stored null is accepted but, like everywhere else, kept as an absent property.
            if value != .null { values[name] = value }
        }
        try reader.finish()
        return values
    }

    /// The values stored in `bytes`, by position in `layout`'s entity: the same values, and the
    /// same errors, as ``decode(_:)-(UnsafeRawBufferPointer)``.
    package static func decode(_ bytes: UnsafeRawBufferPointer, layout: EntityLayout) throws(ValueCodecError) -> ObjectValues {
        if let values = decodeAttributes(bytes, layout: layout) { return values }
        return try decodeAnyProperties(bytes, layout: layout)
    }

    /// `decode(_:layout:)` of the record of object `id`: a corrupt record is the context's
    /// error naming the object, as every read reports it.
    @inline(__always)
    static func decode(_ bytes: UnsafeRawBufferPointer, layout: EntityLayout, of id: ObjectID) throws(ContextError) -> ObjectValues {
        do throws(ValueCodecError) {
            return try decode(bytes, layout: layout)
        } catch {
            throw ContextError.corruptValue(id, error)
        }
    }

    /// The common case, kept lean: a well-formed record whose properties are all attributes of
    /// the entity (of at most 64 attributes). Nil for anything else, which
    /// ``decodeAnyProperties(_:layout:)`` then decodes, or rejects with the exact error.
    package static func decodeAttributes(_ bytes: UnsafeRawBufferPointer, layout: EntityLayout, sharing shared: SharedStrings? = nil) -> ObjectValues? {
        guard layout.count <= 64 else { return nil }
        var reader = Reader(bytes: bytes)
        guard let count = try? reader.header() else { return nil }
        // Read once: the loop compares positions, not an optional's field, per value.
        let sharedPosition = shared?.position ?? -1
        var complete = false
        let values = ObjectValues(count: layout.count) { slots -> PropertyValues? in
            var seen: UInt64 = 0
            var expected = 0
            for _ in 0..<count {
                // Records are written in name order: the next attribute in that order is tried
                // first, as its whole header (length and name bytes) at once.
                let position: Int
                if layout.count > 0, reader.skip(ifNext: layout.headersByName[expected]) {
                    position = layout.headersByName[expected].position
                    expected = expected + 1 == layout.count ? 0 : expected + 1
                } else {
                    guard let nameRange = try? reader.nameRange(),
                          let found = layout.position(ofName: nameRange, in: reader, after: &expected)
                    else { return nil }
                    position = found
                }
                guard seen & (1 << UInt64(position)) == 0,
                      let value = position == sharedPosition ? try? reader.value(sharing: shared!) : try? reader.value()
                else { return nil }
                seen |= 1 << UInt64(position)
                // The slot is unseen, so still `.null`, which owns nothing: initialized over, not
                // assigned (an assignment destroyed the old value through an outlined call).
                // A stored null leaves the slot null, as it should.
                (slots + position).initialize(to: value)
            }
            complete = reader.isAtEnd
            return nil
        }
        return complete ? values : nil
    }

    /// Any record: properties the entity lacks go to `extras`; every malformation is an error.
    private static func decodeAnyProperties(
        _ bytes: UnsafeRawBufferPointer, layout: EntityLayout
    ) throws(ValueCodecError) -> ObjectValues {
        var reader = Reader(bytes: bytes)
        let count = try reader.header()
        return try ObjectValues(count: layout.count) { (slots) throws(ValueCodecError) -> PropertyValues? in
            var seen = SeenPositions()
            var seenExtras = Set<String>()
            var extras: PropertyValues? = nil
            var expected = 0
            for _ in 0..<count {
                let nameOffset = reader.offset
                let nameRange = try reader.nameRange()
                var position = layout.position(ofName: nameRange, in: reader, after: &expected)
                var name: String? = nil
                if position == nil {
                    // Not an attribute's bytes: validate it as the by-name decoder does. It may
                    // still equal an attribute's name as a String (canonically equivalent Unicode).
                    let text = try reader.text(in: nameRange)
                    position = layout.index(of: text)
                    name = text
                }
                let isNew = position.map { seen.insert($0) } ?? seenExtras.insert(name!).inserted
                guard isNew else {
                    throw ValueCodecError(
                        offset: nameOffset, problem: .duplicateProperty(name ?? layout.attributes[position!].name))
                }
                let value = try reader.value()
                if case .null = value { continue }
                if let position {
                    slots[position] = value
                } else {
                    extras = extras ?? [:]
                    extras![name!] = value
                }
            }
            try reader.finish()
            return extras
        }
    }

    /// Which attribute positions a decode has met: a bit set, in one word for up to 64.
    private struct SeenPositions {
        private var low: UInt64 = 0
        private var high: Set<Int> = []

        /// Marks `position`; false when it was already marked.
        mutating func insert(_ position: Int) -> Bool {
            if position < 64 {
                let bit: UInt64 = 1 << UInt64(position)
                defer { low |= bit }
                return low & bit == 0
            }
            return high.insert(position).inserted
        }
    }

    /// A cursor over the input that never reads past its end.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        private(set) var offset = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        /// A reader at `offset` of `bytes` (within them).
        init(bytes: UnsafeRawBufferPointer, offset: Int) {
            self.bytes = bytes
            self.offset = offset
        }

        var remaining: Int { bytes.count - offset }
        var isAtEnd: Bool { offset == bytes.count }

        /// The format version byte and the property count.
        mutating func header() throws(ValueCodecError) -> Int {
            guard let version = nextByte() else { throw ValueCodecError(offset: 0, problem: .empty) }
            guard version == formatVersion else {
                throw ValueCodecError(offset: 0, problem: .unsupportedVersion(version))
            }
            return try length()
        }

        /// Nothing may follow the last property.
        func finish() throws(ValueCodecError) {
            guard isAtEnd else { throw ValueCodecError(offset: offset, problem: .trailingBytes(remaining)) }
        }

        /// Moves past `header` if the input continues with exactly its bytes: compared as one
        /// or two words when the input left fills them (about 20 instructions less a property
        /// than byte by byte).
        @inline(__always)
        mutating func skip(ifNext header: NameHeader) -> Bool {
            guard header.matches(bytes.baseAddress!, at: offset, end: bytes.count) else { return false }
            offset += header.count
            return true
        }

        /// A property name's bytes (length checked, non-empty), not yet validated as UTF-8.
        mutating func nameRange() throws(ValueCodecError) -> Range<Int> {
            let nameOffset = offset
            let nameLength = try length()
            guard nameLength > 0 else { throw ValueCodecError(offset: nameOffset, problem: .emptyName) }
            let start = offset
            offset += nameLength  // length() checked it against the bytes left
            return start..<offset
        }

        /// A property name.
        mutating func name() throws(ValueCodecError) -> String {
            try text(in: try nameRange())
        }

        /// `value()`, where a string `shared` holds is `shared`'s.
        mutating func value(sharing shared: SharedStrings) throws(ValueCodecError) -> AttributeValue {
            guard offset < bytes.count, bytes[offset] == Tag.string.rawValue else { return try value() }
            offset += 1
            let count = try length()
            let raw = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
            if let text = shared.string(raw) {
                offset += count
                return .string(text)
            }
            return .string(try text(in: offset..<offset + count, advancing: true))
        }

        /// A tag and its payload.
        mutating func value() throws(ValueCodecError) -> AttributeValue {
            let tagOffset = offset
            guard let tagByte = nextByte() else { throw ValueCodecError(offset: tagOffset, problem: .truncated) }
            guard let tag = Tag(rawValue: tagByte) else {
                throw ValueCodecError(offset: tagOffset, problem: .unknownTag(tagByte))
            }
            switch tag {
            case .null:
                return .null
            case .string:
                let count = try length()
                return .string(try text(in: offset..<offset + count, advancing: true))
            case .int:
                return .int(Int64(bitPattern: try fixed()))
            case .double:
                return .double(Double(bitPattern: try fixed()))
            case .bool:
                let flagOffset = offset
                guard let flag = nextByte() else { throw ValueCodecError(offset: flagOffset, problem: .truncated) }
                guard flag <= 1 else { throw ValueCodecError(offset: flagOffset, problem: .invalidBool(flag)) }
                return .bool(flag == 1)
            case .bytes:
                let count = try length()
                defer { offset += count }
                return .bytes(Array(bytes[offset..<offset + count]))
            case .date:
                return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed())))
            }
        }

        @inline(__always)
        mutating func nextByte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        @inline(__always)
        mutating func varint() throws(ValueCodecError) -> UInt64 {
            // One byte (every name length and most counts): no loop.
            if offset < bytes.count, bytes[offset] < 0x80 {
                defer { offset += 1 }
                return UInt64(bytes[offset])
            }
            return try longVarint()
        }

        mutating func longVarint() throws(ValueCodecError) -> UInt64 {
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
        @inline(__always)
        mutating func length() throws(ValueCodecError) -> Int {
            let start = offset
            let value = try varint()
            guard value <= UInt64(remaining) else {
                throw ValueCodecError(offset: start, problem: .lengthOutOfRange(value))
            }
            return Int(value)
        }

        /// Whether the bytes in `range` are exactly `other`.
        func bytes(in range: Range<Int>, equal other: [UInt8]) -> Bool {
            guard range.count == other.count else { return false }
            return other.withUnsafeBytes { other in
                memcmp(bytes.baseAddress! + range.lowerBound, other.baseAddress!, range.count) == 0
            }
        }

        /// The UTF-8 text in `range` (within the input); `advancing` moves past it.
        mutating func text(in range: Range<Int>, advancing: Bool = false) throws(ValueCodecError) -> String {
            let raw = UnsafeRawBufferPointer(rebasing: bytes[range])
            if advancing { offset = range.upperBound }
            // A short ASCII one (most names) is made as the small string it is, checked as it is made.
            if let base = bytes.baseAddress, let small = SmallASCIIString.make(base, at: range.lowerBound, count: range.count, end: bytes.count) {
                return small
            }
            // ASCII (names always, most text) is valid UTF-8 as it is; anything else is
            // validated strictly, because `String(decoding:)` would repair it silently.
            if Self.isASCII(raw) {
                // Copied in as it is (`String(decoding:)` went through its repairing path first,
                // about 60 instructions more a string).
                return String(unsafeUninitializedCapacity: raw.count) { buffer in
                    UnsafeMutableRawBufferPointer(buffer).copyMemory(from: raw)
                    return raw.count
                }
            }
            guard let text = String(validating: Array(raw), as: UTF8.self) else {
                throw ValueCodecError(offset: range.lowerBound, problem: .invalidUTF8)
            }
            return text
        }

        /// Whether no byte of `raw` has its high bit set, tested eight bytes at a time (a
        /// loop over the bytes cost about 60 instructions a 14-byte string).
        @inline(__always)
        static func isASCII(_ raw: UnsafeRawBufferPointer) -> Bool {
            let count = raw.count
            guard count >= 8 else {
                var bits: UInt8 = 0
                for byte in raw { bits |= byte }
                return bits & 0x80 == 0
            }
            // The last word may overlap the one before it.
            var bits = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            var offset = 0
            while offset < count - 8 {
                bits |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            return bits & 0x8080_8080_8080_8080 == 0
        }

        /// Eight bytes, big-endian.
        mutating func fixed() throws(ValueCodecError) -> UInt64 {
            guard remaining >= 8 else { throw ValueCodecError(offset: offset, problem: .truncated) }
            defer { offset += 8 }
            return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
    }
}

extension EntityLayout {
    /// The position of the attribute whose name is the bytes in `range` of the reader's input,
    /// or nil. Records are written in name order, so the attribute after the one matched last
    /// (`expected`, an index into `positionsByName`, moved past the match) is tried first.
    @inline(__always)
    func position(ofName range: Range<Int>, in reader: ValueCodec.Reader, after expected: inout Int) -> Int? {
        let count = self.count
        for step in 0..<count {
            let index = (expected + step) % count
            let candidate = positionsByName[index]
            if reader.bytes(in: range, equal: nameBytes[candidate]) {
                expected = (index + 1) % count
                return candidate
            }
        }
        return nil
    }
}
