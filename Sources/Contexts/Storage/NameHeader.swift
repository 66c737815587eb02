/// An attribute's name as the stored format writes it before a value (its length as a varint,
/// then its UTF-8), with the attribute's position: what the decoder expects next in a record.
///
/// A header of at most eight bytes (a name of up to seven) is also kept as one word and a mask,
/// so that it is tested against the input in one comparison rather than byte by byte.
struct NameHeader {
    /// The attribute's position.
    let position: Int
    let bytes: [UInt8]
    /// The header's bytes as one word loaded from memory would hold them, zero past its end;
    /// `mask` has the bits of its bytes set, and is zero for a header longer than a word.
    let word: UInt64
    let mask: UInt64

    init(bytes: [UInt8], position: Int) {
        self.position = position
        self.bytes = bytes
        var word: UInt64 = 0, mask: UInt64 = 0
        if bytes.count <= 8 {
            withUnsafeMutableBytes(of: &word) { word in
                for index in bytes.indices { word[index] = bytes[index] }
            }
            withUnsafeMutableBytes(of: &mask) { mask in
                for index in bytes.indices { mask[index] = 0xFF }
            }
        }
        self.word = word
        self.mask = mask
    }
}
