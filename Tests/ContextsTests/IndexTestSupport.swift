import CairnTestSupport
import Contexts
import Foundation
import Policies
import Testing

/// An entity with an index on every attribute type, one compound index, and an unindexed
/// attribute, for the index tests.
enum IndexedModel {
    static func schema(indexes: [[String]] = defaultIndexes) -> Schema {
        do {
            return try Schema([
                EntityDescription("Item", attributes: [
                    AttributeDescription("name", .string),
                    AttributeDescription("age", .int),
                    AttributeDescription("city", .string, isOptional: true),
                    AttributeDescription("score", .double, isOptional: true),
                    AttributeDescription("flag", .bool, isOptional: true),
                    AttributeDescription("when", .date, isOptional: true),
                    AttributeDescription("blob", .bytes, isOptional: true),
                    AttributeDescription("note", .string, isOptional: true),
                ], indexes: indexes),
                EntityDescription("Plain", attributes: [AttributeDescription("label", .string)]),
            ])
        } catch {
            fatalError("indexed schema: \(error)")
        }
    }

    static let defaultIndexes = [["name"], ["age"], ["city", "age"], ["score"], ["flag"], ["when"], ["blob"]]

    static let names = ["Ann", "Bo", "Cy", "Dee", "é", "e\u{301}x", String(repeating: "long", count: 100), ""]
    static let cities = ["Oslo", "Rome", "Lima"]

    /// A value for `attribute` from a small domain (ties, nulls for optional ones).
    static func value(_ attribute: String, _ random: inout SeededRandom) -> AttributeValue {
        let pick = { (count: Int, random: inout SeededRandom) in Int(random.next(upTo: UInt64(count))) }
        let optionalNull = attribute != "name" && attribute != "age" && pick(5, &random) == 0
        if optionalNull { return .null }
        switch attribute {
        case "name": return .string(names[pick(names.count, &random)])
        case "age": return .int(Int64(pick(12, &random)) - 2)
        case "city": return .string(cities[pick(cities.count, &random)])
        case "score": return .double([-1.5, 0, -0.0, 2.25, 7, .infinity][pick(6, &random)])
        case "flag": return .bool(pick(2, &random) == 0)
        case "when": return .date(Date(timeIntervalSinceReferenceDate: Double(pick(6, &random)) * 1000 - 2000))
        case "blob": return .bytes([[], [0], [0, 1], [1], [0xFF]][pick(5, &random)])
        default: return .string("n\(pick(4, &random))")
        }
    }

    static let attributes = ["name", "age", "city", "score", "flag", "when", "blob", "note"]

    static func fill(_ object: StoredObject, _ random: inout SeededRandom) {
        for attribute in attributes { object[attribute] = value(attribute, &random) }
    }

    /// A random predicate of one of the shapes the planner knows, or one it does not.
    static func predicate(_ random: inout SeededRandom) -> FetchPredicate {
        let attribute = attributes[Int(random.next(upTo: UInt64(attributes.count)))]
        let ops: [FetchPredicate.Operator] = [.equal, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual]
        func compare() -> FetchPredicate {
            let attribute = attributes[Int(random.next(upTo: UInt64(attributes.count)))]
            return .compare(attribute, ops[Int(random.next(upTo: UInt64(ops.count)))], value(attribute, &random))
        }
        switch random.next(upTo: 9) {
        case 0: return .compare(attribute, .equal, value(attribute, &random))
        case 1: return .compare(attribute, ops[Int(random.next(upTo: 5))], value(attribute, &random))
        case 2: return .isIn(attribute, (0..<random.next(upTo: 4)).map { _ in value(attribute, &random) })
        case 3:  // a range
            return .and([.compare(attribute, .greaterThanOrEqual, value(attribute, &random)),
                         .compare(attribute, .lessThan, value(attribute, &random))])
        case 4:  // the compound index's leading attributes
            return .and([.compare("city", .equal, value("city", &random)),
                         .compare("age", ops[Int(random.next(upTo: 5))], value("age", &random))])
        case 5: return .and([compare(), compare(), compare()])
        case 6: return .or([compare(), compare()])
        case 7: return .not(compare())
        default: return .and([.isIn("city", [value("city", &random), value("city", &random)]), compare()])
        }
    }
}

/// A fresh store with `schema` in a temporary directory.
final class IndexedStore: Sendable {
    let directory: TemporaryDirectory
    let objects: ObjectStore

    init(schema: Schema = IndexedModel.schema(), directory: TemporaryDirectory? = nil) throws {
        self.directory = try directory ?? TemporaryDirectory(prefix: "cairn-index")
        var options = ObjectStore.Options()
        options.saveDurability = .normal
        options.storeOptions.durability = .normal
        options.storeOptions.mapSize = 256 << 20
        objects = try ObjectStore(directory: self.directory.path, schema: schema, options: options)
    }

    func close(removing: Bool = true) {
        objects.close()
        if removing { directory.remove() }
    }
}
