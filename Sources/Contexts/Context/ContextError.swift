import Policies

/// The errors of contexts other than validation (``ValidationError``) and merge policies
/// (``MergeError`` and whatever a custom policy throws).
///
/// ```swift
/// do {
///     let person = try context.existingObject(with: id)
/// } catch ContextError.objectNotFound(let missing) {
///     print("\(missing) was deleted")
/// }
/// ```
public enum ContextError: Error, Sendable, CustomStringConvertible {
    /// No record with this ID exists in the store (it was deleted, or never saved).
    ///
    /// ```swift
    /// ContextError.objectNotFound(ObjectID(entityName: "Person", primaryKey: 99))
    /// ```
    case objectNotFound(ObjectID)

    /// A temporary ID that this context does not know: temporary IDs mean something only in the
    /// context that inserted the object. Save, then pass the permanent ID.
    ///
    /// ```swift
    /// ContextError.unknownTemporaryID(id)
    /// ```
    case unknownTemporaryID(ObjectID)

    /// The schema has no entity of this name.
    ///
    /// ```swift
    /// ContextError.unknownEntity("Persn")
    /// ```
    case unknownEntity(String)

    /// An object inserted with a chosen primary key collides with a record already stored.
    /// Nothing was written; the context keeps its changes.
    ///
    /// ```swift
    /// ContextError.primaryKeyInUse(ObjectID(entityName: "Person", primaryKey: 1))
    /// ```
    case primaryKeyInUse(ObjectID)

    /// The store kept changing under the save: after `attempts` conditional commits, each
    /// resolved by the merge policy, the last one still found these conflicts. Nothing was
    /// written; the context keeps its changes.
    ///
    /// ```swift
    /// catch ContextError.tooManyConflictRetries(let attempts, let conflicts) { print(attempts, conflicts.count) }
    /// ```
    case tooManyConflictRetries(attempts: Int, conflicts: [MergeConflict])

    /// A stored record of this object does not decode.
    ///
    /// ```swift
    /// catch ContextError.corruptValue(let id, let error) { print(id, error.problem) }
    /// ```
    case corruptValue(ObjectID, ValueCodecError)

    /// The store underneath failed (I/O, a closed store, …), with the backend's code and the
    /// operation that failed.
    ///
    /// ```swift
    /// catch ContextError.storage(let error) { print(error) }
    /// ```
    case storage(StorageError)

    /// A fetch request's predicate or sort names an attribute the entity lacks (it would match
    /// nothing, or sort by nothing, silently).
    ///
    /// ```swift
    /// catch ContextError.unknownAttribute(let entity, let attribute) { print("\(entity) has no \(attribute)") }
    /// ```
    case unknownAttribute(entity: String, attribute: String)

    /// A fetch request's predicate compares an attribute with a value of another type (ints and
    /// doubles compare as numbers; `.null` goes with every type).
    ///
    /// ```swift
    /// catch ContextError.predicateTypeMismatch(let entity, let attribute, let expected, let found) { … }
    /// ```
    case predicateTypeMismatch(entity: String, attribute: String, expected: AttributeType, found: AttributeValue)

    /// Opening a store whose schema adds a uniqueness constraint found stored objects that
    /// break it: at least these two hold the same values (or one holds values too long for a
    /// constraint entry, then `objectIDs` names it alone). Nothing was written: fix the data
    /// with the old schema, then open again.
    ///
    /// ```swift
    /// catch ContextError.uniquenessViolatedByStoredObjects(let entity, let constraint, let ids) { … }
    /// ```
    case uniquenessViolatedByStoredObjects(entity: String, constraint: [String], objectIDs: [ObjectID])

    /// Opening a store whose recorded schema differs from the one given in a way only a
    /// migration closure can bridge (a type change, a new required attribute without a
    /// default): every difference found, automatic ones included (see
    /// ``SchemaDifference/isAutomatic``). Nothing was written; open with the old schema, or
    /// set ``ObjectStore/Options/migration``.
    ///
    /// ```swift
    /// catch ContextError.incompatibleSchema(let differences) { differences.forEach { print($0) } }
    /// ```
    case incompatibleSchema([SchemaDifference])

    /// A migration on open could not migrate this stored object: the migration closure threw,
    /// or left values that do not fit the new schema (`reason` says which). Nothing was
    /// written; the store keeps its old schema and records.
    ///
    /// ```swift
    /// catch ContextError.migrationFailed(let id, let reason) { print(id, reason) }
    /// ```
    case migrationFailed(ObjectID, reason: String)

    /// What went wrong, naming the object or entity.
    ///
    /// ```swift
    /// print(ContextError.unknownEntity("Persn"))   // the schema has no entity named "Persn"
    /// ```
    public var description: String {
        switch self {
        case .objectNotFound(let id):
            return "object \(id) does not exist in the store (deleted, or never saved)"
        case .unknownTemporaryID(let id):
            return "temporary ID \(id) is not known to this context; temporary IDs are valid only in the "
                + "context that inserted the object: save it and use the permanent ID"
        case .unknownEntity(let name):
            return "the schema has no entity named \"\(name)\""
        case .primaryKeyInUse(let id):
            return "cannot insert \(id): a record with that primary key already exists; nothing was written"
        case let .tooManyConflictRetries(attempts, conflicts):
            return "save gave up after \(attempts) conditional commits: the store kept changing under it "
                + "(\(conflicts.count) conflict(s) on the last attempt); nothing was written"
        case let .corruptValue(id, error):
            return "stored value of \(id) is corrupt: \(error)"
        case .storage(let error):
            return "storage error: \(error)"
        case let .unknownAttribute(entity, attribute):
            return "entity \(entity) has no attribute named \"\(attribute)\" (named in a fetch request's predicate or sort)"
        case let .predicateTypeMismatch(entity, attribute, expected, found):
            return "a predicate compares \(entity).\(attribute), of type \(expected), with \(found), a value of another type"
        case let .uniquenessViolatedByStoredObjects(entity, constraint, ids):
            let what = ids.count == 1 ? "\(ids[0]) holds values too long for a constraint entry"
                : ids.map(\.description).joined(separator: " and ") + " hold the same values"
            return "cannot add the uniqueness constraint [\(constraint.joined(separator: ", "))] to entity \(entity): "
                + "\(what); nothing was written"
        case .incompatibleSchema(let differences):
            return "the store's schema differs from the one given in ways only a migration closure "
                + "(ObjectStore.Options.migration) can migrate; nothing was written:\n"
                + differences.map { "  " + $0.description }.joined(separator: "\n")
        case let .migrationFailed(id, reason):
            return "cannot migrate \(id): \(reason); nothing was written, the store keeps its old schema"
        }
    }
}

extension ContextError {
    /// The error a read of a ``StorageReadView`` threw, as a ContextError. A view throws
    /// ``StorageError`` for its own failures and passes on what its closures throw, which in
    /// this module are ContextErrors; anything else would be a closure of ours breaking that.
    init(readFailure error: any Error) {
        switch error {
        case let error as ContextError: self = error
        case let error as StorageError: self = .storage(error)
        default: preconditionFailure("a storage read's closure threw \(type(of: error)): \(error)")
        }
    }
}
