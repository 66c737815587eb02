import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// A readable form of a translated predicate, to pin the translation's shape.
func render(_ predicate: FetchPredicate?) -> String {
    guard let predicate else { return "none" }
    switch predicate {
    case let .compare(attribute, comparison, value): return "\(attribute) \(comparison.rawValue) \(value)"
    case let .isIn(attribute, values): return "\(attribute) IN \(values)"
    case .and(let terms): return "and(" + terms.map(render).joined(separator: ", ") + ")"
    case .or(let terms): return "or(" + terms.map(render).joined(separator: ", ") + ")"
    case .not(let term): return "not(" + render(term) + ")"
    case .matching: return "matching"
    case let .memberCount(relationship, comparison, count): return "\(relationship).@count \(comparison.rawValue) \(count)"
    case .objectIn(let ids): return "SELF IN \(ids.count) objects"
    }
}

@Suite("#Predicate and SortDescriptor translation")
struct PredicateTranslationTests {
    @Test("comparisons of an attribute with a constant translate, exactly; the rest narrows or is left to the objects")
    func translationShapes() {
        func shape(_ predicate: Predicate<Person>) -> String {
            let translation = FetchDescriptor(predicate: predicate).translation
            return render(translation.request.predicate) + (translation.evaluatesPredicateOnObjects ? " +objects" : "")
        }
        let minimum = 18
        let names = ["Ann", "Bob"]
        let notANumber = Double("nan")!
        let company = Kind.company
        #expect(shape(#Predicate { $0.age > minimum && $0.name != "Bob" }) == #"and(age > 18, name != "Bob")"#)
        #expect(shape(#Predicate { 18 < $0.age }) == "age > 18")
        #expect(shape(#Predicate { $0.city == nil || $0.score <= 0.5 }) == "or(city == null, score <= 0.5)")
        #expect(shape(#Predicate { !($0.age >= 65) }) == "not(age >= 65)")
        #expect(shape(#Predicate { names.contains($0.name) }) == #"name IN ["Ann", "Bob"]"#)
        #expect(shape(#Predicate { $0.active }) == "active == true")
        #expect(shape(#Predicate { $0.age > 30 && $0.name.starts(with: "A") }) == "age > 30 +objects")
        #expect(shape(#Predicate { $0.age > 30 || $0.name.starts(with: "A") }) == "none +objects")
        #expect(shape(#Predicate { !$0.name.starts(with: "A") }) == "none +objects")
        #expect(shape(#Predicate { $0.kind == company }) == "none +objects")
        #expect(shape(#Predicate { $0.age == $0.age }) == "none +objects")
        // Outside #expect, which would warn that a comparison with NaN is always false.
        let comparedWithNaN = shape(#Predicate { $0.score > notANumber })
        #expect(comparedWithNaN == "none +objects")
    }

    @Test("sorts by natively ordered attributes run in the store with the limit; a String comparator sorts on the objects")
    func sortTranslation() {
        let inStore = FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.city)], fetchLimit: 3, fetchOffset: 1)
            .translation
        #expect(!inStore.sortsOnObjects)
        #expect(inStore.request.sortDescriptors == [.descending("age"), .ascending("city")])
        #expect(inStore.request.fetchLimit == 3 && inStore.request.fetchOffset == 1)
        let onObjects = FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name, comparator: .lexical)], fetchLimit: 3).translation
        #expect(onObjects.sortsOnObjects)
        #expect(onObjects.request.sortDescriptors.isEmpty && onObjects.request.fetchLimit == nil)
    }

    @Test("a translated predicate reaches the index planner")
    func usesIndexes() throws {
        try withTypedStore { store in
            let context = store.objects.newBackgroundContext(name: "explain")
            try context.performAndWait {
                let byAge = try context.explain(FetchDescriptor<Person>(predicate: #Predicate { $0.age > 30 }))
                #expect(byAge.access == .index(attributes: ["age"]))
                #expect(byAge.countsIndexEntries)
                let compound = try context.explain(FetchDescriptor<Person>(predicate: #Predicate { $0.city == "Oslo" && $0.age >= 18 }))
                #expect(compound.access == .index(attributes: ["city", "age"]))
                let sorted = try context.explain(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name)], fetchLimit: 5))
                #expect(sorted.access == .index(attributes: ["name"]) && sorted.readsInSortOrder)
                let untranslated = try context.explain(FetchDescriptor<Person>(predicate: #Predicate { $0.name.starts(with: "A") }))
                #expect(untranslated.access == .scan)
            }
        }
    }

    @Test("results are identical translated (index and scan) and evaluated on the objects, pending changes included")
    func translatedAndEvaluatedAgree() throws {
        let seed = SeededRandom.seed(fromEnvironment: "CAIRN_SEED")
        print("translatedAndEvaluatedAgree seed \(seed)")
        var random = SeededRandom(seed: seed)
        let names = ["Ann", "Bob", "Åse", "Zoë", "p1", "p10", "p2", "Cid", "ann"]
        let cities: [String?] = ["Oslo", "Rome", nil, "Åre"]
        func randomPerson() -> Person {
            Person(
                name: names[Int(random.next(upTo: UInt64(names.count)))],
                age: Int(random.next(upTo: 80)),
                city: cities[Int(random.next(upTo: UInt64(cities.count)))],
                score: Double(random.next(upTo: 100)) / 100,
                active: random.next(upTo: 2) == 0,
                born: random.next(upTo: 3) == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(random.next(upTo: 1000))),
                kind: random.next(upTo: 2) == 0 ? .person : .company)
        }
        let youngest = 20, oldest = 40
        let someNames = ["Ann", "Zoë", "nobody"]
        let someCities: [String?] = ["Rome", nil]
        let cutoff = Date(timeIntervalSinceReferenceDate: 500)
        let company = Kind.company
        let predicates: [Predicate<Person>] = [
            #Predicate { $0.age > 30 && $0.name != "p1" },
            #Predicate { $0.age >= youngest && $0.age < oldest },
            #Predicate { 25 >= $0.age },
            #Predicate { $0.city == "Oslo" },
            #Predicate { $0.city == nil },
            #Predicate { $0.city != nil && $0.age <= 25 },
            #Predicate { $0.city == "Oslo" || $0.age < 10 },
            #Predicate { $0.city == "Oslo" && $0.age >= 30 },
            #Predicate { !($0.age == 30) },
            #Predicate { someNames.contains($0.name) },
            #Predicate { someCities.contains($0.city) },
            #Predicate { $0.active },
            #Predicate { !$0.active && $0.score > 0.5 },
            #Predicate { $0.name == "Åse" || $0.name < "p" },
            #Predicate { $0.name >= "ann" },
            #Predicate { $0.born != nil },
            #Predicate { $0.born == cutoff },
            #Predicate { $0.score <= 0.25 || $0.city != "Rome" },
            #Predicate { $0.name.starts(with: "p") },
            #Predicate { $0.age > 30 && $0.name.starts(with: "p") },
            #Predicate { $0.age > 60 || $0.name.starts(with: "A") },
            #Predicate { !$0.name.starts(with: "p") && $0.age != 3 },
            #Predicate { $0.kind == company && $0.age < 50 },
            #Predicate { ($0.city ?? "none") == "none" },
            #Predicate { _ in true },
        ]
        let sorts: [[SortDescriptor<Person>]] = [
            [],
            [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.name)],
            [SortDescriptor(\.city), SortDescriptor(\.score, order: .reverse)],
            [SortDescriptor(\.name, comparator: .lexical)],
            [SortDescriptor(\.born, order: .reverse)],
        ]
        let pages: [(limit: Int?, offset: Int?)] = [(nil, nil), (5, nil), (7, 3), (nil, 10), (0, 0)]
        try withTypedStore { store in
            let context = store.objects.newBackgroundContext(name: "equivalence")
            try context.performAndWait {
                for _ in 0..<240 { try context.insert(randomPerson()) }
                try context.save()
                // Pending changes the fetches must lay over: updates, deletes and inserts.
                let stored = try context.fetch(FetchDescriptor<Person>())
                for (index, object) in stored.enumerated() {
                    switch index % 9 {
                    case 0: try object.update(to: randomPerson())
                    case 1: context.delete(object)
                    default: break
                    }
                }
                for _ in 0..<20 { try context.insert(randomPerson()) }
                var checked = 0
                for (predicateIndex, predicate) in predicates.enumerated() {
                    for sortBy in sorts {
                        for page in pages {
                            var descriptor = FetchDescriptor(predicate: predicate, sortBy: sortBy, fetchLimit: page.limit, fetchOffset: page.offset)
                            let indexed = try context.fetch(descriptor).map(\.objectID)
                            descriptor.usesIndexes = false
                            let scanned = try context.fetch(descriptor).map(\.objectID)
                            descriptor.translates = false
                            let evaluated = try context.fetch(descriptor).map(\.objectID)
                            let count = try context.fetchCount(descriptor)
                            descriptor.translates = true
                            descriptor.usesIndexes = true
                            let translatedCount = try context.fetchCount(descriptor)
                            #expect(indexed == evaluated, "predicate \(predicateIndex), sort \(sortBy.count), page \(page)")
                            #expect(scanned == evaluated, "predicate \(predicateIndex), sort \(sortBy.count), page \(page)")
                            #expect(translatedCount == evaluated.count && count == evaluated.count, "predicate \(predicateIndex), page \(page)")
                            checked += 1
                        }
                    }
                    // The oracle: every visible person, filtered in Swift.
                    let everyone = try context.fetch(FetchDescriptor<Person>(translatesEverything: false))
                    let expected = try everyone.filter { try predicate.evaluate(try $0.value) }.map(\.objectID)
                    #expect(try context.fetch(FetchDescriptor(predicate: predicate)).map(\.objectID) == expected, "predicate \(predicateIndex)")
                }
                #expect(checked == predicates.count * sorts.count * pages.count)
            }
            // Fresh contexts, holding no objects: every translated fetch reads the index or the
            // table alone.
            for (predicateIndex, predicate) in predicates.enumerated() {
                var descriptor = FetchDescriptor(
                    predicate: predicate, sortBy: [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.name)], fetchLimit: 7, fetchOffset: 3)
                let translatedContext = store.objects.newBackgroundContext(name: "fresh-translated")
                let indexed = try translatedContext.performAndWait { try translatedContext.fetch(descriptor).map(\.objectID) }
                descriptor.translates = false
                let evaluatedContext = store.objects.newBackgroundContext(name: "fresh-evaluated")
                let evaluated = try evaluatedContext.performAndWait { try evaluatedContext.fetch(descriptor).map(\.objectID) }
                #expect(indexed == evaluated, "fresh, predicate \(predicateIndex)")
            }
        }
    }
}

extension FetchDescriptor {
    /// A descriptor with translation on or off (package API, for comparing both ways).
    init(translatesEverything: Bool) {
        self.init()
        translates = translatesEverything
    }
}
