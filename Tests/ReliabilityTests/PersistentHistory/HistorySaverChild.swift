import Contexts
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The model of the persistent-history process tests: items, and one tally that every save
/// raises by one while it inserts one item.
enum HistoryProcessModel {
    static let schema: Schema = {
        do {
            return try Schema([
                EntityDescription("Item", attributes: [AttributeDescription("number", .int)]),
                EntityDescription("Tally", attributes: [AttributeDescription("saves", .int)]),
            ])
        } catch {
            fatalError("history process schema: \(error)")
        }
    }()

    static func options(durability: SaveDurability = .full) -> ObjectStore.Options {
        var options = ObjectStore.Options()
        options.tracksHistory = true
        options.saveDurability = durability
        return options
    }

    /// Inserts the tally (primary key 1) with 0 saves.
    static func seed(_ objects: ObjectStore) throws {
        let context = objects.newBackgroundContext(name: "seed")
        try context.performAndWait {
            context.insert(entity: "Tally", primaryKey: 1)["saves"] = .int(0)
            try context.save()
        }
    }

    static let tallyID = ObjectID(entityName: "Tally", primaryKey: 1)
}

/// A child that saves `COUNT` times (forever when absent) into a tracked store: each save
/// inserts an item and raises the tally, and is acknowledged as `saved VERSION ITEM_URI` once
/// `save()` returned.
enum HistorySaverChild {
    static let role = "history-saver"

    static func main() -> Int32 {
        let acknowledgements = LineWriter(path: ChildProcess.argument("ACKS"))
        let count = getenv("CAIRN_CHILD_COUNT").map { Int(String(cString: $0)) ?? 0 }
        do {
            let objects = try ObjectStore(directory: ChildProcess.argument("STORE"), schema: HistoryProcessModel.schema,
                                          options: HistoryProcessModel.options())
            defer { objects.close() }
            let context = objects.newBackgroundContext(name: "child-saver")
            context.transactionAuthor = "child"
            acknowledgements.line("open")
            var number: Int64 = 0
            while count.map({ number < $0 }) ?? true {
                number += 1
                let (version, id) = try context.performAndWait {
                    let item = context.insert(entity: "Item")
                    item["number"] = .int(number)
                    let tally = try context.existingObject(with: HistoryProcessModel.tallyID)
                    tally["saves"] = .int((tally["saves", as: Int64.self] ?? 0) + 1)
                    try context.save()
                    return (context.lastDidSaveNotification!.commitVersion!, item.objectID)
                }
                acknowledgements.line("saved \(version) \(id.uriString)")
            }
        } catch {
            acknowledgements.line("error \(error)")
            return 1
        }
        return 0
    }
}
