// Writing a permanent ID's URI as bytes: every to-one set stores one, and a prefetch makes one
// per owner. String interpolation cost about 1,600 instructions an ID; this, about a fifth.

extension ObjectID {
    /// `cairn://<entity>/p<key>`, the canonical form `init(canonicalPermanentURI:)` reads back.
    static func permanentURI(entityName: String, key: UInt64) -> String {
        var entityName = entityName
        return entityName.withUTF8 { name in
            var digits = 1
            var rest = key / 10
            while rest > 0 {
                digits += 1
                rest /= 10
            }
            let scheme: StaticString = "cairn://"
            let count = scheme.utf8CodeUnitCount + name.count + 2 + digits
            return String(unsafeUninitializedCapacity: count) { buffer in
                var at = 0
                for byte in UnsafeBufferPointer(start: scheme.utf8Start, count: scheme.utf8CodeUnitCount) {
                    buffer[at] = byte
                    at += 1
                }
                for byte in name {
                    buffer[at] = byte
                    at += 1
                }
                buffer[at] = UInt8(ascii: "/")
                buffer[at + 1] = UInt8(ascii: "p")
                var value = key
                for position in stride(from: count - 1, through: count - digits, by: -1) {
                    buffer[position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                return count
            }
        }
    }
}
