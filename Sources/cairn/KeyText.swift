/// How `cairn` writes keys and values as text, and reads them back: one lossless encoding
/// for every command (documented in the README, "Keys and values on the command line").
///
/// Printing: valid UTF-8 passes through, except `\` (printed `\\`), tab (`\t`), line feed
/// (`\n`), carriage return (`\r`), the other control characters (C0, DEL and C1, as the
/// `\xHH` of each of their bytes), and every byte that is not part of valid UTF-8 (`\xHH`).
/// So a printed key or value never holds a tab or a line break, `key<TAB>value` lines
/// split unambiguously, and a terminal never receives a control sequence from the data.
///
/// Reading: the same escapes (`\\`, `\t`, `\n`, `\r`, `\xHH` with two hex digits of either
/// case) give their bytes; any other backslash is an error; everything else is taken as
/// its bytes. Reading what was printed gives back the exact bytes.
enum KeyText {
    /// `bytes` as escaped text.
    static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        let input = Array(bytes)
        var index = 0
        while index < input.count {
            let byte = input[index]
            let length = validSequenceLength(input, at: index)
            if length == 0 {
                appendHex(byte, to: &out)
                index += 1
                continue
            }
            if length == 1 {
                switch byte {
                case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0..<0x20, 0x7F: appendHex(byte, to: &out)
                default: out.append(byte)
                }
            } else if length == 2 && byte == 0xC2 && input[index + 1] < 0xA0 {
                // U+0080-U+009F, the C1 controls: 0x9B alone is a terminal's CSI.
                appendHex(byte, to: &out)
                appendHex(input[index + 1], to: &out)
            } else {
                out += input[index..<index + length]
            }
            index += length
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Why a text is not a valid encoding: the byte offset of the bad escape and a message.
    struct DecodingError: Error {
        let offset: Int
        let reason: String
    }

    /// The bytes `text` stands for.
    static func decode<Bytes: Collection<UInt8>>(_ text: Bytes) throws(DecodingError) -> [UInt8] {
        let input = Array(text)
        guard input.contains(UInt8(ascii: "\\")) else { return input }
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                index += 1
                continue
            }
            guard index + 1 < input.count else {
                throw DecodingError(offset: index, reason: "a backslash at the end, an unfinished escape (write \\\\ for a backslash)")
            }
            switch input[index + 1] {
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "x"):
                guard index + 3 < input.count, let high = hexDigit(input[index + 2]), let low = hexDigit(input[index + 3]) else {
                    throw DecodingError(offset: index, reason: "\\x needs two hex digits")
                }
                out.append(high << 4 | low)
                index += 2
            default:
                let length = max(1, validSequenceLength(input, at: index + 1))
                let shown = encode(input[(index + 1)..<(index + 1 + length)])
                throw DecodingError(
                    offset: index, reason: "unknown escape \\\(shown) (the escapes are \\\\ \\t \\n \\r \\xHH)")
            }
            index += 2
        }
        return out
    }

    /// `text` decoded, or a usage error naming `what` (for example "KEY") and the offset.
    static func decode(_ text: String, as what: String) throws(CommandError) -> [UInt8] {
        do {
            return try decode(Array(text.utf8))
        } catch {
            throw CommandError.usage("\(what): \(error.reason), at byte \(error.offset)")
        }
    }

    /// The length of the valid UTF-8 sequence at `index`, or 0 when the byte there does not
    /// start one (overlong forms, surrogates and values past U+10FFFF are not valid).
    private static func validSequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let first = bytes[index]
        let length: Int, lowest: UInt32
        switch first {
        case 0..<0x80: return 1
        case 0xC2...0xDF: length = 2; lowest = 0x80
        case 0xE0...0xEF: length = 3; lowest = 0x800
        case 0xF0...0xF4: length = 4; lowest = 0x10000
        default: return 0
        }
        guard index + length <= bytes.count else { return 0 }
        var scalar = UInt32(first) & (0xFF >> (length + 1))
        for offset in 1..<length {
            let next = bytes[index + offset]
            guard next & 0xC0 == 0x80 else { return 0 }
            scalar = scalar << 6 | UInt32(next & 0x3F)
        }
        guard scalar >= lowest, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return 0 }
        return length
    }

    private static func appendHex(_ byte: UInt8, to out: inout [UInt8]) {
        let digits = Array("0123456789abcdef".utf8)
        out += [UInt8(ascii: "\\"), UInt8(ascii: "x"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// User text in a message, cut to `limit` characters (with how long it was) so that an
/// error never echoes a megabyte of input; control characters escaped as `KeyText` does.
func abbreviated(_ text: String, limit: Int = 64) -> String {
    let utf8 = Array(text.utf8)
    if utf8.count <= limit { return KeyText.encode(utf8) }
    // Cut at a character boundary, within the first `limit` bytes.
    var cut = limit
    while cut > 0 && utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
    return KeyText.encode(utf8[..<cut]) + "... (\(utf8.count) bytes)"
}
