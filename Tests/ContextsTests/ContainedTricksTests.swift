import CairnTestSupport
import Contexts
import Foundation
import Testing

/// The object layer's measured tricks each rely on an invariant, stated in one comment where
/// the trick lives; these pin the ones other suites do not (those comments name the tests).
@Suite struct ContainedTricksTests {

    /// `ObjectContext.registeredObjects(flagged:)`: the change lists, made in one pass and remade
    /// at their size when small, are exactly the registered objects each object's own flag
    /// names, for every share of the objects flagged (none, a few, most, all).
    @Test func changeListsAreTheObjectsTheirFlagsName() throws {
        let seed = SeededRandom.seed()
        print("changeListsAreTheObjectsTheirFlagsName seed \(seed) (replay: CAIRN_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        try withTestStore { store in
            _ = try seedPeople(store, 200)
            for share in [0, 1, 3, 20, 24, 26, 60, 100] {
                let context = store.context("lists")
                try context.performAndWait {
                    let people = try context.fetch(FetchRequest(entityName: "Person"))
                    for person in people {
                        switch Int.random(in: 0..<100, using: &random) {
                        case ..<share: context.delete(person)
                        case ..<(share + (100 - share) / 2): person["age"] = .int(-1)
                        default: break
                        }
                    }
                    for _ in 0..<Int.random(in: 0...share, using: &random) { context.insert(entity: "Person") }
                    let registered = context.registeredObjects
                    #expect(context.deletedObjects == registered.filter(\.isDeleted), "share \(share)")
                    #expect(context.insertedObjects == registered.filter(\.isInserted), "share \(share)")
                    #expect(context.updatedObjects == registered.filter(\.isUpdated), "share \(share)")
                }
            }
        }
    }

    /// `ObjectContext.registry`: a fetch into an empty context leaves its objects unindexed, and
    /// each way of reading the registry, as the first one after such a fetch, finds them all.
    @Test func everyReadOfTheRegistryFindsEveryFetchedObject() throws {
        try withTestStore { store in
            let ids = try seedPeople(store, 300)
            /// Runs `body` in a fresh context right after a fetch of everyone into it.
            func afterFetch(_ body: (ObjectContext, [ObjectID: StoredObject]) throws -> Void) throws {
                let context = store.context("reader")
                try context.performAndWait {
                    let fetched = try context.fetch(FetchRequest(entityName: "Person"))
                    let byID = Dictionary(uniqueKeysWithValues: fetched.map { ($0.objectID, $0) })
                    #expect(Set(byID.keys) == Set(ids))
                    try body(context, byID)
                }
            }
            /// Whether `existingObject(with:)` finds every fetched object.
            func findsAll(_ context: ObjectContext, _ byID: [ObjectID: StoredObject]) throws -> Bool {
                for id in ids where try context.existingObject(with: id) !== byID[id] { return false }
                return true
            }

            try afterFetch { context, byID throws in  // by ID, loaded
                #expect(try findsAll(context, byID))
            }
            try afterFetch { context, byID in  // by ID, as a fault if unknown
                #expect(ids.allSatisfy { context.object(with: $0) === byID[$0] && !byID[$0]!.isFault })
            }
            try afterFetch { context, byID in  // the whole registry
                #expect(context.registeredObjects == Set(byID.values))
                byID[ids[7]]!["age"] = .int(-1)
                #expect(context.updatedObjects == [byID[ids[7]]!])
            }
            try afterFetch { context, byID in  // another fetch: the same objects, none twice
                let again = try context.fetch(FetchRequest(entityName: "Person"))
                #expect(again.count == ids.count && again.allSatisfy { byID[$0.objectID] === $0 })
                #expect(context.registeredObjects.count == ids.count)
            }
            try afterFetch { context, byID in  // a refresh
                let first = byID[ids[0]]!
                first["age"] = .int(-1)
                try context.refresh(first, mergeChanges: false)
                #expect(first["age"] == .int(0))
                #expect(try findsAll(context, byID))
            }
            try afterFetch { context, byID in  // an ID change (a permanent ID for an insert)
                let inserted = context.insert(entity: "Person")
                let temporary = inserted.objectID
                try context.obtainPermanentIDs(for: [inserted])
                #expect(!inserted.objectID.isTemporaryID)
                #expect(context.object(with: temporary) === inserted)
                #expect(try context.existingObject(with: inserted.objectID) === inserted)
                #expect(try findsAll(context, byID))
            }
            try afterFetch { context, byID in  // a merged deletion forgets the deleted object
                let other = store.context("deleter")
                let saved = try other.performAndWait {
                    other.delete(try other.existingObject(with: ids[3]))
                    try other.save()
                    return other.lastDidSaveNotification!
                }
                try context.mergeChanges(fromContextDidSave: saved)
                #expect(byID[ids[3]]!.context == nil)
                #expect(context.registeredObjects == Set(byID.values).subtracting([byID[ids[3]]!]))
            }
        }
    }

    /// `ObjectContext.forget`: objects a fetch left unindexed are forgotten (their deletion
    /// saved) without being indexed, and the registry still finds every other object, once.
    @Test func forgettingUnindexedObjectsLeavesTheRegistryWhole() throws {
        try withTestStore { store in
            let ids = try seedPeople(store, 300)
            let context = store.context("deleter")
            try context.performAndWait {
                let fetched = try context.fetch(FetchRequest(entityName: "Person"))
                let byID = Dictionary(uniqueKeysWithValues: fetched.map { ($0.objectID, $0) })
                let deleted = [byID[ids[1]]!, byID[ids[2]]!]
                for object in deleted { context.delete(object) }
                #expect(context.deletedObjects == Set(deleted))
                try context.save()
                #expect(deleted.allSatisfy { $0.context == nil })
                #expect(context.registeredObjects == Set(byID.values).subtracting(deleted))
                #expect(throws: ContextError.self) { _ = try context.existingObject(with: ids[1]) }
                #expect(try ids.dropFirst(3).allSatisfy { try context.existingObject(with: $0) === byID[$0] })
                #expect(try context.fetch(FetchRequest(entityName: "Person")).count == ids.count - 2)
                #expect(context.registeredObjects.count == ids.count - 2)
                // Indexed by the lookups above: forgotten through the index.
                context.delete(byID[ids[3]]!)
                try context.save()
                #expect(throws: ContextError.self) { _ = try context.existingObject(with: ids[3]) }
                #expect(context.registeredObjects.count == ids.count - 3)
            }
        }
    }

    /// `StoredObject`'s fields: an object is at most 120 bytes, so that glibc's allocator keeps
    /// it in its small chunks (fastbins), allocated and freed without consolidation. Measured
    /// as the allocation's usable size: 120 bytes for a 128-byte chunk.
    @Test func aStoredObjectFitsASmallChunk() throws {
        try withTestStore { store in
            let context = store.context("size")
            context.performAndWait {
                let object = context.insert(entity: "Person")
                let usable = withExtendedLifetime(object) { mallocUsableSize(Unmanaged.passUnretained(object).toOpaque()) }
                #expect(usable <= 120, "a StoredObject takes \(usable) bytes")
            }
        }
    }

    /// `ContextLink`: once the context is deallocated its objects find no context (no dangling
    /// reference); a property access then stops (`MisuseTests.objectAfterContextDeallocated`).
    @Test func anObjectWhoseContextIsGoneFindsNoContext() throws {
        try withTestStore { store in
            var context: ObjectContext? = store.context("Gone")
            let object = context!.performAndWait { context!.insert(entity: "Person") }
            weak let watcher = context
            context = nil
            try #require(watcher == nil, "the test needs the context deallocated here")
            #expect(object.context == nil)
            #expect(!object.isInserted && !object.hasChanges && !object.isFault)
            #expect(object.objectID.isTemporaryID)
        }
    }

    /// `@exclusivity(unchecked)` fields: not only the property subscript
    /// (`MisuseTests.objectOffQueue`) but an object's state, read off its context's queue, stops.
    @Test func anObjectsStateReadOffItsQueueStops() async throws {
        let scratch = try TemporaryDirectory(prefix: "cairn-contexts-exit")
        defer { scratch.remove() }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [parent = scratch.path as String] in
            try withTestStore(in: parent) { store in
                let context = store.context("Owner")
                let object = context.performAndWait { context.insert(entity: "Person") }
                _ = object.hasChanges   // off the queue
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ObjectContext 'Owner' used off its queue"))
    }

    /// `ObjectIDTable`: its keys hash as `ObjectID` does, so equal IDs (an ID and its copy
    /// rebuilt from its URI) meet and different ones (another entity, another key) stay apart.
    @Test func theContextsIDTableFindsEqualIDsAsASetDoes() {
        var ids: [ObjectID] = []
        for key in UInt64(0)..<2_000 {
            ids.append(ObjectID(entityName: "Person", primaryKey: key))
            ids.append(ObjectID(entityName: "Account", primaryKey: key))  // same key, other entity
        }
        for _ in 0..<500 { ids.append(.temporary(entityName: "Person")) }
        var table = ObjectIDTable<Int>()
        for (index, id) in ids.enumerated() { table[id] = index }
        #expect(table.count == ids.count && Set(ids).count == ids.count)
        var misses = 0
        for (index, id) in ids.enumerated() {
            let rebuilt = ObjectID(uriString: id.uriString)!
            let key = ObjectIDTable<Int>.Key(id: id), rebuiltKey = ObjectIDTable<Int>.Key(id: rebuilt)
            if table[rebuilt] != index || key != rebuiltKey || key.hashValue != rebuiltKey.hashValue
                || key._rawHashValue(seed: index) != rebuiltKey._rawHashValue(seed: index)
            { misses += 1 }
        }
        #expect(misses == 0)
        #expect(table[ObjectID(entityName: "Tag", primaryKey: 1)] == nil)
        #expect(table[ObjectID(entityName: "Account", primaryKey: 2_000)] == nil)
        table[ids[0]] = nil
        #expect(table.count == ids.count - 1 && table[ids[0]] == nil && table[ids[1]] == 1)
    }

    /// `StoredObject._rawHashValue(seed:)`: the same for the same object and seed, spread over a
    /// table's buckets as random numbers are (objects are 16-byte aligned: their addresses alone
    /// fill one bucket in 16), and different under another seed; a set finds each object.
    @Test func storedObjectHashesSpreadOverBuckets() throws {
        let person = try #require(testSchema.entity(named: "Person"))
        let objects = (0..<4_096).map { _ in StoredObject(entity: person) }
        let buckets = 8_192, mask = buckets - 1
        for seed in [0, 1, 0x5EED, -1] {
            var used = Set<Int>()
            for object in objects { used.insert(object._rawHashValue(seed: seed) & mask) }
            // Random hashes fill 8,192 × (1 − e^−0.5) ≈ 3,223 buckets (σ ≈ 30).
            #expect(used.count > 3_000, "seed \(seed): \(used.count) buckets")
        }
        let moved = objects.filter { $0._rawHashValue(seed: 1) & mask != $0._rawHashValue(seed: 2) & mask }
        #expect(moved.count > 3_900, "another seed moves \(moved.count) objects")
        let steady = objects.filter { $0._rawHashValue(seed: 7) == $0._rawHashValue(seed: 7) }
        #expect(steady.count == objects.count)
        let set = Set(objects)
        let found = objects.filter { set.contains($0) }
        #expect(set.count == objects.count && found.count == objects.count)
        #expect(!set.contains(StoredObject(entity: person)))
    }

    /// `ASCIIOrder`: on ASCII strings it orders as their UTF-8 bytes do (the general path's
    /// order, ASCII being its own NFC form), and it leaves every other string to that path.
    @Test func asciiOrderIsTheGeneralOrder() {
        var generator = SeededRandom(seed: 2_113)
        let alphabet = Array("\u{0}\u{1}09AZaz \u{7F}".unicodeScalars)
        for _ in 0..<2_000 {
            let left = String(String.UnicodeScalarView((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }))
            let right = Bool.random(using: &generator) ? left + "a" : String(left.reversed())
            for (a, b) in [(left, right), (right, left), (left, left)] {
                let expected = a.utf8.elementsEqual(b.utf8) ? 0 : (a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1)
                #expect(ASCIIOrder.compare(a, b) == expected, "\(Array(a.utf8)) vs \(Array(b.utf8))")
            }
        }
        #expect(ASCIIOrder.compare("caf\u{E9}", "cafe") == nil)
        #expect(ASCIIOrder.compare("cafe", "cafe\u{301}") == nil)
    }

    /// `ObjectContext.readOrigins`: a prefetch's members borrow their origin from their context,
    /// and every one the context lets go of while something else may hold it (a reset, a saved
    /// deletion, the context's end) gets a count of its own first and still reads its ID after;
    /// an origin no registered object borrows any more is dropped.
    @Test func objectsOfAReadOutliveTheirContextsHold() throws {
        try withOrgStore { store in
            let seeded = try store.seedOrg()
            var request = FetchRequest(entityName: "Department")
            request.relationshipKeyPathsForPrefetching = ["employees"]
            var kept: [StoredObject] = []
            do {
                let context = store.context("reader")
                try context.performAndWait {
                    let members = try context.fetch(request).flatMap { try $0.members(of: "employees") }
                    #expect(members.count == 2 && members.allSatisfy { !$0.holdsOriginCount })
                    // The departments' records and the members'.
                    #expect(context.readOriginCount == 2)
                    kept.append(members[0])
                    context.reset()
                    #expect(kept[0].holdsOriginCount && context.readOriginCount == 0)

                    let people = try context.fetch(request).flatMap { try $0.members(of: "employees") }
                    #expect(people.allSatisfy { !$0.holdsOriginCount } && context.readOriginCount == 2)
                    for person in people { context.delete(person) }
                    try context.save()
                    #expect(people.allSatisfy { $0.holdsOriginCount })
                    _ = context.registeredObjects  // drops the forgotten from the order
                    #expect(context.readOriginCount == 1)  // the departments still borrow theirs
                    kept += people
                }
            }
            try withOrgStore { other in
                _ = try other.seedOrg()
                do {
                    let context = other.context("ending")
                    try context.performAndWait {
                        let members = try context.fetch(request).flatMap { try $0.members(of: "employees") }
                        #expect(members.allSatisfy { !$0.holdsOriginCount })
                        kept += members
                    }
                }
                // The context is gone: its members hold their origins.
                #expect(kept.suffix(2).allSatisfy { $0.holdsOriginCount })
            }
            // Memory the origins used is reused: the objects still read their own.
            let filler = (0..<64).map { _ in [UInt8](repeating: 0xA5, count: 32 * 1024) }
            #expect(filler.count == 64)
            #expect(kept.allSatisfy { $0.objectID.entityName == "Person" })
            #expect(Set(kept.prefix(3).map(\.objectID)) == [seeded.ann, seeded.bob])
        }
    }

    /// `SpareObjects`: a reset gives the store a read's members only when nothing else reaches
    /// them (no strong, weak or unowned reference) and they are as the read made them; the
    /// next read refills those, and they read as new ones.
    @Test func spareObjectsAreOnlyObjectsNobodyReaches() throws {
        try withOrgStore { store in
            let seeded = try store.seedOrg()
            var request = FetchRequest(entityName: "Department")
            request.relationshipKeyPathsForPrefetching = ["employees"]
            let context = store.context("reader")
            try context.performAndWait {
                /// The departments and their members (prefetched), as read.
                func read() throws -> (departments: [StoredObject], members: [StoredObject]) {
                    let departments = try context.fetch(request)
                    return (departments, try departments.flatMap { try $0.members(of: "employees") })
                }
                /// The identities of the objects read and let go of, after a reset.
                func readAndReset(_ hold: (StoredObject) -> Void = { _ in }) throws -> Set<ObjectIdentifier> {
                    let identities: Set<ObjectIdentifier>
                    do {
                        let (departments, members) = try read()
                        hold(members[0])
                        identities = Set((departments + members).map(ObjectIdentifier.init))
                    }
                    context.reset()
                    return identities
                }
                let first = try readAndReset()
                #expect(first.count == 4 && store.objects.spareObjectCount == 4)
                // Refilled: the same objects, reading as the new read's own.
                let second = try readAndReset { object in
                    #expect(store.objects.spareObjectCount == 0)
                    #expect(object["name"] == (object.objectID == seeded.ann ? .string("Ann") : .string("Bob")))
                    #expect(!object.hasChanges && !object.isFault && object.committedVersion == 1 && object.context === context)
                    #expect((try? context.existingObject(with: object.objectID)) === object)
                    #expect((try? context.existingObject(with: seeded.eng).members(of: "employees").count) == 2)
                }
                #expect(second == first && store.objects.spareObjectCount == 4)
                // A written member (decoded) is no spare, nor is the list holding it (the
                // departments' list still is).
                _ = try readAndReset { $0["name"] = .string("Changed") }
                #expect(store.objects.spareObjectCount == 2)

                // Held strongly, weakly or unowned, a member is no spare: the weak reference
                // ends with the reset, the unowned one sees no other object.
                var strongly: StoredObject? = nil
                _ = try readAndReset { strongly = $0 }
                #expect(store.objects.spareObjectCount == 2 && strongly?.objectID.entityName == "Person")
                strongly = nil
                weak var weakly: StoredObject? = nil
                _ = try readAndReset { weakly = $0 }
                #expect(store.objects.spareObjectCount == 2 && weakly == nil)
                var unownedly: [Unowned] = []
                _ = try readAndReset { unownedly.append(Unowned($0)) }
                #expect(store.objects.spareObjectCount == 2)
                let again = try read()
                #expect(!Set((again.departments + again.members).map(ObjectIdentifier.init)).contains(unownedly[0].identifier))
                withExtendedLifetime(unownedly) {}
            }
        }
    }

    /// `SmallASCIIString`: what it makes is the standard library's own string of those bytes,
    /// bit for bit, at every length and place in the bytes (near their start, whole words, and
    /// near their end); a byte that is not ASCII, or more than fifteen, make none.
    @Test func smallASCIIStringsAreTheStandardLibrarys() {
        var generator = SeededRandom(seed: 4_027)
        for total in [0, 1, 5, 7, 8, 9, 15, 16, 24, 40] {
            for _ in 0..<40 {
                let bytes = (0..<total).map { _ in UInt8.random(in: 0...0x7F, using: &generator) }
                bytes.withUnsafeBytes { buffer in
                    for offset in 0...total {
                        for count in 0...(total - offset) {
                            let made = buffer.baseAddress.flatMap { SmallASCIIString.make($0, at: offset, count: count, end: total) }
                            guard count <= 15, let made else {
                                #expect(count > 15 || buffer.baseAddress == nil, "no string of \(count) ASCII bytes")
                                continue
                            }
                            let expected = String(decoding: bytes[offset..<offset + count], as: UTF8.self)
                            #expect(made == expected)
                            #expect(Array(made.utf8) == Array(bytes[offset..<offset + count]))
                            #expect(unsafeBitCast(made, to: (UInt64, UInt64).self) == unsafeBitCast(expected, to: (UInt64, UInt64).self))
                        }
                    }
                }
            }
        }
        for text in ["caf\u{E9}", "\u{80}", "abcdefg\u{7FF}"] {
            let bytes = Array(text.utf8)
            #expect(bytes.withUnsafeBytes { SmallASCIIString.make($0.baseAddress!, at: 0, count: bytes.count, end: bytes.count) } == nil)
        }
    }
}

/// glibc's `malloc_usable_size` (its header is not in the Glibc module).
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer?) -> Int

/// An unowned reference to an object, and the object's identity.
private struct Unowned {
    unowned let object: StoredObject
    let identifier: ObjectIdentifier

    init(_ object: StoredObject) {
        self.object = object
        identifier = ObjectIdentifier(object)
    }
}
