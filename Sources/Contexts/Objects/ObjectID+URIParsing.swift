// Reading a permanent ID's URI over its UTF-8 bytes: every stored to-one is one, and a delete
// rule, a save's checks and a merge read them back per object. The general reading (by
// characters, a `String` for each part) cost about 7,600 instructions an ID, the largest part of
// a cascade's work per dependent; this one, about a tenth.

extension ObjectID {
    /// `cairn://`, made once (an array literal per call was an allocation per ID).
    private static let uriSchemeBytes = Array("cairn://".utf8)

    /// The permanent ID whose canonical URI `uri` is exactly (`cairn://<entity>/p<key>`, the key's
    /// digits without leading zeros); nil for anything else, which `init(anyURI:)` then reads.
    ///
    /// Relies on: it accepts only URIs `init(anyURI:)` accepts, giving the same ID (every byte it
    /// accepts is ASCII, so characters and bytes agree). Pinned by
    /// `ObjectIDURIParsingTests.theByteReadingAgreesWithTheGeneralOne`.
    package init?(canonicalPermanentURI uri: String) {
        var uri = uri
        let parsed = uri.withUTF8 { bytes -> (entity: String, key: UInt64)? in
            let scheme = ObjectID.uriSchemeBytes
            guard bytes.count > scheme.count + 3, bytes.starts(with: scheme) else { return nil }
            let entityStart = scheme.count
            guard let entityEnd = bytes[entityStart...].firstIndex(of: UInt8(ascii: "/")),
                  Schema.isValidName(bytes: bytes[entityStart..<entityEnd], maxBytes: Schema.maxEntityNameBytes),
                  entityEnd + 2 < bytes.count, bytes[entityEnd + 1] == UInt8(ascii: "p") else { return nil }
            let digitsStart = entityEnd + 2
            // Canonical: "0", or no leading zero.
            guard bytes[digitsStart] != UInt8(ascii: "0") || bytes.count == digitsStart + 1 else { return nil }
            var key: UInt64 = 0
            for byte in bytes[digitsStart...] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                let (times10, overflowTimes) = key.multipliedReportingOverflow(by: 10)
                let (sum, overflowSum) = times10.addingReportingOverflow(UInt64(byte - 0x30))
                guard !overflowTimes && !overflowSum else { return nil }
                key = sum
            }
            return (String(decoding: UnsafeBufferPointer(rebasing: bytes[entityStart..<entityEnd]), as: UTF8.self), key)
        }
        guard let parsed else { return nil }
        self.init(entityName: parsed.entity, primaryKey: parsed.key)
    }
}
