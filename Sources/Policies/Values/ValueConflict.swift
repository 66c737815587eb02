/// One key of a plain key-value transaction that another writer changed after the transaction
/// read it: the three states a ``ValueMergePolicy`` decides between, as whole values.
///
/// - **ancestor**: the value the transaction read, the first time it read or wrote the key (a
///   write reads the key first); nil when the key was absent then.
/// - **ours**: the value the transaction leaves, after all its writes to the key; nil when it
///   deleted the key. For a key the transaction only read, ours is the ancestor
///   (``isWrittenHere`` is false).
/// - **theirs**: the value committed now; nil when the key is absent (deleted, or never written).
///
/// ```swift
/// // The transaction read "10" and wrote "13"; meanwhile another writer committed "15".
/// conflict.ancestor   // Array("10".utf8)
/// conflict.ours       // Array("13".utf8)
/// conflict.theirs     // Array("15".utf8)
/// ```
public struct ValueConflict: Sendable, Hashable {
    /// The table of the key.
    ///
    /// ```swift
    /// conflict.table   // "counters"
    /// ```
    public let table: String

    /// The key.
    ///
    /// ```swift
    /// String(decoding: conflict.key, as: UTF8.self)   // "visits"
    /// ```
    public let key: [UInt8]

    /// The value the transaction read; nil when the key was absent.
    ///
    /// ```swift
    /// conflict.ancestor == nil   // the transaction saw no record
    /// ```
    public let ancestor: [UInt8]?

    /// The record version the transaction read; 0 when the key was absent.
    ///
    /// ```swift
    /// conflict.ancestorVersion   // 4
    /// ```
    public let ancestorVersion: UInt64

    /// The value the transaction leaves; nil when it deleted the key; the ancestor when it only
    /// read the key.
    ///
    /// ```swift
    /// conflict.ours == nil   // the transaction deleted the key
    /// ```
    public let ours: [UInt8]?

    /// Whether the transaction wrote (put or deleted) the key, rather than only reading it.
    ///
    /// ```swift
    /// conflict.isWrittenHere   // false: a key the transaction's decision depended on
    /// ```
    public let isWrittenHere: Bool

    /// The value committed now; nil when the key is absent.
    ///
    /// ```swift
    /// conflict.theirs == nil   // another writer deleted the key
    /// ```
    public let theirs: [UInt8]?

    /// The record version committed now; 0 when the key is absent.
    ///
    /// ```swift
    /// conflict.theirsVersion   // 5
    /// ```
    public let theirsVersion: UInt64

    /// Creates a conflict (the queue does; tests and tools may too).
    ///
    /// ```swift
    /// ValueConflict(table: "t", key: Array("k".utf8), ancestor: nil, ancestorVersion: 0,
    ///               ours: Array("1".utf8), isWrittenHere: true, theirs: Array("2".utf8), theirsVersion: 1)
    /// ```
    public init(
        table: String, key: [UInt8], ancestor: [UInt8]?, ancestorVersion: UInt64, ours: [UInt8]?,
        isWrittenHere: Bool, theirs: [UInt8]?, theirsVersion: UInt64
    ) {
        self.table = table
        self.key = key
        self.ancestor = ancestor
        self.ancestorVersion = ancestorVersion
        self.ours = ours
        self.isWrittenHere = isWrittenHere
        self.theirs = theirs
        self.theirsVersion = theirsVersion
    }

    /// Whether ours differs from the ancestor (a delete of a present key, a put over an absent
    /// one, or different bytes).
    ///
    /// ```swift
    /// conflict.isChangedHere   // false for a key the transaction only read
    /// ```
    public var isChangedHere: Bool { ours != ancestor }

    /// Whether theirs differs from the ancestor. The conflict exists because the record version
    /// moved; the other writer may still have left the same bytes (then this is false).
    ///
    /// ```swift
    /// conflict.isChangedInStore   // true when another writer committed different bytes
    /// ```
    public var isChangedInStore: Bool { theirs != ancestor }
}
