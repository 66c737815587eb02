/// An attribute's name as the stored format writes it before a value (its length as a varint,
/// then its UTF-8), with the attribute's position: what the decoder expects next in a record.
///
/// A header of at most sixteen bytes (a name of up to fifteen) is also kept as two words and
/// masks, so that it is tested against the input in one or two comparisons rather than byte by
/// byte.
struct NameHeader {
    /// The attribute's position.
    let position: Int
    let bytes: [UInt8]
    /// The header's first eight bytes as one word loaded from memory would hold them, zero past
    /// its end, and the next eight in `word2`; the masks have the bits of their bytes set.
    /// All four are zero for a header longer than two words.
    let word: UInt64
    let mask: UInt64
    let word2: UInt64
    let mask2: UInt64
    /// `bytes.count`, kept inline.
    let count: Int

    init(bytes: [UInt8], position: Int) {
        self.position = position
        self.bytes = bytes
        count = bytes.count
        var words: (UInt64, UInt64) = (0, 0), masks: (UInt64, UInt64) = (0, 0)
        if bytes.count <= 16 {
            withUnsafeMutableBytes(of: &words) { words in
                for index in bytes.indices { words[index] = bytes[index] }
            }
            withUnsafeMutableBytes(of: &masks) { masks in
                for index in bytes.indices { masks[index] = 0xFF }
            }
        }
        (word, word2) = words
        (mask, mask2) = masks
    }

    /// Whether the bytes of `base` at `offset` (before `end`) start with this header: compared
    /// as one or two words; near the end, the last word is loaded so that it ends at `end` (a
    /// record's last name is usually within a word of its end).
    @inline(__always)
    func matches(_ base: UnsafeRawPointer, at offset: Int, end: Int) -> Bool {
        let available = end - offset
        if mask2 == 0 {
            if available >= 8 && mask != 0 { return base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) & mask == word }
        } else if available >= 16 {
            return base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == word
                && base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self) & mask2 == word2
        }
        return matchesNearEnd(base, at: offset, end: end)
    }

    /// `matches` of the header at `header`, its fields read where they lie: a call on
    /// `header.pointee` copies its 56 bytes first, per property of a record validated.
    @inline(__always)
    static func matches(_ header: UnsafePointer<NameHeader>, _ base: UnsafeRawPointer, at offset: Int, end: Int) -> Bool {
        let available = end &- offset
        let mask = header.pointee.mask, mask2 = header.pointee.mask2
        if mask2 == 0 {
            if available >= 8 && mask != 0 { return base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) & mask == header.pointee.word }
        } else if available >= 16 {
            return base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == header.pointee.word
                && base.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt64.self) & mask2 == header.pointee.word2
        }
        return header.pointee.matchesNearEnd(base, at: offset, end: end)
    }

    /// `matches` with fewer bytes left than its words (or a header longer than two).
    @inline(never)
    private func matchesNearEnd(_ base: UnsafeRawPointer, at offset: Int, end: Int) -> Bool {
        let available = end - offset
        guard count <= available else { return false }
        if mask2 != 0 {
            // At least 9 bytes left: the first word whole, the second loaded back from the end.
            guard base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == word else { return false }
            return base.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) &>> UInt64(8 * (16 - available)) & mask2 == word2
        }
        if mask != 0 && end >= 8 {
            return (base.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) &>> UInt64(8 * (8 - available))) & mask == word
        }
        return matchesBytes(base + offset, available: available)
    }

    /// `matches`, byte by byte: a name's header is a few bytes, shorter than a call to `memcmp` costs.
    private func matchesBytes(_ next: UnsafeRawPointer, available: Int) -> Bool {
        guard count <= available else { return false }
        return bytes.withUnsafeBytes { header in
            for index in 0..<header.count where next.load(fromByteOffset: index, as: UInt8.self) != header[index] {
                return false
            }
            return true
        }
    }
}
