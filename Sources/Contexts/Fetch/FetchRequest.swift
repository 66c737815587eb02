/// What to fetch: objects of one entity, optionally filtered, sorted and paged.
///
/// ```swift
/// let request = FetchRequest(
///     entityName: "Person",
///     predicate: .and([.compare("age", .greaterThanOrEqual, .int(18)), .isIn("city", [.string("Oslo"), .string("Rome")])]),
///     sortDescriptors: [.descending("age"), .ascending("name")],
///     fetchLimit: 10)
/// let adults = try context.fetch(request)
/// ```
public struct FetchRequest: Sendable {
    /// Sorts fetched objects by one attribute.
    ///
    /// Ascending order puts nulls first; ints and doubles sort together as numbers; values of
    /// different types (possible only before a save validates them) sort by type:
    /// bool < numbers < string < bytes < date.
    ///
    /// ```swift
    /// request.sortDescriptors = [.ascending("name"), .descending("age")]
    /// ```
    public struct SortDescriptor: Sendable, Hashable {
        /// The attribute to sort by.
        ///
        /// ```swift
        /// FetchRequest.SortDescriptor.ascending("age").attribute   // "age"
        /// ```
        public var attribute: String
        /// Whether smaller values come first.
        ///
        /// ```swift
        /// FetchRequest.SortDescriptor.descending("age").ascending   // false
        /// ```
        public var ascending: Bool

        /// Sorts by `attribute`, ascending unless told otherwise.
        ///
        /// ```swift
        /// FetchRequest.SortDescriptor(attribute: "age", ascending: false)
        /// ```
        public init(attribute: String, ascending: Bool = true) {
            self.attribute = attribute
            self.ascending = ascending
        }

        /// Sorts by `attribute`, smallest first.
        ///
        /// ```swift
        /// request.sortDescriptors = [.ascending("name")]
        /// ```
        public static func ascending(_ attribute: String) -> SortDescriptor {
            SortDescriptor(attribute: attribute, ascending: true)
        }

        /// Sorts by `attribute`, largest first.
        ///
        /// ```swift
        /// request.sortDescriptors = [.descending("age")]
        /// ```
        public static func descending(_ attribute: String) -> SortDescriptor {
            SortDescriptor(attribute: attribute, ascending: false)
        }
    }

    /// The entity whose objects are fetched.
    ///
    /// ```swift
    /// FetchRequest(entityName: "Person").entityName   // "Person"
    /// ```
    public var entityName: String

    /// Which objects match; nil matches all.
    ///
    /// ```swift
    /// request.predicate = .compare("name", .equal, .string("Ann"))
    /// ```
    public var predicate: FetchPredicate?

    /// The order of the results, first descriptor first; ties keep the base order (stored
    /// objects by primary key, then this context's pending inserts in insertion order).
    ///
    /// ```swift
    /// request.sortDescriptors = [.descending("age")]
    /// ```
    public var sortDescriptors: [SortDescriptor]

    /// At most this many objects (after the offset); nil for no limit.
    ///
    /// ```swift
    /// request.fetchLimit = 20
    /// ```
    public var fetchLimit: Int?

    /// Skips this many matching objects first.
    ///
    /// ```swift
    /// request.fetchOffset = 40   // the third page of 20
    /// ```
    public var fetchOffset: Int

    /// Whether the fetch may read through an index (false: always a scan). For tests that
    /// compare both ways; `package`: not public API.
    package var usesIndexes = true

    /// Relationships whose destinations the fetch loads along with its results, in one pass per
    /// relationship instead of one read per fault (Core Data's name): a to-one's destinations
    /// by ID, a to-many's members through their to-one's index. `"a.b"` goes on from `a`'s
    /// destinations to theirs.
    ///
    /// ```swift
    /// var request = FetchRequest(entityName: "Department")
    /// request.relationshipKeyPathsForPrefetching = ["employees"]
    /// ```
    public var relationshipKeyPathsForPrefetching: [String] = []

    /// Creates a request; everything but the entity is optional.
    ///
    /// ```swift
    /// let everyone = FetchRequest(entityName: "Person")
    /// let page = FetchRequest(entityName: "Person", sortDescriptors: [.ascending("name")], fetchLimit: 20, fetchOffset: 20)
    /// ```
    public init(
        entityName: String, predicate: FetchPredicate? = nil, sortDescriptors: [SortDescriptor] = [],
        fetchLimit: Int? = nil, fetchOffset: Int = 0
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
    }
}
