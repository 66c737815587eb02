import Policies

/// One object's part in a save: what to write and what to expect of its record.
///
/// A save works on these entries only, never on the objects, until its commit succeeds; so a
/// save that fails, however far it got through conflict rounds, leaves every object exactly as
/// it was (the contract's "the context keeps all its pending changes").
struct SaveEntry {
    enum Step {
        /// put `values` if the key is absent (a new object).
        case insert
        /// put `values` if the record is at `ancestorVersion` (0: absent, a re-insert).
        case update
        /// delete if the record is at `ancestorVersion`.
        case delete
        /// write nothing, require the record at `ancestorVersion` (detectConflicts).
        case check
        /// write nothing; the object takes this state (nil values: the store deleted it).
        case takeStore(values: ObjectValues?, version: UInt64)
        /// write nothing; deleted here and in the store.
        case dropDeleted
        /// write nothing; a merge policy discarded the insert (a constraint conflict).
        case discardInsert
    }

    /// A stored record a constraint merge takes away: our object's own record (or a stored
    /// object it merged into before) is deleted in the commit that merges it into another.
    struct RetiredRecord {
        let id: ObjectID
        var values: ObjectValues
        var version: UInt64
    }

    let object: StoredObject
    /// The (permanent) ID the entry writes under.
    var id: ObjectID
    var step: Step
    /// What `insert` / `update` write (our values, or a policy's). A delete, which writes
    /// none, holds its layout's null values instead of its object's (`nullValues(for:)`):
    /// every step that writes is given its values when it takes the entry.
    var values: ObjectValues {
        didSet { encodedValues = nil }
    }
    /// `values` encoded ahead of the batch that writes them (a save with new objects encodes
    /// each record in the pass that collects it, while its values are in cache, and makes its
    /// batch after allocating keys). Taken by that batch: a later attempt encodes again.
    var encodedValues: [UInt8]? = nil
    /// The values the commit expects the store to hold: the object's ancestor, unless a
    /// conflict round made the store's state the ancestor.
    var ancestorValues: ObjectValues {
        get { ancestorOverride ?? object.ancestorValues }
        set { ancestorOverride = newValue }
    }
    /// One attribute of `ancestorValues`, without making them (see `StoredObject.ancestorValue(at:)`).
    func ancestorValue(at position: Int) -> AttributeValue {
        if let ancestorOverride { return ancestorOverride[position] }
        return object.ancestorValue(at: position)
    }
    /// `ancestorValue(at: position) == value`, without decoding the object's record
    /// (`StoredObject.ancestorValue(at:equals:)`: false means not known equal).
    func ancestorValue(at position: Int, equals value: AttributeValue) -> Bool {
        if let ancestorOverride { return ancestorOverride[position] == value }
        return object.ancestorValue(at: position, equals: value)
    }
    /// Nil while the ancestor is the object's own: an entry holding a copy of every object's
    /// ancestor retained it when made and released it when dropped, two atomic operations per
    /// object of a save, for values only a conflict reads.
    private var ancestorOverride: ObjectValues? = nil
    var ancestorVersion: UInt64
    /// Whether a constraint conflict merged the object into the stored object `id` names: the
    /// object takes that ID when the commit succeeds.
    var isConstraintMerge = false
    /// The records the merge deletes in the same commit.
    var retiredRecords: [RetiredRecord] = []
    /// For a member the save nullifies or cascades because it deletes their owner: the owner's
    /// entry. Should the policy cancel that delete, the member's entry is cancelled too.
    var ownerEntry: Int? = nil
    /// The many-to-many links the commit writes from this entry's object (SaveEntry+Links.swift).
    var linkWrites: [LinkWrite] = []

    init(object: StoredObject, id: ObjectID, step: Step, values: ObjectValues, ancestorVersion: UInt64) {
        self.object = object
        self.id = id
        self.step = step
        self.values = values
        self.ancestorVersion = ancestorVersion
    }

    /// The values a delete's entry holds: none of its object's. Reading those would decode a
    /// record still undecoded (a cascade's members: about 1,100 instructions a member of
    /// relationship-cascade), and holding them would retain them.
    static func nullValues(for object: StoredObject) -> ObjectValues { object.entity.layout.nullValues }

    /// Whether an insert or update writes over a record the store held (reported as an
    /// update), rather than a new one (reported as an insert).
    var updatesStoredRecord: Bool { isConstraintMerge || (!object.insertedFlag && ancestorVersion != 0) }

    /// The entity's table (the ID's entity is always the object's).
    var table: String { object.entity.layout.tableName }
    var key: [UInt8] { StorageMapping.key(for: id.primaryKey ?? 0) }

    /// The condition of the entry's operation, nil when it writes nothing.
    var condition: StorageBatch.Condition? {
        switch step {
        case .insert: return .absent
        case .update: return ancestorVersion == 0 ? .absent : .version(ancestorVersion)
        case .delete, .check: return .version(ancestorVersion)
        case .takeStore, .dropDeleted, .discardInsert: return nil
        }
    }

    /// Checks `values` against the schema. `mutating` for the reason `append(to:)` gives.
    mutating func validate() throws(ValidationError) {
        try object.entity.validate(values, of: id)
    }

    /// Encodes `values` into `encodedValues`, for the batch made later.
    mutating func encodeAhead() {
        if encodedValues == nil { encodedValues = ValueCodec.encode(values, layout: object.entity.layout) }
    }

    /// `values` encoded: the record encoded ahead, taken (moved, not copied), or encoded now.
    ///
    /// Moved rather than kept: a batch holding the entry's copy retained it once more, and the
    /// copy was released when the entries were, two atomic reference-count operations per
    /// object for a record that only a conflict round would use again.
    private mutating func takeEncodedValues() -> [UInt8] {
        encodedValues.take() ?? ValueCodec.encode(values, layout: object.entity.layout)
    }

    /// Adds the entry's operation to `batch`; false when it writes nothing.
    ///
    /// `mutating` though it changes nothing: called on an array element, a mutating method
    /// works on the element in place, where a non-mutating one was handed a copy of the whole
    /// entry (a retain and a release of everything it holds, per object).
    ///
    /// The table's name is lent from the layout (`withLayout`): taken through `table`, it was
    /// retained and released once more per entry.
    mutating func append(to batch: inout StorageBatch) -> Bool {
        guard let condition else { return false }
        switch step {
        case .insert, .update:
            let encoded = takeEncodedValues()
            object.withLayout { batch.put(encoded, forKey: key, in: $0.tableName, if: condition) }
        case .delete:
            object.withLayout { batch.delete(key, in: $0.tableName, if: condition) }
        case .check:
            object.withLayout { batch.require(condition, forKey: key, in: $0.tableName) }
        case .takeStore, .dropDeleted, .discardInsert:
            return false
        }
        return true
    }
}
