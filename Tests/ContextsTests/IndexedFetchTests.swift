import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// What the planner reads (counted at the storage seam), what `explain` says, and the typed
/// errors for requests that name what the entity lacks.
@Suite struct IndexedFetchTests {
    /// Forwards to a store's storage, counting what reads visit per table.
    final class CountingStorage: ObjectStorage, @unchecked Sendable {
        let base: any ObjectStorage
        let visited = Counter()
        init(_ base: any ObjectStorage) { self.base = base }
        func readView() throws(StorageError) -> any StorageReadView { CountingView(try base.readView(), visited) }
        func commit(_ batch: consuming StorageBatch, durability: SaveDurability) throws(StorageError) -> StorageCommitOutcome {
            try base.commit(batch, durability: durability)
        }
        func commit(
            _ batch: consuming StorageBatch, durability: SaveDurability, keyedByVersion record: [UInt8], in table: String
        ) throws(StorageError) -> StorageCommitOutcome {
            try base.commit(batch, durability: durability, keyedByVersion: record, in: table)
        }
        var commitSignalDirectory: String? { base.commitSignalDirectory }
        func allocatePrimaryKeys(count: Int, for entityName: String) throws(StorageError) -> [UInt64] {
            try base.allocatePrimaryKeys(count: count, for: entityName)
        }
        func commitVersion() throws(StorageError) -> UInt64 { try base.commitVersion() }
        func addCommitObserver(_ observer: @escaping @Sendable (StorageCommitNotice) -> Void) { base.addCommitObserver(observer) }
        var location: String { base.location }
        func close() { base.close() }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var counts: [String: Int] = [:]
        /// Walks (`forEach` calls) per table, apart from the entries they visit.
        private var walks: [String: Int] = [:]
        func add(_ table: String, _ count: Int = 1) { lock.withLock { counts[table, default: 0] += count } }
        func take() -> [String: Int] { lock.withLock { defer { counts = [:] }; return counts } }
        func addWalk(_ table: String) { lock.withLock { walks[table, default: 0] += 1 } }
        func takeWalks() -> [String: Int] { lock.withLock { defer { walks = [:] }; return walks } }
    }

    final class CountingView: StorageReadView, @unchecked Sendable {
        let base: any StorageReadView
        let visited: Counter
        init(_ base: any StorageReadView, _ visited: Counter) { self.base = base; self.visited = visited }
        var version: UInt64 { base.version }
        func visitValues(forKeys keys: [StorageKey], _ body: (Int, UnsafeRawBufferPointer?, UInt64) throws -> Void) throws {
            for key in keys { visited.add(key.table) }
            try base.visitValues(forKeys: keys, body)
        }
        func forEach(in table: String, from lower: [UInt8]?, to upper: [UInt8]?, reverse: Bool,
                     _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt64) throws -> Bool) throws {
            visited.addWalk(table)
            try base.forEach(in: table, from: lower, to: upper, reverse: reverse) { key, value, version in
                visited.add(table)
                return try body(key, value, version)
            }
        }
        func estimatedCount(in table: String) throws(StorageError) -> Int { try base.estimatedCount(in: table) }
        func close() { base.close() }
    }

    /// 1,000 items, ages 0…99 (ten of each), names unique; returns the counting object store.
    static func seeded(_ store: IndexedStore) throws -> (ObjectStore, Counter) {
        let loader = store.objects.newBackgroundContext(name: "loader")
        try loader.performAndWait {
            for number in 0..<1000 {
                let item = loader.insert(entity: "Item")
                item["name"] = .string("n\(number)")
                item["age"] = .int(Int64(number % 100))
                item["city"] = .string(["Oslo", "Rome"][number % 2])
            }
            try loader.save()
        }
        let counting = CountingStorage(store.objects.storage)
        return (try ObjectStore(storage: counting, schema: store.objects.schema), counting.visited)
    }

    @Test func anEqualityFetchReadsOnlyItsEntryAndRecord() throws {
        let store = try IndexedStore()
        defer { store.close() }
        let (objects, visited) = try Self.seeded(store)
        let context = objects.newBackgroundContext()
        try context.performAndWait {
            _ = visited.take()
            let found = try context.fetch(FetchRequest(entityName: "Item", predicate: .compare("name", .equal, .string("n417"))))
            #expect(found.map { $0["age", as: Int.self] } == [17])
            #expect(visited.take() == ["index:Item:name": 1, "entity:Item": 1])

            let range = FetchRequest(entityName: "Item", predicate: .and([
                .compare("age", .greaterThanOrEqual, .int(10)), .compare("age", .lessThan, .int(13))]))
            #expect(try context.fetch(range).count == 30)
            #expect(visited.take() == ["index:Item:age": 30, "entity:Item": 30])
            // A context holding the 30 reads their records (they answer by their own values,
            // and only if their record exists); a fresh one reads no record at all.
            #expect(try context.count(for: range) == 30)
            #expect(visited.take() == ["index:Item:age": 30, "entity:Item": 30])
            let fresh = objects.newBackgroundContext()
            #expect(try fresh.performAndWait { try fresh.count(for: range) } == 30)
            #expect(visited.take() == ["index:Item:age": 30], "count(for:) reads no record")
            context.reset()

            let compound = FetchRequest(entityName: "Item", predicate: .and([
                .compare("city", .equal, .string("Rome")), .compare("age", .lessThanOrEqual, .int(3))]))
            #expect(try context.count(for: compound) == 20)
            #expect(visited.take() == ["index:Item:city,age": 20])
            context.reset()

            // A sorted page reads about the page (plus the ties of its last value), not the table.
            let page = FetchRequest(entityName: "Item", sortDescriptors: [.descending("age")], fetchLimit: 5, fetchOffset: 10)
            #expect(try context.fetch(page).map { $0["age", as: Int.self] } == [98, 98, 98, 98, 98])
            let read = visited.take()
            #expect((read["index:Item:age"] ?? 0) <= 45 && (read["entity:Item"] ?? 0) <= (read["index:Item:age"] ?? 0), "\(read)")
            let scan = FetchRequest(entityName: "Item", predicate: .compare("note", .equal, .null))
            #expect(try context.count(for: scan) == 1000)
            #expect(visited.take() == ["entity:Item": 1000])
        }
        objects.close()
    }

    /// `indexedCandidates` looks at the entry after a sorted page's chunk instead of walking
    /// again to find that it sorts later: a page of unique names is one walk of limit + 1
    /// entries and limit records, with the scan's result; a page ending inside a run of equal
    /// values still reads the run to its end.
    @Test func aSortedPageLooksAtTheNextEntryInsteadOfWalkingAgain() throws {
        let store = try IndexedStore()
        defer { store.close() }
        let (objects, visited) = try Self.seeded(store)
        let context = objects.newBackgroundContext()
        try context.performAndWait {
            for (descriptor, table, limit) in [(FetchRequest.SortDescriptor.ascending("name"), "index:Item:name", 20),
                                               (.descending("age"), "index:Item:age", 15)] {
                let page = FetchRequest(entityName: "Item", sortDescriptors: [descriptor], fetchLimit: limit)
                _ = (visited.take(), visited.takeWalks())
                let viaIndex = try context.fetch(page).map(\.objectID)
                let read = visited.take(), walks = visited.takeWalks()
                context.reset()
                var scan = page
                scan.usesIndexes = false
                #expect(try context.fetch(scan).map(\.objectID) == viaIndex)
                context.reset()
                if table == "index:Item:name" {
                    #expect(read == [table: 21, "entity:Item": 20] && walks == [table: 1], "\(read) \(walks)")
                } else {
                    // Ten items an age: the page's last age, 98, runs past the chunk of 15 (the
                    // entry looked at is a 98 too), so a second walk reads its other five and
                    // stops at the first 97.
                    #expect(walks == [table: 2] && read == [table: 22, "entity:Item": 20], "\(read) \(walks)")
                }
            }
        }
        objects.close()
    }

    /// A walk in sort order skips the sort only when its entries' bytes prove the order
    /// (`EntryOrder`); each page here comes out in another order than the scan's if the proof
    /// ignores values cut at the index's cap, the direction of a walk meeting ties, a second
    /// sort descriptor, or the later values of a compound key.
    @Test func aSortedWalkSkipsTheSortOnlyWhenItsBytesProveTheOrder() throws {
        let store = try IndexedStore()
        defer { store.close() }
        let long = String(repeating: "x", count: 300)  // past the one-string index's cap of 251
        // Keys ascend in this order. (No age is 2: an int ending in bytes 00 02 reads as cut.)
        let items: [(name: String, age: Int64, city: String)] = [
            (long + "b", 1, "Oslo"), (long + "a", 4, "Oslo"),    // equal once cut, keys in the wrong order
            ("tie", 1, "Rome"), ("tie", 5, "Rome"), ("tie", 3, "Rome"),
            ("a", 9, "Oslo"), ("z", 0, "Lima"), ("m", 7, "Rome"),
        ]
        let loader = store.objects.newBackgroundContext()
        try loader.performAndWait {
            for item in items {
                let object = loader.insert(entity: "Item")
                object["name"] = .string(item.name)
                object["age"] = .int(item.age)
                object["city"] = .string(item.city)
            }
            try loader.save()
        }
        let onlyLong: FetchPredicate = .compare("name", .greaterThan, .string("x"))
        let onlyTies: FetchPredicate = .and([.compare("name", .greaterThanOrEqual, .string("tie")),
                                             .compare("name", .lessThanOrEqual, .string("tie"))])
        let cases: [(FetchPredicate?, [FetchRequest.SortDescriptor], String)] = [
            (onlyLong, [.ascending("name")], "cut values"),
            (onlyTies, [.descending("name")], "ties walked descending"),
            (onlyTies, [.ascending("name"), .descending("age")], "ties under a second descriptor"),
            (nil, [.ascending("city")], "ties in a compound key's first value"),
            (nil, [.ascending("name")], "every name"),
            (nil, [.descending("age")], "every age, descending"),
        ]
        let context = store.objects.newBackgroundContext()
        try context.performAndWait {
            for (predicate, sort, what) in cases {
                let request = FetchRequest(entityName: "Item", predicate: predicate, sortDescriptors: sort, fetchLimit: 50)
                #expect(try context.explain(request).readsInSortOrder, "\(what)")
                let viaIndex = try context.fetch(request).map(\.objectID)
                context.reset()
                var scan = request
                scan.usesIndexes = false
                let scanned = try context.fetch(scan).map(\.objectID)
                context.reset()
                #expect(viaIndex == scanned, "\(what)")
                #expect(scanned.count >= 2)
            }
        }
    }

    @Test func explainSaysWhichIndexAndRangeOrWhyAScan() throws {
        let store = try IndexedStore()
        defer { store.close() }
        let context = store.objects.newBackgroundContext()
        try context.performAndWait {
            let byName = try context.explain(FetchRequest(entityName: "Item", predicate: .compare("name", .equal, .string("Ann"))))
            #expect(byName.access == .index(attributes: ["name"]))
            #expect(byName.conditions == ["name == \"Ann\""] && byName.countsIndexEntries && !byName.readsInSortOrder)
            #expect("\(byName)" == "index (name): name == \"Ann\"; count(for:) counts entries")

            let range = try context.explain(FetchRequest(entityName: "Item", predicate: .and([
                .compare("city", .equal, .string("Oslo")), .compare("age", .greaterThan, .int(30)),
                .compare("note", .equal, .null)])))
            #expect(range.access == .index(attributes: ["city", "age"]))
            #expect(range.conditions == ["city == \"Oslo\"", "30 < age"] && !range.countsIndexEntries)

            let page = try context.explain(FetchRequest(entityName: "Item", sortDescriptors: [.ascending("score")], fetchLimit: 20))
            #expect(page.access == .index(attributes: ["score"]) && page.readsInSortOrder)

            let orScan = try context.explain(FetchRequest(entityName: "Item", predicate: .or([
                .compare("name", .equal, .string("a")), .compare("name", .equal, .string("b"))])))
            #expect(orScan.access == .scan && orScan.reason?.contains("no index of Item") == true)
            #expect(try context.explain(FetchRequest(entityName: "Plain")).reason == "Plain has no index")

            let child = context.newChildContext(name: "child")
            try child.performAndWait {
                let plan = try child.explain(FetchRequest(entityName: "Item", predicate: .compare("name", .equal, .string("Ann"))))
                #expect(plan.access == .scan && plan.reason == "a child context reads its parent's view, which has no index")
            }
        }
    }

    @Test func unknownAttributesAndWrongTypesAreTypedErrors() throws {
        let store = try IndexedStore()
        defer { store.close() }
        let context = store.objects.newBackgroundContext()
        try context.performAndWait {
            let cases: [(FetchRequest, String)] = [
                (FetchRequest(entityName: "Item", predicate: .compare("nmae", .equal, .string("Ann"))), "nmae"),
                (FetchRequest(entityName: "Item", predicate: .and([.not(.isIn("agee", [.int(1)]))])), "agee"),
                (FetchRequest(entityName: "Item", sortDescriptors: [.ascending("sorce")]), "sorce"),
            ]
            for (request, attribute) in cases {
                for run in [{ _ = try context.fetch(request) }, { _ = try context.count(for: request) }, { _ = try context.explain(request) }] {
                    #expect(throws: ContextError.self) { try run() }
                    do { try run() } catch ContextError.unknownAttribute(let entity, let named) {
                        #expect(entity == "Item" && named == attribute)
                    } catch { Issue.record("\(error)") }
                }
            }
            let wrongType = FetchRequest(entityName: "Item", predicate: .compare("age", .greaterThan, .string("1")))
            do {
                _ = try context.fetch(wrongType)
                Issue.record("a string compared with an int attribute fetched")
            } catch ContextError.predicateTypeMismatch(let entity, let attribute, let expected, let found) {
                #expect(entity == "Item" && attribute == "age" && expected == .int && found == .string("1"))
            }
            // Numbers mix, and null goes with every type.
            _ = try context.fetch(FetchRequest(entityName: "Item", predicate: .compare("age", .lessThan, .double(2.5))))
            _ = try context.fetch(FetchRequest(entityName: "Item", predicate: .isIn("blob", [.null, .bytes([1])])))
        }
    }
}
