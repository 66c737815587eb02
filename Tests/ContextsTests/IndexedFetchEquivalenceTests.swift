import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// Every predicate shape, run through the planner and as a forced scan, must give the same
/// objects in the same order (and the same count), with random pending inserts, updates,
/// deletes, faults and stale registered objects in the context, in a pinned context and in a
/// child. The seed is printed; CAIRN_SEED replays it.
@Suite struct IndexedFetchEquivalenceTests {
    @Test func everyPredicateShapeGivesTheScansResult() throws {
        let seed = SeededRandom.seed()
        print("IndexedFetchEquivalenceTests seed \(seed) (replay: CAIRN_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let store = try IndexedStore()
        defer { store.close() }
        let loader = store.objects.newBackgroundContext(name: "loader")
        var ids: [ObjectID] = []
        try loader.performAndWait {
            let made = (0..<300).map { _ -> StoredObject in
                let object = loader.insert(entity: "Item")
                IndexedModel.fill(object, &random)
                return object
            }
            try loader.save()
            ids = made.map(\.objectID)
        }
        #expect(try store.objects.indexProblems() == [])

        var indexedPlans = 0, compared = 0
        for round in 0..<6 {
            let context = store.objects.newBackgroundContext(name: "round\(round)")
            let other = store.objects.newBackgroundContext(name: "other\(round)")
            try context.performAndWait {
                if round % 3 == 2 { try context.setQueryGenerationFrom(.current) }
                // Registered objects: loaded, changed, deleted, faults; inserts.
                for _ in 0..<40 {
                    let id = ids[Int(random.next(upTo: UInt64(ids.count)))]
                    switch random.next(upTo: 5) {
                    case 0: _ = context.object(with: id)  // a fault
                    case 1: _ = try context.existingObject(with: id)
                    case 2:
                        let object = try context.existingObject(with: id)
                        let attribute = IndexedModel.attributes[Int(random.next(upTo: UInt64(IndexedModel.attributes.count)))]
                        object[attribute] = IndexedModel.value(attribute, &random)
                    case 3: context.delete(try context.existingObject(with: id))
                    default: IndexedModel.fill(context.insert(entity: "Item"), &random)
                    }
                }
            }
            // Another context saves over some of those: the first holds them stale.
            try other.performAndWait {
                for _ in 0..<20 {
                    let id = ids[Int(random.next(upTo: UInt64(ids.count)))]
                    let object = try other.existingObject(with: id)
                    if random.next(upTo: 6) == 0 { other.delete(object) } else { IndexedModel.fill(object, &random) }
                }
                for _ in 0..<10 { IndexedModel.fill(other.insert(entity: "Item"), &random) }
                try other.save()
            }
            ids = try other.performAndWait {
                try other.fetch(FetchRequest(entityName: "Item")).map(\.objectID)
            }
            let child = context.newChildContext(name: "child\(round)")
            for _ in 0..<120 {
                var request = FetchRequest(entityName: "Item", predicate: IndexedModel.predicate(&random))
                if random.next(upTo: 2) == 0 {
                    let attribute = ["name", "age", "score", "when", "note", "city"][Int(random.next(upTo: 6))]
                    request.sortDescriptors = [FetchRequest.SortDescriptor(attribute: attribute, ascending: random.next(upTo: 2) == 0)]
                    if random.next(upTo: 2) == 0 { request.sortDescriptors.append(.ascending("name")) }
                    if random.next(upTo: 3) > 0 { request.fetchLimit = Int(random.next(upTo: 25)) }
                    if random.next(upTo: 2) == 0 { request.fetchOffset = Int(random.next(upTo: 10)) }
                } else if random.next(upTo: 3) == 0 {
                    request.fetchLimit = Int(random.next(upTo: 10))
                }
                if random.next(upTo: 4) == 0 { request.predicate = nil }
                var scan = request
                scan.usesIndexes = false
                let target = random.next(upTo: 8) == 0 ? child : context
                try target.performAndWait {
                    let plan = try target.explain(request)
                    if case .index = plan.access { indexedPlans += 1 }
                    let viaPlan = try target.fetch(request).map(\.objectID)
                    let viaScan = try target.fetch(scan).map(\.objectID)
                    #expect(viaPlan == viaScan, "round \(round), \(request.predicate.map { "\($0)" } ?? "no predicate"), plan \(plan) (seed \(seed))")
                    let counts = (try target.count(for: request), try target.count(for: scan))
                    #expect(counts.0 == counts.1, "count, round \(round), plan \(plan) (seed \(seed))")
                    compared += 1
                }
            }
        }
        #expect(indexedPlans > compared / 3, "only \(indexedPlans) of \(compared) requests used an index: the test exercised little")
        #expect(try store.objects.indexProblems() == [])
    }
}
