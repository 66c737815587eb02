import Foundation

extension Notification.Name {
    /// Posted by an object store that observes remote changes
    /// (``ObjectStore/Options-swift.struct/observesRemoteChanges``), once per history
    /// transaction another writer committed, in commit order, on the store's watcher thread;
    /// the `object` is the ``ObjectStore``. Read it with ``HistoryTransaction/init(_:)``. Core
    /// Data's `NSPersistentStoreRemoteChange`.
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: .cairnStoreRemoteChange, object: objects, queue: nil) { note in
    ///     guard let transaction = HistoryTransaction(note) else { return }
    ///     view.perform { try? view.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
    /// }
    /// ```
    public static let cairnStoreRemoteChange = Notification.Name("CairnStoreRemoteChange")
}

/// The `userInfo` keys of ``Foundation/Notification/Name/cairnStoreRemoteChange``.
///
/// ```swift
/// let token = note.userInfo?[RemoteChangeKey.historyToken] as? HistoryToken
/// ```
public enum RemoteChangeKey {
    /// ``HistoryToken``: the transaction's token (Core Data's `NSPersistentHistoryTokenKey`).
    ///
    /// ```swift
    /// note.userInfo?[RemoteChangeKey.historyToken] as? HistoryToken
    /// ```
    public static let historyToken = "historyToken"
    /// ``HistoryTransaction``: the whole transaction.
    ///
    /// ```swift
    /// note.userInfo?[RemoteChangeKey.transaction] as? HistoryTransaction
    /// ```
    public static let transaction = "cairn.transaction"
}

extension HistoryTransaction {
    /// Reads the transaction of a remote-change notification; nil for any other notification.
    ///
    /// ```swift
    /// guard let transaction = HistoryTransaction(note) else { return }
    /// ```
    public init?(_ notification: Notification) {
        guard notification.name == .cairnStoreRemoteChange,
              let transaction = notification.userInfo?[RemoteChangeKey.transaction] as? HistoryTransaction
        else { return nil }
        self = transaction
    }
}
