/// A position in a store's persistent history: Core Data's `NSPersistentHistoryToken`.
///
/// A transaction's token is its commit version; ``ObjectStore/fetchHistory(after:limit:)``
/// returns the transactions after a token. Tokens are `Codable` and print as their decimal
/// version (`description`), which `init?(_:)` and `cairn history --after` read back, so an
/// application can keep the last one it processed in a file or in `UserDefaults`.
///
/// ```swift
/// let token = transactions.last?.token ?? .start
/// try Data(token.description.utf8).write(to: tokenFile)
/// let again = HistoryToken(String(decoding: try Data(contentsOf: tokenFile), as: UTF8.self))
/// ```
public struct HistoryToken: Sendable, Hashable, Comparable, Codable, LosslessStringConvertible {
    /// The commit version the token stands after (0: before every commit).
    ///
    /// ```swift
    /// transaction.token.version   // 17
    /// ```
    public let version: UInt64

    /// The position before every transaction: `fetchHistory(after: .start)` returns them all.
    ///
    /// ```swift
    /// let everything = try objects.fetchHistory(after: .start)
    /// ```
    public static let start = HistoryToken(version: 0)

    /// The position after the commit with `version`.
    ///
    /// ```swift
    /// let token = HistoryToken(version: 17)
    /// ```
    public init(version: UInt64) {
        self.version = version
    }

    /// Reads a token's printed form (decimal digits only); nil for anything else.
    ///
    /// ```swift
    /// HistoryToken("17")?.version   // 17
    /// HistoryToken("-1")            // nil
    /// ```
    public init?(_ description: String) {
        guard !description.isEmpty, description.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let version = UInt64(description)
        else { return nil }
        self.version = version
    }

    /// The decimal version.
    ///
    /// ```swift
    /// HistoryToken(version: 17).description   // "17"
    /// ```
    public var description: String { String(version) }

    /// Orders tokens by version: a later token is further on in the history.
    ///
    /// ```swift
    /// HistoryToken(version: 3) < HistoryToken(version: 4)   // true
    /// ```
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.version < rhs.version }
}
