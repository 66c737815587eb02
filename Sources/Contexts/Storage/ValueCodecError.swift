/// A stored value that does not decode: where in its bytes, and what is wrong.
///
/// Surfaces from reads as ``ContextError/corruptValue(_:_:)``.
///
/// ```swift
/// catch ContextError.corruptValue(let id, let error) {
///     print(id, error.offset, error.problem)
/// }
/// ```
public struct ValueCodecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the bytes.
    ///
    /// ```swift
    /// if case .unknownTag(let tag) = error.problem { print(tag) }
    /// ```
    public enum Problem: Sendable, Hashable {
        /// There are no bytes at all.
        ///
        /// ```swift
        /// ValueCodecError.Problem.empty
        /// ```
        case empty
        /// The first byte is not a known format version.
        ///
        /// ```swift
        /// ValueCodecError.Problem.unsupportedVersion(2)
        /// ```
        case unsupportedVersion(UInt8)
        /// The bytes end in the middle of something.
        ///
        /// ```swift
        /// ValueCodecError.Problem.truncated
        /// ```
        case truncated
        /// A varint is longer than 10 bytes or overflows 64 bits.
        ///
        /// ```swift
        /// ValueCodecError.Problem.overlongVarint
        /// ```
        case overlongVarint
        /// A count or length is larger than the bytes that are left.
        ///
        /// ```swift
        /// ValueCodecError.Problem.lengthOutOfRange(1_000_000)
        /// ```
        case lengthOutOfRange(UInt64)
        /// A property name or string is not valid UTF-8.
        ///
        /// ```swift
        /// ValueCodecError.Problem.invalidUTF8
        /// ```
        case invalidUTF8
        /// A property name is empty.
        ///
        /// ```swift
        /// ValueCodecError.Problem.emptyName
        /// ```
        case emptyName
        /// A property appears twice.
        ///
        /// ```swift
        /// ValueCodecError.Problem.duplicateProperty("age")
        /// ```
        case duplicateProperty(String)
        /// A type tag is not one of 0 to 6.
        ///
        /// ```swift
        /// ValueCodecError.Problem.unknownTag(7)
        /// ```
        case unknownTag(UInt8)
        /// A bool byte is neither 0 nor 1.
        ///
        /// ```swift
        /// ValueCodecError.Problem.invalidBool(2)
        /// ```
        case invalidBool(UInt8)
        /// Bytes are left over after the last property.
        ///
        /// ```swift
        /// ValueCodecError.Problem.trailingBytes(3)
        /// ```
        case trailingBytes(Int)
    }

    /// The offset, in the value's bytes, of the item that failed.
    ///
    /// ```swift
    /// error.offset   // 0 for a bad version byte
    /// ```
    public let offset: Int

    /// What is wrong.
    ///
    /// ```swift
    /// error.problem == .truncated
    /// ```
    public let problem: Problem

    /// Creates the error.
    ///
    /// ```swift
    /// ValueCodecError(offset: 0, problem: .empty)
    /// ```
    public init(offset: Int, problem: Problem) {
        self.offset = offset
        self.problem = problem
    }

    /// The problem and its offset.
    ///
    /// ```swift
    /// print(ValueCodecError(offset: 0, problem: .empty))   // malformed stored value at byte 0: no bytes
    /// ```
    public var description: String {
        let what: String
        switch problem {
        case .empty: what = "no bytes"
        case .unsupportedVersion(let version): what = "unsupported format version \(version)"
        case .truncated: what = "truncated"
        case .overlongVarint: what = "varint longer than 10 bytes or over 64 bits"
        case .lengthOutOfRange(let length): what = "length \(length) exceeds the bytes left"
        case .invalidUTF8: what = "text is not valid UTF-8"
        case .emptyName: what = "empty property name"
        case .duplicateProperty(let name): what = "property \"\(name)\" appears twice"
        case .unknownTag(let tag): what = "unknown type tag \(tag)"
        case .invalidBool(let byte): what = "bool byte \(byte) is neither 0 nor 1"
        case .trailingBytes(let count): what = "\(count) trailing bytes"
        }
        return "malformed stored value at byte \(offset): \(what)"
    }
}
