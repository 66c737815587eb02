import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// An object changed in one attribute keeps the replaced value inline instead of copying its
/// values (`StoredObject.ancestorDelta`). Whatever it does inside, what it reports must be
/// what a copy would say: these drive objects through random edits, saves, rollbacks and
/// refreshes and check every answer against a plain model of committed and current values.
@Suite struct AncestorDeltaTests {
    private let attributes = ["name", "age", "city", "note"]

    /// A random value for `attribute`, sometimes its committed one (setting a property back
    /// to its saved value makes the object clean again) or null for the optional ones.
    private func value(for attribute: String, committed: PropertyValues, _ random: inout SeededRandom) -> AttributeValue {
        switch random.next() % 5 {
        case 0: return committed[attribute] ?? .null
        case 1 where attribute == "city" || attribute == "note": return .null
        default:
            return attribute == "age" ? .int(Int64(random.next() % 100)) : .string("v\(random.next() % 7)")
        }
    }

    /// What an object's answers must be, given its committed and current values.
    private func expectMatches(_ object: StoredObject, committed: PropertyValues, current: PropertyValues,
                               _ step: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(object.values == current, "\(step): values", sourceLocation: sourceLocation)
        #expect(object.committedValues == committed, "\(step): committed values", sourceLocation: sourceLocation)
        var changed: PropertyValues = [:]
        for attribute in attributes where (current[attribute] ?? .null) != (committed[attribute] ?? .null) {
            changed[attribute] = current[attribute] ?? .null
        }
        #expect(object.changedValues() == changed, "\(step): changed values", sourceLocation: sourceLocation)
        #expect(object.isUpdated == !changed.isEmpty, "\(step): isUpdated", sourceLocation: sourceLocation)
        #expect(object.hasChanges == !changed.isEmpty, "\(step): hasChanges", sourceLocation: sourceLocation)
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func randomEditsSavesRollbacksAndRefreshesReportWhatACopyWould(seed: UInt64) throws {
        try withTestStore { store in
            let ids = try (0..<4).map { try store.seed("Person", person("p\($0)", Int64($0), $0 % 2 == 0 ? "Oslo" : nil)) }
            let context = store.context("editor")
            var random = SeededRandom(seed: seed)
            try context.performAndWait {
                for id in ids {
                    let object = try context.existingObject(with: id)
                    var committed = try #require(try store.committed(id)).values
                    var current = committed
                    for step in 0..<120 {
                        let label = "seed \(seed), \(id), step \(step)"
                        switch random.next() % 10 {
                        case 0:
                            context.rollback()
                            current = committed
                        case 1:
                            try context.save()
                            committed = current
                        case 2:
                            // Another context changes one attribute and saves; a refresh that
                            // merges keeps our changes on top of the store's new values.
                            let attribute = attributes[Int(random.next() % 2)]  // name or age
                            let theirs: AttributeValue = attribute == "age" ? .int(1000 + Int64(step)) : .string("theirs\(step)")
                            let other = store.context("other")
                            try other.performAndWait {
                                try other.existingObject(with: id)[attribute] = theirs
                                try other.save()
                            }
                            let ours = current
                            try context.refresh(object, mergeChanges: true)
                            var merged = committed
                            merged[attribute] = theirs
                            for name in attributes where (ours[name] ?? .null) != (committed[name] ?? .null) {
                                merged[name] = ours[name] ?? .null
                            }
                            committed[attribute] = theirs
                            current = merged.filter { $0.value != .null }
                        default:
                            let attribute = attributes[Int(random.next() % UInt64(attributes.count))]
                            let new = value(for: attribute, committed: committed, &random)
                            object[attribute] = new
                            current[attribute] = new == .null ? nil : new
                        }
                        expectMatches(object, committed: committed, current: current, label)
                    }
                    try context.save()
                    #expect(try store.committed(id)?.values == current)
                }
            }
        }
    }

    /// A conflict reports the ancestor the object was read with, after one attribute changed.
    @Test func aConflictAfterOneChangeReportsTheValuesReadAsTheAncestor() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30, "Oslo"))
            let context = store.context("editor")
            let other = store.context("other")
            try context.performAndWait {
                let ann = try context.existingObject(with: id)
                ann["age"] = .int(31)
                try other.performAndWait {
                    try other.existingObject(with: id)["city"] = .string("Rome")
                    try other.save()
                }
                do {
                    try context.save()
                    Issue.record("the save should have conflicted")
                } catch let error as MergeError {
                    let conflict = try #require(error.conflicts.first)
                    #expect(conflict.ancestorValues == person("Ann", 30, "Oslo"))
                    #expect(conflict.ourValues == person("Ann", 31, "Oslo"))
                    #expect(conflict.storeValues == person("Ann", 30, "Rome"))
                }
                // Nothing changed: the object still holds its change and its ancestor.
                #expect(ann.changedValues() == ["age": .int(31)])
                #expect(ann.committedValues == person("Ann", 30, "Oslo"))
            }
        }
    }

    /// Replacing the values whole (`setValues(from:)`) or merging a child's changes into them
    /// after one attribute changed leaves the ancestor as it was read.
    @Test func replacingOrMergingTheValuesAfterOneChangeKeepsTheAncestor() throws {
        struct PersonValues: Codable { var name: String; var age: Int; var city: String? }
        try withTestStore { store in
            let annID = try store.seed("Person", person("Ann", 30, "Oslo"))
            let boID = try store.seed("Person", person("Bo", 40, "Rome"))
            let parent = store.context("parent")
            try parent.performAndWait {
                let ann = try parent.existingObject(with: annID)
                ann["age"] = .int(31)
                try ann.setValues(from: PersonValues(name: "Ann", age: 32, city: nil))
                #expect(ann.committedValues == person("Ann", 30, "Oslo"))
                #expect(ann.changedValues() == ["age": .int(32), "city": .null])

                let bo = try parent.existingObject(with: boID)
                bo["age"] = .int(41)
                let child = parent.newChildContext(name: "child")
                try child.performAndWait {
                    try child.existingObject(with: boID)["city"] = .string("Bergen")
                    try child.save()
                }
                #expect(bo.values == person("Bo", 41, "Bergen"))
                #expect(bo.committedValues == person("Bo", 40, "Rome"))
                #expect(bo.changedValues() == ["age": .int(41), "city": .string("Bergen")])
                try parent.save()
            }
            #expect(try store.committed(annID)?.values == person("Ann", 32))
            #expect(try store.committed(boID)?.values == person("Bo", 41, "Bergen"))
        }
    }

    /// Values handed out before a change (a snapshot of them, an encoder's copy) keep what
    /// they held: the buffer written in place is the object's own only.
    @Test func valuesTakenBeforeAChangeKeepWhatTheyHeld() throws {
        try withTestStore { store in
            let id = try store.seed("Person", person("Ann", 30))
            let context = store.context("editor")
            try context.performAndWait {
                let ann = try context.existingObject(with: id)
                let before = ann.current  // shares the buffer with the object
                ann["age"] = .int(31)
                ann["age"] = .int(32)
                #expect(before.dictionary(ann.entity.layout) == person("Ann", 30))
                #expect(ann.current.dictionary(ann.entity.layout) == person("Ann", 32))
                #expect(ann.committedValues == person("Ann", 30))
                ann["name"] = .string("Bo")  // a second attribute: the ancestor gets its own buffer
                #expect(ann.committedValues == person("Ann", 30))
                #expect(ann.changedValues() == ["age": .int(32), "name": .string("Bo")])
            }
        }
    }
}
