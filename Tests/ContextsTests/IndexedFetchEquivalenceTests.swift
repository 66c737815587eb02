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

/// The store's cache of plans by request shape: a template made for one request binds every
/// request of its shape to the plan made afresh for that request.
@Suite struct FetchPlanCacheTests {
    @Test func aTemplateBindsEveryRequestOfItsShapeAsAFreshPlan() throws {
        let seed = SeededRandom.seed()
        print("FetchPlanCacheTests seed \(seed) (replay: CAIRN_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let store = try IndexedStore()
        defer { store.close() }
        let context = store.objects.newBackgroundContext()
        var requests = 0, distinct = Set<String>()
        try context.performAndWait {
            for _ in 0..<1_000 {
                var request = FetchRequest(entityName: "Item", predicate: IndexedModel.predicate(&random))
                if random.next(upTo: 2) == 0 {
                    let attribute = ["name", "age", "score", "when", "city"][Int(random.next(upTo: 5))]
                    request.sortDescriptors = [FetchRequest.SortDescriptor(attribute: attribute, ascending: random.next(upTo: 2) == 0)]
                    if random.next(upTo: 3) > 0 { request.fetchLimit = Int(random.next(upTo: 25)) }
                }
                if random.next(upTo: 8) == 0 { request.predicate = nil }
                // The request, then one of its shape with other constants: bound from the
                // template the first one left.
                var sibling = request
                sibling.predicate = request.predicate.map { Self.withOtherConstants($0, &random) }
                for (position, asked) in [request, sibling].enumerated() {
                    let plans = try context.boundAndFreshPlans(asked)
                    #expect(plans.bound == plans.fresh, "\(asked.predicate.map { "\($0)" } ?? "no predicate") (seed \(seed))")
                    if position == 1 { #expect(plans.wasKept, "\(asked.predicate.map { "\($0)" } ?? "no predicate") (seed \(seed))") }
                    requests += 1
                    distinct.insert(plans.fresh)
                }
            }
        }
        #expect(distinct.count > requests / 4, "the constants varied too little to test binding")
        let shapes = try context.performAndWait { try context.boundAndFreshPlans(FetchRequest(entityName: "Item")).cachedShapes }
        #expect(shapes <= 32, "the cache keeps at most FetchPlanCache.capacity shapes")
    }

    /// `predicate` with each constant drawn again, of the same kind (null stays null).
    static func withOtherConstants(_ predicate: FetchPredicate, _ random: inout SeededRandom) -> FetchPredicate {
        func redrawn(_ attribute: String, _ constant: AttributeValue) -> AttributeValue {
            guard constant != .null else { return .null }
            while true {
                let value = IndexedModel.value(attribute, &random)
                if value != .null { return value }
            }
        }
        switch predicate {
        case let .compare(attribute, comparison, constant):
            return .compare(attribute, comparison, redrawn(attribute, constant))
        case let .isIn(attribute, constants):
            return .isIn(attribute, constants.map { redrawn(attribute, $0) })
        case .and(let parts):
            return .and(parts.map { withOtherConstants($0, &random) })
        case .or(let parts):
            return .or(parts.map { withOtherConstants($0, &random) })
        case .not(let part):
            return .not(withOtherConstants(part, &random))
        default:
            return predicate
        }
    }

    @Test func aShapeDiffersByAttributeOperatorConstantKindListLengthSortAndLimit() throws {
        let store = try IndexedStore()
        defer { store.close() }
        let context = store.objects.newBackgroundContext()
        try context.performAndWait {
            let base = FetchRequest(entityName: "Item", predicate: .compare("age", .equal, .int(3)))
            let variants = [base, FetchRequest(entityName: "Item", predicate: .compare("age", .equal, .int(4)))]
            let differing: [FetchRequest] = [
                FetchRequest(entityName: "Item", predicate: .compare("name", .equal, .string("3"))),
                FetchRequest(entityName: "Item", predicate: .compare("age", .lessThan, .int(3))),
                FetchRequest(entityName: "Item", predicate: .compare("age", .equal, .null)),
                FetchRequest(entityName: "Item", predicate: .compare("score", .equal, .double(.nan))),
                FetchRequest(entityName: "Item", predicate: .isIn("age", [.int(3)])),
                FetchRequest(entityName: "Item", predicate: .isIn("age", [.int(3), .int(3)])),
                FetchRequest(entityName: "Item", predicate: .compare("age", .equal, .int(3)), sortDescriptors: [.ascending("age")]),
                FetchRequest(entityName: "Item", predicate: .compare("age", .equal, .int(3)), fetchLimit: 1),
            ]
            let before = try context.boundAndFreshPlans(base).cachedShapes
            #expect(try context.boundAndFreshPlans(variants[1]).wasKept, "same shape, other constant")
            #expect(try context.boundAndFreshPlans(variants[1]).cachedShapes == before)
            for (offset, request) in differing.enumerated() {
                let plans = try context.boundAndFreshPlans(request)
                #expect(!plans.wasKept && plans.cachedShapes == before + offset + 1, "\(request) is a shape of its own")
                #expect(plans.bound == plans.fresh)
            }
            // A request that fails validation is not kept, and fails again.
            let wrong = FetchRequest(entityName: "Item", predicate: .compare("age", .equal, .string("x")))
            #expect(throws: ContextError.self) { try context.fetch(wrong) }
            #expect(throws: ContextError.self) { try context.fetch(wrong) }
            #expect(try context.boundAndFreshPlans(base).cachedShapes == before + differing.count)
        }
    }
}
