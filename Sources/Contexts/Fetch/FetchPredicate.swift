import Policies

/// Which objects a fetch returns: comparisons of attribute values, combined with and/or/not,
/// or a closure for anything else.
///
/// Comparison rules: ints and doubles compare as numbers (`.int(1)` equals `.double(1)`);
/// other values compare only with their own type (strings by the UTF-8 bytes of their NFC form,
/// equal when canonically equivalent; bytes
/// lexicographically, `false < true`, dates in time order). Ordering comparisons with `.null`
/// or with a value of another type are false; `== .null` matches unset attributes.
///
/// ```swift
/// let predicate: FetchPredicate = .or([
///     .compare("age", .lessThan, .int(18)),
///     .not(.isIn("city", [.string("Oslo")])),
///     .matching { values in values.value(of: "name") == .string("Ann") },
/// ])
/// ```
public indirect enum FetchPredicate: Sendable {
    /// The comparison operators.
    ///
    /// ```swift
    /// FetchPredicate.compare("age", .greaterThanOrEqual, .int(18))
    /// ```
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        /// `==`
        ///
        /// ```swift
        /// .compare("name", .equal, .string("Ann"))
        /// ```
        case equal = "=="
        /// `!=` (true for a value of another type, and for null against a value)
        ///
        /// ```swift
        /// .compare("city", .notEqual, .null)   // city is set
        /// ```
        case notEqual = "!="
        /// `<`
        ///
        /// ```swift
        /// .compare("age", .lessThan, .int(18))
        /// ```
        case lessThan = "<"
        /// `<=`
        ///
        /// ```swift
        /// .compare("age", .lessThanOrEqual, .int(17))
        /// ```
        case lessThanOrEqual = "<="
        /// `>`
        ///
        /// ```swift
        /// .compare("score", .greaterThan, .double(9.5))
        /// ```
        case greaterThan = ">"
        /// `>=`
        ///
        /// ```swift
        /// .compare("age", .greaterThanOrEqual, .int(18))
        /// ```
        case greaterThanOrEqual = ">="
    }

    /// The attribute's value compared with a constant: `attribute operator value`.
    ///
    /// ```swift
    /// .compare("age", .greaterThan, .int(30))
    /// ```
    case compare(String, Operator, AttributeValue)

    /// Objects whose to-one `relationship` is `destination` (nil: empty). A predicate may also
    /// name a destination's attribute through the to-one, as `"department.name"`.
    ///
    /// ```swift
    /// FetchRequest(entityName: "Person", predicate: .references("department", engineering.objectID))
    /// FetchRequest(entityName: "Person", predicate: .compare("department.name", .equal, .string("Eng")))
    /// ```
    public static func references(_ relationship: String, _ destination: ObjectID?) -> FetchPredicate {
        .compare(relationship, .equal, destination.map { .string($0.uriString) } ?? .null)
    }

    /// The number of members of the to-many `relationship` compared with `count`, pending
    /// changes included: Core Data's `employees.@count > 3`. A fetch answers it through the
    /// inverse to-one's index (the members are the objects holding a reference).
    ///
    /// ```swift
    /// FetchRequest(entityName: "Department", predicate: .memberCount("employees", .greaterThan, 3))
    /// ```
    case memberCount(String, Operator, Int)

    /// Objects whose to-many `relationship` has at least one member.
    ///
    /// ```swift
    /// FetchRequest(entityName: "Department", predicate: .hasMembers("employees"))
    /// ```
    public static func hasMembers(_ relationship: String) -> FetchPredicate {
        .memberCount(relationship, .greaterThan, 0)
    }

    /// Objects whose to-many `relationship` has `member` among its members, pending changes
    /// included: Core Data's `ANY tags == %@`. A fetch answers it from the member's side (its
    /// links, or its to-one); `.isIn(relationship, [ID URIs])` matches any of several members.
    ///
    /// ```swift
    /// FetchRequest(entityName: "Post", predicate: .hasMember("tags", swift.objectID))
    /// ```
    public static func hasMember(_ relationship: String, _ member: ObjectID) -> FetchPredicate {
        .compare(relationship, .equal, .string(member.uriString))
    }

    /// The object is one of `ids`: Core Data's `SELF IN %@`.
    ///
    /// ```swift
    /// .objectIn([ann.objectID, bob.objectID])
    /// ```
    case objectIn(Set<ObjectID>)

    /// The attribute's value equals one of the values.
    ///
    /// ```swift
    /// .isIn("city", [.string("Oslo"), .string("Rome")])
    /// ```
    case isIn(String, [AttributeValue])

    /// Every predicate holds (true for none).
    ///
    /// ```swift
    /// .and([.compare("age", .greaterThan, .int(18)), .compare("city", .equal, .string("Oslo"))])
    /// ```
    case and([FetchPredicate])

    /// At least one predicate holds (false for none).
    ///
    /// ```swift
    /// .or([.compare("city", .equal, .string("Oslo")), .compare("city", .equal, .string("Rome"))])
    /// ```
    case or([FetchPredicate])

    /// The predicate does not hold.
    ///
    /// ```swift
    /// .not(.compare("city", .equal, .null))
    /// ```
    case not(FetchPredicate)

    /// The escape hatch: your closure decides from the object's values (absent = null). It runs
    /// on the context's queue and must not touch the context.
    ///
    /// ```swift
    /// .matching { values in
    ///     if case .string(let name) = values.value(of: "name") { return name.hasPrefix("A") }
    ///     return false
    /// }
    /// ```
    case matching(@Sendable (PropertyValues) -> Bool)

    /// Whether `values` satisfy the predicate. Values alone name no object and hold no
    /// to-many members, so `.memberCount` and `.objectIn` are false here; a fetch answers them.
    ///
    /// ```swift
    /// FetchPredicate.compare("age", .lessThan, .int(18)).evaluate(["age": .int(12)])   // true
    /// ```
    public func evaluate(_ values: PropertyValues) -> Bool {
        switch self {
        case let .compare(attribute, comparison, constant):
            return Self.holds(values.value(of: attribute), comparison, constant)
        case let .isIn(attribute, constants):
            let value = values.value(of: attribute)
            return constants.contains { Self.holds(value, .equal, $0) }
        case .and(let predicates):
            return predicates.allSatisfy { $0.evaluate(values) }
        case .or(let predicates):
            return predicates.contains { $0.evaluate(values) }
        case .not(let predicate):
            return !predicate.evaluate(values)
        case .matching(let body):
            return body(values)
        case .memberCount, .objectIn:
            return false
        }
    }

    static func holds(_ value: AttributeValue, _ comparison: Operator, _ constant: AttributeValue) -> Bool {
        // Strings are equal exactly when Swift's `==` says so (canonical equivalence, the
        // order's 0), which answers at once for equal ASCII: the order's bytes are not needed.
        if comparison == .equal || comparison == .notEqual, case let .string(left) = value, case let .string(right) = constant {
            return (left == right) == (comparison == .equal)
        }
        let order = AttributeOrder.compare(value, constant)
        switch comparison {
        case .equal: return order.map { $0 == 0 } ?? (value == constant)
        case .notEqual: return !(order.map { $0 == 0 } ?? (value == constant))
        case .lessThan: return order.map { $0 < 0 } ?? false
        case .lessThanOrEqual: return order.map { $0 <= 0 } ?? false
        case .greaterThan: return order.map { $0 > 0 } ?? false
        case .greaterThanOrEqual: return order.map { $0 >= 0 } ?? false
        }
    }
}
