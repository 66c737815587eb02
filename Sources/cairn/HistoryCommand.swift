import Contexts
import Foundation
import KVEngine

// `cairn history`: the persistent history of an object store that tracks it (Contexts'
// `meta:history` table, HistoryRecord.swift), read straight from a snapshot, so it needs no
// schema. One transaction per save, oldest first.

enum HistoryCommand {
    static let command = Command(
        name: "history",
        summary: "Print the persistent history of an object store: one transaction per tracked save.",
        arguments: ["STORE"],
        options: [
            .value("after", "TOKEN", "Only transactions after TOKEN (a commit version, as printed)."),
            .flag("json", "Print one JSON object per transaction instead of text."),
        ],
        discussion: """
            Each transaction prints as a line of its token (the commit version), time (UTC,
            ISO 8601), context name, author (empty when none) and process ID, tab-separated,
            then one line per object, indented by a tab: insert, update (with the changed
            properties, comma-separated) or delete, and the object ID. Names print with the
            tool's escapes. With --json, one object per line: "token", "time", "context",
            "author" (or null), "pid", "inserted", "updated" ([{"id", "properties"}]),
            "deleted". A store that never tracked history prints nothing.
            """
    ) { arguments in
        let path = arguments.positionals[0]
        var after = HistoryToken.start
        if let text = arguments.value("after") {
            guard let token = HistoryToken(text) else {
                throw CommandError.usage("--after: \"\(text)\" is not a history token (a commit version: digits only)")
            }
            after = token
        }
        let json = arguments.flag("json")
        let store = try StoreAccess.openForReading(path)
        defer { store.close() }
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        guard after.version < UInt64.max else { return .success }
        var output = OutputBuffer(.output)
        defer { output.flush() }
        try snapshot.forEach(in: HistoryRecord.table, from: HistoryRecord.key(for: after.version + 1)) { key, value, _ in
            let transaction: HistoryTransaction
            do throws(StorageError) {
                transaction = try HistoryRecord.decode(key: key, bytes: value)
            } catch {
                throw CommandError.failed("\(StoreAccess.shown(path)): \(error.message)")
            }
            output.append(json ? jsonLine(transaction) : text(transaction))
            return true
        }
        return .success
    }

    static func text(_ transaction: HistoryTransaction) -> String {
        var text = [transaction.token.description, ObjectCommands.dateText(transaction.timestamp),
                    escaped(transaction.contextName), transaction.author.map(escaped) ?? "", "\(transaction.processID)"]
            .joined(separator: "\t") + "\n"
        for change in transaction.changes {
            text += "\t\(change.kind.rawValue)\t\(change.objectID.uriString)"
            if change.kind == .update { text += "\t" + change.updatedProperties.map(escaped).joined(separator: ",") }
            text += "\n"
        }
        return text
    }

    static func jsonLine(_ transaction: HistoryTransaction) -> String {
        let quote = ObjectCommands.jsonString
        func list(_ ids: [ObjectID]) -> String { "[" + ids.map { quote($0.uriString) }.joined(separator: ",") + "]" }
        let updated = transaction.changes.filter { $0.kind == .update }.map { change in
            "{\"id\":" + quote(change.objectID.uriString) + ",\"properties\":["
                + change.updatedProperties.map(quote).joined(separator: ",") + "]}"
        }
        return "{\"token\":" + quote(transaction.token.description)
            + ",\"time\":" + quote(ObjectCommands.dateText(transaction.timestamp))
            + ",\"context\":" + quote(transaction.contextName)
            + ",\"author\":" + (transaction.author.map(quote) ?? "null")
            + ",\"pid\":\(transaction.processID)"
            + ",\"inserted\":" + list(transaction.insertedObjectIDs)
            + ",\"updated\":[" + updated.joined(separator: ",") + "]"
            + ",\"deleted\":" + list(transaction.deletedObjectIDs) + "}\n"
    }

    private static func escaped(_ name: String) -> String { KeyText.encode(Array(name.utf8)) }
}
