import CairnTestSupport
import Contexts
import Foundation
import KVEngine
import KeyValueQueue
import Policies
import Testing

// The classic Core Data and FMDB patterns, written in the typed API. This file must not name a
// single attribute value (`noAttributeValueWrappers` reads it to check).

@Suite("Classic patterns, typed")
struct ClassicPatternsTests {
    @Test("FMDB-style StoreQueue: transactions, savepoints, the async twin")
    func storeQueue() async throws {
        let queue = try TypedQueue()
        defer { queue.close() }
        try queue.run()
        let visits = try await queue.queue.inDatabase { db in try db.string(forKey: "visits", in: "counters") }
        #expect(visits == "3")
    }
}

/// A StoreQueue on a raw store of its own, driven from synchronous code (where `inTransaction`
/// is the synchronous one).
final class TypedQueue: Sendable {
    let directory: TemporaryDirectory
    let store: Store
    let queue: StoreQueue

    init() throws {
        directory = try TemporaryDirectory(prefix: "cairn-typed-queue")
        store = try Store(directory: directory.path)
        queue = StoreQueue(store: store, label: "counters")
    }

    func close() {
        store.close()
        directory.remove()
    }

    func run() throws {
        for _ in 0..<3 {
            try queue.inTransaction { db, rollback in
                let visits = Int(try db.string(forKey: "visits", in: "counters") ?? "0")!
                try db.put(String(visits + 1), forKey: "visits", in: "counters")
                try db.inSavePoint { db, rollback in
                    try db.put("line \(visits + 1)", forKey: "log/\(visits + 1)", in: "counters")
                    rollback = visits == 1  // the second transaction drops its log line, keeps its count
                }
            }
        }
        try queue.inTransaction { db, rollback in
            try db.put("never", forKey: "visits", in: "counters")
            rollback = true
        }
        let lines = try queue.inDatabase { db in try db.scan(in: "counters", prefix: Array("log/".utf8)).count }
        #expect(lines == 2)
    }
}

// The main-actor tests' time limits are hang guards: under `make tsan`, beside the synchronous
// suites and another build, they waited minutes for the main actor and the cooperative pool
// (339 s once; 24 s alone), so the guard is 10 minutes.
extension ClassicPatternsTests {
    @Test("a private context imports, the main context shows it, object IDs cross", .timeLimit(.minutes(10)))
    func mainAndPrivateContexts() async throws {
        try await withTypedStore { store in
            let background = store.objects.newBackgroundContext(name: "import")
            let annID = try await background.perform {
                let ann = try background.insert(Person(name: "Ann", age: 30, city: "Oslo"))
                #expect(ann.objectID.isTemporaryID)
                try background.save()
                return ann.objectID  // IDs cross threads, objects do not
            }
            #expect(!annID.isTemporaryID)
            #expect(ObjectID(uriString: annID.uriString) == annID)
            let view = await store.objects.viewContext
            let (name, oslo) = try await view.perform { () throws -> (String, Int) in
                let ann = try view.existingObject(Person.self, with: annID)
                return (try ann.name, try view.fetchCount(FetchDescriptor<Person>(predicate: #Predicate { $0.city == "Oslo" })))
            }
            #expect(name == "Ann" && oslo == 1)
            // On the main actor the view context is used directly.
            let age = try await MainActor.run { try store.objects.viewContext.existingObject(Person.self, with: annID).age }
            #expect(age == 30)
        }
    }

    @Test("did-save merging: the main context takes a background save, its own unsaved edits on top", .timeLimit(.minutes(10)))
    func didSaveMerging() async throws {
        try await withTypedStore { store in
            let view = await store.objects.viewContext
            let background = store.objects.newBackgroundContext(name: "background")
            let annID = try await background.perform {
                let ann = try background.insert(Person(name: "Ann", age: 30, city: "Oslo"))
                try background.save()
                return ann.objectID
            }
            try await view.perform { try view.existingObject(Person.self, with: annID).set(\.city, to: "Rome") }
            let observer = NotificationCenter.default.addObserver(forName: .cairnObjectContextDidSave, object: background, queue: nil) { note in
                guard let saved = ContextDidSaveNotification(note) else { return }
                view.perform { try? view.mergeChanges(fromContextDidSave: saved) }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            try await background.perform {
                try background.existingObject(Person.self, with: annID).update { $0.age = 31 }
                try background.save()
            }
            let merged = try await view.perform { () throws -> Person in
                let ann = try view.existingObject(Person.self, with: annID)
                try view.save()  // no conflict: the merge moved the ancestor
                return try ann.value
            }
            #expect(merged.age == 31)
            #expect(merged.city == "Rome")
        }
    }

    @Test("the five merge policies, by Core Data's names")
    func fivePolicies() throws {
        let outcomes: [(String, any MergePolicy, Person?)] = [
            ("error", .error, nil),
            ("storeTrump", .mergeByPropertyStoreTrump, Person(name: "Ann", age: 40, city: "Rome")),
            ("objectTrump", .mergeByPropertyObjectTrump, Person(name: "Ann", age: 31, city: "Rome")),
            ("overwrite", .overwrite, Person(name: "Ann", age: 31, city: "Oslo")),
            ("rollback", .rollback, Person(name: "Ann", age: 40, city: "Rome")),
        ]
        for (name, policy, expected) in outcomes {
            try withTypedStore { store in
                let ours = store.objects.newBackgroundContext(name: "ours", mergePolicy: policy)
                let theirs = store.objects.newBackgroundContext(name: "theirs")
                let id = try ours.performAndWait { () throws -> ObjectID in
                    let ann = try ours.insert(Person(name: "Ann", age: 30, city: "Oslo"))
                    try ours.save()
                    try ann.set(\.age, to: 31)  // ours: age
                    return ann.objectID
                }
                try theirs.performAndWait {
                    try theirs.existingObject(Person.self, with: id).update { $0.age = 40; $0.city = "Rome" }
                    try theirs.save()
                }
                let saved = try ours.performAndWait { () -> Bool in
                    do {
                        try ours.save()
                        return true
                    } catch is MergeError {
                        return false
                    }
                }
                let reader = store.objects.newBackgroundContext(name: "reader")
                let stored = try reader.performAndWait { try reader.existingObject(Person.self, with: id).value }
                if let expected {
                    #expect(saved, "\(name)")
                    #expect(stored == expected, "\(name)")
                } else {
                    #expect(!saved, "\(name)")
                    #expect(stored == Person(name: "Ann", age: 40, city: "Rome"), "\(name)")
                }
            }
        }
    }

    @Test("parent and child: a child edits and inserts, saves into its parent, the parent saves to the store", .timeLimit(.minutes(10)))
    func parentAndChild() async throws {
        try await withTypedStore { store in
            let view = await store.objects.viewContext
            let annID = try await view.perform {
                let ann = try view.insert(Person(name: "Ann", age: 30, city: nil))
                try view.save()
                return ann.objectID
            }
            let editor = view.newChildContext(name: "editor")
            let bobID = try await editor.perform {
                try editor.existingObject(Person.self, with: annID).update { $0.age = 31 }
                let bob = try editor.insert(Person(name: "Bob", age: 40, city: nil))
                try editor.save()  // into the view context: nothing written yet
                return bob.objectID
            }
            #expect(bobID.isTemporaryID)
            let reader = store.objects.newBackgroundContext(name: "reader")
            #expect(try reader.performAndWait { try reader.fetchCount(FetchDescriptor<Person>()) } == 1)
            let inView = try await view.perform { () throws -> [String] in
                let names = try view.fetchValues(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name)])).map(\.name)
                try view.save()
                return names
            }
            #expect(inView == ["Ann", "Bob"])
            let stored = try reader.performAndWait { try reader.fetchValues(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name)])) }
            #expect(stored.map(\.name) == ["Ann", "Bob"])
            #expect(stored.map(\.age) == [31, 40])
        }
    }

    @Test("an Operation imports on a private context made in main()")
    func operationImport() throws {
        try withTypedStore { store in
            let seeder = store.objects.newBackgroundContext(name: "seeder")
            let ownerID = try seeder.performAndWait { () throws -> ObjectID in
                let owner = try seeder.insert(Person(name: "Owner", age: 50, city: nil))
                try seeder.save()
                return owner.objectID
            }
            let rows = (1...25).map { "item \($0)" }
            let operation = ImportOperation(objects: store.objects, titles: rows, ownerID: ownerID)
            let queue = OperationQueue()
            queue.addOperation(operation)
            queue.waitUntilAllOperationsAreFinished()
            #expect(operation.failure == nil)
            let reader = store.objects.newBackgroundContext(name: "reader")
            let items = try reader.performAndWait {
                try reader.fetchValues(FetchDescriptor<Item>(predicate: #Predicate { $0.quantity > 20 }, sortBy: [SortDescriptor(\.quantity)]))
            }
            #expect(items.map(\.quantity) == [21, 22, 23, 24, 25])
            #expect(items.allSatisfy { $0.ownerURI == ownerID.uriString })
        }
    }

    @Test("query generations: a pinned context keeps reading its generation while others save")
    func queryGenerations() throws {
        try withTypedStore { store in
            let writer = store.objects.newBackgroundContext(name: "writer")
            try writer.performAndWait {
                for age in [10, 20, 30] { try writer.insert(Person(name: "p\(age)", age: age, city: nil)) }
                try writer.save()
            }
            let report = store.objects.newBackgroundContext(name: "report")
            let adults = FetchDescriptor<Person>(predicate: #Predicate { $0.age >= 18 })
            let before = try report.performAndWait { () throws -> Int in
                try report.setQueryGenerationFrom(.current)
                return try report.fetchCount(adults)
            }
            try writer.performAndWait {
                try writer.insert(Person(name: "p40", age: 40, city: nil))
                try writer.save()
            }
            let (pinned, pinnedNames) = try report.performAndWait { () throws -> (Int, [String]) in
                (try report.fetchCount(adults), try report.fetchValues(adults).map(\.name))
            }
            let after = try report.performAndWait { () throws -> Int in
                try report.setQueryGenerationFrom(nil)
                return try report.fetchCount(adults)
            }
            #expect(before == 2 && pinned == 2 && pinnedNames.sorted() == ["p20", "p30"])
            #expect(after == 3)
        }
    }

    @Test("this file names no attribute value: the typed API needs no wrappers")
    func noWrappers() throws {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        // An attribute-value case is an implicit member (`.int(`, `.null`), after a space, a
        // parenthesis, a bracket, a comma or a colon; the type is a whole word.
        let cases = "((string|int|double|bool|date|bytes)\\(|null\\b)"
        let patterns = ["\\bAttribute" + "Value\\b", "[ (\\[,:]\\." + cases, "\\bFetch" + "Request\\("]
        for pattern in patterns {
            let expression = try NSRegularExpression(pattern: pattern)
            let found = expression.matches(in: source, range: NSRange(source.startIndex..., in: source))
            #expect(found.isEmpty, "\(pattern): \(found.map { (source as NSString).substring(with: $0.range) })")
        }
    }
}

/// An import in an `Operation`: the context is made in `main()`, where it is used, and only the
/// owner's ID comes in (Rule C12).
///
/// `@unchecked Sendable`: the lets are immutable; `failure` is written in main() and read only
/// after the operation finished (the queue orders the two).
final class ImportOperation: Operation, @unchecked Sendable {
    private let objects: ObjectStore
    private let titles: [String]
    private let ownerID: ObjectID
    private(set) var failure: (any Error)?

    init(objects: ObjectStore, titles: [String], ownerID: ObjectID) {
        self.objects = objects
        self.titles = titles
        self.ownerID = ownerID
        super.init()
    }

    override func main() {
        let context = objects.newBackgroundContext(name: "import-operation")
        context.performAndWait {
            do {
                let owner = try context.existingObject(Person.self, with: ownerID)
                for (index, title) in titles.enumerated() {
                    try context.insert(Item(title: title, ownerURI: owner.objectID.uriString, quantity: index + 1))
                }
                try context.save()
            } catch {
                failure = error
            }
        }
    }
}
