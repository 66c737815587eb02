// A small strict JSON reader and writer for scenario files and `--json` output.
//
// Hand-written rather than JSONSerialization or JSONDecoder for three reasons that matter to
// scenarios: object members keep their file order (attribute order is display order), an
// integer literal stays apart from a floating-point one and from a Boolean (an `int` attribute
// must reject `30.5` and `true`), and a syntax error or a duplicate key names its line and
// column. Output always sorts object keys, so it is stable to diff.

/// A JSON value as read from a scenario file, or built for output.
public indirect enum JSONValue: Equatable, Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without a fraction or exponent that fits in 64 bits.
    case integer(Int64)
    /// Any other number.
    case double(Double)
    /// A string, its escapes decoded.
    case string(String)
    /// Elements in file order.
    case array([JSONValue])
    /// Members in file order; keys are unique (the reader rejects duplicates).
    case object([(key: String, value: JSONValue)])

    /// Equal values of the same kind; object members compare in order.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(left), .bool(right)): left == right
        case let (.integer(left), .integer(right)): left == right
        case let (.double(left), .double(right)): left == right
        case let (.string(left), .string(right)): left == right
        case let (.array(left), .array(right)): left == right
        case let (.object(left), .object(right)):
            left.count == right.count && zip(left, right).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// What the value is, for error messages: "a string", "an object", ….
    public var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool(let value): "\(value)"
        case .integer(let value): "the number \(value)"
        case .double(let value): "the number \(value)"
        case .string(let value): "the string \(String(reflecting: value))"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The value as JSON text with sorted keys: indented by two spaces per level when
    /// `pretty`, otherwise on one line with a space after each `:` and `,`.
    public func rendered(pretty: Bool = true) -> String {
        var out = ""
        render(into: &out, pretty: pretty, depth: 0)
        return out
    }

    private func render(into out: inout String, pretty: Bool, depth: Int) {
        switch self {
        case .null:
            out += "null"
        case .bool(let value):
            out += value ? "true" : "false"
        case .integer(let value):
            out += String(value)
        case .double(let value):
            // JSON has no NaN or infinity; scenario input cannot produce them either.
            out += value.isFinite ? String(value) : "null"
        case .string(let value):
            Self.appendQuoted(value, to: &out)
        case .array(let elements):
            renderContainer(
                into: &out, open: "[", close: "]", count: elements.count, pretty: pretty, depth: depth
            ) { index, out in
                elements[index].render(into: &out, pretty: pretty, depth: depth + 1)
            }
        case .object(let members):
            let sorted = members.sorted { $0.key < $1.key }
            renderContainer(
                into: &out, open: "{", close: "}", count: sorted.count, pretty: pretty, depth: depth
            ) { index, out in
                Self.appendQuoted(sorted[index].key, to: &out)
                out += ": "
                sorted[index].value.render(into: &out, pretty: pretty, depth: depth + 1)
            }
        }
    }

    private func renderContainer(
        into out: inout String, open: String, close: String, count: Int, pretty: Bool, depth: Int,
        element: (Int, inout String) -> Void
    ) {
        guard count > 0 else {
            out += open + close
            return
        }
        out += open
        for index in 0..<count {
            if index > 0 { out += pretty ? "," : ", " }
            if pretty { out += "\n" + String(repeating: "  ", count: depth + 1) }
            element(index, &out)
        }
        if pretty { out += "\n" + String(repeating: "  ", count: depth) }
        out += close
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped, the rest
    /// kept as UTF-8.
    package static func quoted(_ text: String) -> String {
        var out = ""
        appendQuoted(text, to: &out)
        return out
    }

    private static func appendQuoted(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let digits = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

/// Why a text is not JSON, with the line and column (both from 1) where reading stopped.
public struct JSONSyntaxError: Error, CustomStringConvertible {
    /// The line, from 1.
    public let line: Int
    /// The column in characters, from 1.
    public let column: Int
    /// What is wrong there.
    public let message: String

    /// `line L, column C: message`.
    public var description: String { "line \(line), column \(column): \(message)" }
}

extension JSONValue {
    /// How many levels values may nest: the whole text is level 1, the elements and members of
    /// an array or object one level more. Deeper input is refused with a `JSONSyntaxError`
    /// rather than risking the stack.
    public static let maxNestingDepth = 200

    /// Reads one JSON value (RFC 8259) that makes up the whole of `text`.
    ///
    /// Throws `JSONSyntaxError` for anything else, including duplicate object keys, numbers
    /// too large for a Double and nesting deeper than `maxNestingDepth`.
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        var reader = JSONReader(bytes: Array(text.utf8))
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.isAtEnd else { throw reader.error("unexpected text after the JSON value") }
        return value
    }
}

/// A cursor over UTF-8 bytes that reads JSON values.
private struct JSONReader {
    let bytes: [UInt8]
    var offset = 0
    static let maxDepth = JSONValue.maxNestingDepth

    init(bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    func error(_ message: String) -> JSONSyntaxError {
        var line = 1
        var lineStart = 0
        for index in 0..<min(offset, bytes.count) where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        let column = String(decoding: bytes[lineStart..<min(offset, bytes.count)], as: UTF8.self).count + 1
        return JSONSyntaxError(line: line, column: column, message: message)
    }

    mutating func skipWhitespace() {
        while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
    }

    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
        guard offset < bytes.count else { throw error("unexpected end of the text; expected a value") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character \(describeCurrent()); expected a value")
        }
    }

    private func describeCurrent() -> String {
        guard offset < bytes.count else { return "end of text" }
        let scalarEnd = min(offset + 4, bytes.count)
        let text = String(decoding: bytes[offset..<scalarEnd], as: UTF8.self)
        return String(reflecting: String(text.prefix(1)))
    }

    private mutating func literal(_ word: String) throws(JSONSyntaxError) {
        let expected = Array(word.utf8)
        guard bytes.count - offset >= expected.count, Array(bytes[offset..<offset + expected.count]) == expected else {
            throw error("unexpected character \(describeCurrent()); expected a value")
        }
        offset += expected.count
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        offset += 1  // {
        var members: [(key: String, value: JSONValue)] = []
        var seen = Set<String>()
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                throw error("expected a quoted key, found \(describeCurrent())")
            }
            let keyOffset = offset
            let key = try string()
            guard seen.insert(key).inserted else {
                offset = keyOffset
                throw error("duplicate key \(String(reflecting: key))")
            }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else {
                throw error("expected ':' after the key \(String(reflecting: key)), found \(describeCurrent())")
            }
            offset += 1
            skipWhitespace()
            members.append((key: key, value: try value(depth: depth + 1)))
            skipWhitespace()
            guard offset < bytes.count else { throw error("unexpected end of the text inside an object") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            if bytes[offset] == UInt8(ascii: "}") {
                offset += 1
                return .object(members)
            }
            throw error("expected ',' or '}' in an object, found \(describeCurrent())")
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        offset += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            guard offset < bytes.count else { throw error("unexpected end of the text inside an array") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            if bytes[offset] == UInt8(ascii: "]") {
                offset += 1
                return .array(elements)
            }
            throw error("expected ',' or ']' in an array, found \(describeCurrent())")
        }
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        offset += 1  // opening quote
        var scalars = String.UnicodeScalarView()
        var run: [UInt8] = []  // unescaped bytes not yet decoded
        func flush(_ run: inout [UInt8], into scalars: inout String.UnicodeScalarView) {
            scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
            run.removeAll(keepingCapacity: true)
        }
        while true {
            guard offset < bytes.count else { throw error("unexpected end of the text inside a string") }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                flush(&run, into: &scalars)
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush(&run, into: &scalars)
                scalars.append(try escape())
            case 0..<0x20:
                throw error("control character in a string (write it as an escape such as \\n)")
            default:
                run.append(byte)
                offset += 1
            }
        }
    }

    private mutating func escape() throws(JSONSyntaxError) -> Unicode.Scalar {
        offset += 1  // backslash
        guard offset < bytes.count else { throw error("unexpected end of the text in an escape") }
        let byte = bytes[offset]
        offset += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let first = try hexQuad()
            if (0xD800..<0xDC00).contains(first) {
                guard bytes.count - offset >= 6, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u")
                else { throw error("a high surrogate escape must be followed by a low one") }
                offset += 2
                let second = try hexQuad()
                guard (0xDC00..<0xE000).contains(second) else { throw error("invalid low surrogate escape") }
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(first) else { throw error("lone low surrogate escape") }
            return scalar
        default:
            offset -= 1
            throw error("invalid escape \\\(describeCurrent().dropFirst().dropLast())")
        }
    }

    private mutating func hexQuad() throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw error("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("a \\u escape needs four hex digits")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = offset
        var isInteger = true
        func digits(_ reader: inout JSONReader) -> Int {
            let first = reader.offset
            while reader.offset < reader.bytes.count,
                  (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(reader.bytes[reader.offset]) {
                reader.offset += 1
            }
            return reader.offset - first
        }
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        let integerStart = offset
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { throw error("a number needs digits after '-'") }
        if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") {
            offset = integerStart
            throw error("a number must not start with a leading zero")
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard digits(&self) > 0 else { throw error("a number needs digits after '.'") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits(&self) > 0 else { throw error("a number needs digits in its exponent") }
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let double = Double(text), double.isFinite else {
            offset = start
            throw error("the number \(text) is too large")
        }
        return .double(double)
    }
}
