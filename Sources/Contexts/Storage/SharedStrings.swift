/// Strings a record's decoding may share instead of allocating a copy (`ValueCodec.decodeValidated(_:layout:sharing:)`):
/// for the attribute at `position`, `string(bytes)` gives the string already held whose UTF-8
/// is exactly those bytes, or nil for a copy.
///
/// Relies on: every string `string` returns has exactly the bytes it was given (so it is the
/// value the decoder would have made: same bytes, valid UTF-8).
package final class SharedStrings {
    package let position: Int
    private let lookup: (UnsafeRawBufferPointer) -> String?

    package init(position: Int, _ lookup: @escaping (UnsafeRawBufferPointer) -> String?) {
        self.position = position
        self.lookup = lookup
    }

    package func string(_ bytes: UnsafeRawBufferPointer) -> String? { lookup(bytes) }
}
