import Policies

/// An object's values do not fit its entity; thrown by `save()`, which then writes nothing.
///
/// Objects are checked in the order they were registered in the context, attributes in schema
/// order; the first problem found is thrown.
///
/// ```swift
/// do {
///     try context.save()
/// } catch let error as ValidationError {
///     print(error.entityName, error.attributeName, error.problem)   // Person age missingValue
/// }
/// ```
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the attribute's value.
    ///
    /// ```swift
    /// if case .wrongType(let expected, let found) = error.problem { print(expected, found) }
    /// ```
    public enum Problem: Sendable, Hashable {
        /// The value is not of the attribute's type.
        ///
        /// ```swift
        /// ValidationError.Problem.wrongType(expected: .int, found: .string("thirty"))
        /// ```
        case wrongType(expected: AttributeType, found: AttributeValue)
        /// A required attribute is `.null` (or was never set).
        ///
        /// ```swift
        /// ValidationError.Problem.missingValue
        /// ```
        case missingValue
        /// The entity has no attribute of this name (for example a Codable struct's extra field,
        /// or a value written by a custom merge policy).
        ///
        /// ```swift
        /// ValidationError.Problem.unknownAttribute
        /// ```
        case unknownAttribute
        /// Another object of the same save holds the same values of this uniqueness constraint
        /// (``ValidationError/attributeName`` is its first attribute). Under every merge policy:
        /// a policy resolves a duplicate of a stored object, never two of its own save.
        ///
        /// ```swift
        /// ValidationError.Problem.duplicateInSave(constraint: ["email"], otherObjectID: other.objectID)
        /// ```
        case duplicateInSave(constraint: [String], otherObjectID: ObjectID)
        /// The values of this uniqueness constraint encode to more bytes than a constraint
        /// entry's key can hold (the store's 511-byte key limit).
        ///
        /// ```swift
        /// ValidationError.Problem.constrainedValuesTooLong(constraint: ["email"], bytes: 600)
        /// ```
        case constrainedValuesTooLong(constraint: [String], bytes: Int)
        /// The object is deleted but its relationship (named by `attributeName`), whose delete
        /// rule is `deny`, still has this many destinations.
        ///
        /// ```swift
        /// if case .deleteDenied(let destinations) = error.problem { print(destinations) }
        /// ```
        case deleteDenied(destinations: Int)
    }

    /// The object whose value is wrong.
    ///
    /// ```swift
    /// error.objectID.uriRepresentation   // cairn://Person/t…
    /// ```
    public let objectID: ObjectID

    /// The object's entity.
    ///
    /// ```swift
    /// error.entityName   // "Person"
    /// ```
    public let entityName: String

    /// The attribute whose value is wrong.
    ///
    /// ```swift
    /// error.attributeName   // "age"
    /// ```
    public let attributeName: String

    /// What is wrong.
    ///
    /// ```swift
    /// error.problem == .missingValue
    /// ```
    public let problem: Problem

    /// Creates the error.
    ///
    /// ```swift
    /// ValidationError(objectID: id, entityName: "Person", attributeName: "age", problem: .missingValue)
    /// ```
    public init(objectID: ObjectID, entityName: String, attributeName: String, problem: Problem) {
        self.objectID = objectID
        self.entityName = entityName
        self.attributeName = attributeName
        self.problem = problem
    }

    /// Names the entity, the attribute, the object and the problem.
    ///
    /// ```swift
    /// print(error)   // Person.age of cairn://Person/t…: a value is required but it is null
    /// ```
    public var description: String {
        let what: String
        switch problem {
        case let .wrongType(expected, found):
            let foundType = AttributeType(of: found).map(\.description) ?? "null"
            what = "expected a value of type \(expected), found \(found) of type \(foundType)"
        case .missingValue:
            what = "a value is required but it is null"
        case .unknownAttribute:
            what = "the entity has no such attribute"
        case let .duplicateInSave(constraint, other):
            what = "the same save also gives \(other) these values of the uniqueness constraint "
                + "[\(constraint.joined(separator: ", "))]"
        case let .constrainedValuesTooLong(constraint, bytes):
            what = "the values of the uniqueness constraint [\(constraint.joined(separator: ", "))] encode to "
                + "\(bytes) bytes, over the \(StorageMapping.maxKeyBytes)-byte limit of a constraint entry"
        case .deleteDenied(let destinations):
            what = "the object is deleted but the relationship's delete rule is deny and it has \(destinations) "
                + (destinations == 1 ? "destination" : "destinations")
        }
        return "\(entityName).\(attributeName) of \(objectID): \(what)"
    }
}

extension EntityDescription {
    /// Checks `values` against this entity; the first problem in attribute order, unknown
    /// properties (sorted by name) last.
    func validate(_ values: PropertyValues, of objectID: ObjectID) throws(ValidationError) {
        for attribute in attributes {
            try check(values.value(of: attribute.name), of: attribute, objectID: objectID)
        }
        for property in values.keys.sorted() where attribute(named: property) == nil {
            throw ValidationError(
                objectID: objectID, entityName: name, attributeName: property, problem: .unknownAttribute)
        }
    }

    /// The same check of an object's values by position.
    func validate(_ values: ObjectValues, of objectID: ObjectID) throws(ValidationError) {
        let attributes = layout.attributes
        for position in attributes.indices {
            try check(values[position], of: attributes[position], objectID: objectID)
        }
        if let property = values.extras?.keys.sorted().first {
            throw ValidationError(
                objectID: objectID, entityName: name, attributeName: property, problem: .unknownAttribute)
        }
    }

    private func check(_ value: AttributeValue, of attribute: AttributeDescription, objectID: ObjectID) throws(ValidationError) {
        if case .null = value {
            if !attribute.isOptional {
                throw ValidationError(
                    objectID: objectID, entityName: name, attributeName: attribute.name, problem: .missingValue)
            }
        } else if !attribute.type.accepts(value) {
            throw ValidationError(
                objectID: objectID, entityName: name, attributeName: attribute.name,
                problem: .wrongType(expected: attribute.type, found: value))
        }
    }
}
