import Foundation

/// One tracked save as the persistent history keeps it: Core Data's
/// `NSPersistentHistoryTransaction`. Written in the save's own commit, so it exists exactly
/// when the save's data does.
///
/// ```swift
/// for transaction in try objects.fetchHistory(after: lastToken) {
///     print(transaction.token, transaction.contextName, transaction.author ?? "-", transaction.changes.count)
///     try await view.perform { try view.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
///     lastToken = transaction.token
/// }
/// ```
public struct HistoryTransaction: Sendable, Hashable {
    /// The transaction's position: its commit version.
    ///
    /// ```swift
    /// let next = try objects.fetchHistory(after: transaction.token)
    /// ```
    public let token: HistoryToken
    /// When the save committed, by the saving process's clock.
    ///
    /// ```swift
    /// transaction.timestamp   // 2026-12-02 03:22:31 +0000
    /// ```
    public let timestamp: Date
    /// The saving context's ``ObjectContext/name``.
    ///
    /// ```swift
    /// transaction.contextName   // "import"
    /// ```
    public let contextName: String
    /// The saving context's ``ObjectContext/transactionAuthor``; nil when it had none.
    ///
    /// ```swift
    /// transaction.author   // "sync"
    /// ```
    public let author: String?
    /// The saving process's ID.
    ///
    /// ```swift
    /// transaction.processID == getpid()   // saved by this process
    /// ```
    public let processID: Int32
    /// What the save wrote, one change per object: inserts, then updates, then deletes, each
    /// in the save's order.
    ///
    /// ```swift
    /// transaction.changes.filter { $0.kind == .update }.map(\.updatedProperties)
    /// ```
    public let changes: [HistoryChange]
    /// The ObjectStore (one per open) that saved it: its own watcher skips it.
    let origin: String

    /// The commit version of the save (the token's).
    ///
    /// ```swift
    /// transaction.commitVersion == saved.commitVersion   // the saver's did-save
    /// ```
    public var commitVersion: UInt64 { token.version }

    /// The IDs of the objects the save inserted.
    ///
    /// ```swift
    /// transaction.insertedObjectIDs.count
    /// ```
    public var insertedObjectIDs: [ObjectID] { changes.filter { $0.kind == .insert }.map(\.objectID) }
    /// The IDs of the objects the save updated.
    ///
    /// ```swift
    /// transaction.updatedObjectIDs.count
    /// ```
    public var updatedObjectIDs: [ObjectID] { changes.filter { $0.kind == .update }.map(\.objectID) }
    /// The IDs of the objects the save deleted.
    ///
    /// ```swift
    /// transaction.deletedObjectIDs.count
    /// ```
    public var deletedObjectIDs: [ObjectID] { changes.filter { $0.kind == .delete }.map(\.objectID) }

    /// The transaction as a did-save, for ``ObjectContext/mergeChanges(fromContextDidSave:)-(ContextDidSaveNotification)``:
    /// a context merges another process's save exactly as it merges a local one. Core Data's
    /// `objectIDNotification()`.
    ///
    /// ```swift
    /// try view.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
    /// ```
    public func objectIDNotification() -> ContextDidSaveNotification {
        ContextDidSaveNotification(
            contextName: contextName, insertedObjectIDs: insertedObjectIDs, updatedObjectIDs: updatedObjectIDs,
            deletedObjectIDs: deletedObjectIDs, commitVersion: commitVersion)
    }
}

/// One object's part in a ``HistoryTransaction``: Core Data's `NSPersistentHistoryChange`.
///
/// ```swift
/// if change.kind == .update, change.updatedProperties.contains("age") { reloadAge(change.objectID) }
/// ```
public struct HistoryChange: Sendable, Hashable {
    /// What happened to the object.
    ///
    /// ```swift
    /// change.kind == .delete
    /// ```
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The save inserted it (or re-inserted it under its ID).
        case insert
        /// The save wrote over its stored record.
        case update
        /// The save deleted it.
        case delete
    }

    /// The object.
    ///
    /// ```swift
    /// change.objectID.uriString   // "cairn://Person/p7"
    /// ```
    public let objectID: ObjectID
    /// What happened to it.
    ///
    /// ```swift
    /// change.kind   // .update
    /// ```
    public let kind: Kind
    /// For an update, the names of the properties whose stored values changed, sorted (empty
    /// when the save wrote the values the record held); empty for inserts and deletes.
    ///
    /// ```swift
    /// change.updatedProperties   // ["age", "city"]
    /// ```
    public let updatedProperties: [String]

    /// A change, for tests and replays (saves record their own).
    ///
    /// ```swift
    /// let change = HistoryChange(objectID: id, kind: .update, updatedProperties: ["age"])
    /// ```
    public init(objectID: ObjectID, kind: Kind, updatedProperties: [String] = []) {
        self.objectID = objectID
        self.kind = kind
        self.updatedProperties = updatedProperties
    }
}
