/// An object's values by property name; a property absent from the dictionary counts as `.null`.
///
/// Treating "absent" and "null" alike means a context may omit nil properties without making
/// them look changed.
///
/// ```swift
/// let ann: PropertyValues = ["name": .string("Ann"), "age": .int(30)]
/// ann.value(of: "city")   // .null
/// ```
public typealias PropertyValues = [String: AttributeValue]

extension Dictionary where Key == String, Value == AttributeValue {
    /// The value of `property`, or `.null` when the property is absent.
    ///
    /// ```swift
    /// let ann: PropertyValues = ["name": .string("Ann")]
    /// ann.value(of: "name")   // .string("Ann")
    /// ann.value(of: "city")   // .null
    /// ```
    public func value(of property: String) -> AttributeValue {
        self[property] ?? .null
    }

    /// Whether both dictionaries hold the same value for every property, absent counting as `.null`.
    ///
    /// ```swift
    /// let a: PropertyValues = ["name": .string("Ann"), "city": .null]
    /// let b: PropertyValues = ["name": .string("Ann")]
    /// a.hasSameValues(as: b)   // true
    /// a == b                   // false: plain dictionary equality sees the extra key
    /// ```
    public func hasSameValues(as other: PropertyValues) -> Bool {
        differingProperties(from: other).isEmpty
    }

    /// The properties whose values differ between the two dictionaries, absent counting as `.null`.
    ///
    /// ```swift
    /// let ancestor: PropertyValues = ["age": .int(30), "city": .string("Oslo")]
    /// let ours: PropertyValues = ["age": .int(31), "city": .string("Oslo")]
    /// ours.differingProperties(from: ancestor)   // ["age"]
    /// ```
    public func differingProperties(from other: PropertyValues) -> Set<String> {
        var differing = Set<String>()
        for property in Set(keys).union(other.keys)
        where value(of: property) != other.value(of: property) {
            differing.insert(property)
        }
        return differing
    }
}
