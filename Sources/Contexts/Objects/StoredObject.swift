import Policies

/// One object of an entity, living in one context: Cairn's `NSManagedObject`.
///
/// Values are read and written by attribute name. An object is NOT Sendable: use it only on its
/// context's queue (inside `perform`/`performAndWait`, or on the main thread for a main-queue
/// context); pass its ``objectID`` to other contexts instead.
///
/// ```swift
/// try context.performAndWait {
///     let person = context.insert(entity: "Person")
///     person["name"] = .string("Ann")
///     person["age", as: Int.self] = 30
///     print(person.changedValues())   // ["name": "Ann", "age": 30]
///     try context.save()
/// }
/// ```
public final class StoredObject {
    /// What the object is in its context's life.
    enum Lifecycle {
        /// Made with `StoredObject(entity:)`, not yet inserted: usable from the thread that made it.
        case unattached
        /// Registered in `owner`: usable only on its queue.
        case registered
        /// Dropped by its context, for the reason given.
        case forgotten(Forgetting)
    }

    /// The object's entity.
    ///
    /// ```swift
    /// person.entity.name   // "Person"
    /// ```
    public var entity: EntityDescription { EntityDescription(layout: layout) }

    /// The entity's layout: its origin's (the object holds no reference of its own, so making
    /// and freeing an object counts one reference, not two). The hot reads go through
    /// `withLayout`, which counts none.
    var layout: EntityLayout { originReference._withUnsafeGuaranteedRef { $0.layout } }

    /// Calls `body` with the entity's layout, without a reference count.
    @inline(__always)
    func withLayout<R>(_ body: (EntityLayout) throws -> R) rethrows -> R {
        try originReference._withUnsafeGuaranteedRef { try body($0.layout) }
    }

    // `@exclusivity(unchecked)` skips the runtime's exclusivity check on every access. Relies on:
    // only the owning context's queue (the making thread while unattached) touches these fields,
    // as the queue check enforces when `checksQueueAccess` is on, and no access here overlaps another.
    // Pinned by `MisuseTests.objectOffQueue` and
    // `ContainedTricksTests.anObjectsStateReadOffItsQueueStops`.
    //
    // The fields are few and small, in an order that packs them: an object of at most 120 bytes
    // is one of the allocator's small chunks (glibc's fastbins), which a fetch allocates and a
    // reset frees for about 100 instructions less each than one of 189 bytes, consolidated with
    // its neighbours on every free. Pinned by `ContainedTricksTests.aStoredObjectFitsASmallChunk`.

    /// `origin`, retained by hand (unless `borrowsOrigin`): reads of it (the link's in `checkAccess`,
    /// the record's in a property read) take no reference count.
    @exclusivity(unchecked) private var originReference: Unmanaged<ObjectOrigin>
    @exclusivity(unchecked) var lifecycle: Lifecycle = .unattached
    /// The values now, by attribute position (see ``ObjectValues``). Read and written through
    /// `current`, or by the property subscript's own path (see `write(_:at:)`). Nil while the
    /// origin holds them undecoded (`holdsRecord`), and only then.
    @exclusivity(unchecked) private var currentStorage: ObjectValues?
    /// The ancestor's record version. Version 0: never saved.
    @exclusivity(unchecked) var ancestorVersion: UInt64 = 0
    /// The ancestor's values (last read or saved), as they differ from `currentStorage`.
    @exclusivity(unchecked) private var ancestor: AncestorValues
    /// Where the origin holds the object's record, while `holdsRecord`.
    @exclusivity(unchecked) private var recordStart: UInt32 = 0
    /// The ID's key (see `storedID`: its entity is the object's).
    @exclusivity(unchecked) private var identity: ObjectID.Identity
    /// A fetched object's values not decoded yet: its record, at `recordStart` in its origin,
    /// which a read decodes an attribute of and anything else decodes whole first (`decoded`).
    /// While it is set, the ancestor is `.same` (every change of the ancestor or the values
    /// decodes first). See ``ObjectOrigin``.
    @exclusivity(unchecked) private var holdsRecord = false
    /// Registered by ID only; values not loaded yet (loaded on first access).
    @exclusivity(unchecked) var isFaultStorage = false
    /// Whether the object holds no reference count on its origin. A read's objects hold none (a
    /// retain when made and a release when freed, atomic operations both): their context holds
    /// the read's origins while it holds the objects (`ObjectContext.readOrigins`), and gives an
    /// object a count of its own before it lets go of it (`holdOrigin()`).
    @exclusivity(unchecked) private(set) var borrowsOrigin = false
    /// Its context's registry index holds it (a fetch's objects wait unindexed: see `registry`).
    @exclusivity(unchecked) var isIndexed = false
    /// Either flag changing changes who is a to-many's member: it moves the graph epoch.
    var insertedFlag: Bool {
        get { insertedFlagStorage }
        set {
            let changed = newValue != insertedFlagStorage
            insertedFlagStorage = newValue
            if changed { noteGraphChange() }
        }
    }
    var deletedFlag: Bool {
        get { deletedFlagStorage }
        set {
            let changed = newValue != deletedFlagStorage
            deletedFlagStorage = newValue
            if changed { noteGraphChange() }
        }
    }
    @exclusivity(unchecked) private var insertedFlagStorage = false
    @exclusivity(unchecked) private var deletedFlagStorage = false

    /// Clears both flags of a forgotten object (asserted), for which `noteGraphChange` does
    /// nothing: without its checks, 30 instructions an object a save deletes.
    func clearFlagsOfForgotten() {
        assert({ if case .forgotten = lifecycle { true } else { false } }(), "flags of a registered object cleared quietly")
        insertedFlagStorage = false
        deletedFlagStorage = false
    }

    /// Sets `deletedFlag` without moving the graph epoch: for a cascade, which moves its
    /// context's once for all its members. Relies on: the caller moves the epoch of the context
    /// the object is registered in after the change, before anything reads it. Pinned by
    /// `CascadeEpochTests.aCascadeMovesTheGraphEpochOnceForItsMembers`.
    func setDeletedLeavingEpoch() {
        deletedFlagStorage = true
    }
    @exclusivity(unchecked) var conflictCheckMark = false
    /// A to-many of this object gained or lost a member since the ancestor: the object is
    /// updated (its record is written, raising its version) though its values are unchanged.
    @exclusivity(unchecked) var membershipChangedFlag = false
    /// The caller picked the primary key (`insert(entity:primaryKey:)`): a collision is the
    /// caller's error, not a reason to allocate another key.
    @exclusivity(unchecked) var hasChosenKey = false

    /// The object's ID, whose entity is always the object's own (an ID changes only from
    /// temporary to permanent): only its key is stored.
    var storedID: ObjectID {
        get { withLayout { ObjectID(entityName: $0.name, identity: identity) } }
        set {
            precondition(newValue.entityName == layout.name, "an object's ID names another entity")
            identity = newValue.identity
        }
    }

    /// `storedID.primaryKey`, without making the ID.
    var primaryKey: UInt64? {
        if case .permanent(let key) = identity { return key }
        return nil
    }

    /// The name of the context the object belongs or belonged to ("" before it is inserted).
    var ownerName: String {
        switch lifecycle {
        case .unattached: return ""
        case .registered: return link?.name ?? ""
        case .forgotten(let forgetting): return forgetting.contextName
        }
    }

    /// What the object shares with the others of its entity and context (see ``ObjectOrigin``).
    /// Replaced only when an object made with `StoredObject(entity:)` is inserted.
    var origin: ObjectOrigin {
        get { originReference.takeUnretainedValue() }
        set {
            precondition(newValue.layout === layout && !holdsRecord, "an object's origin replaced by another entity's")
            let old = originReference, borrowed = borrowsOrigin
            originReference = Unmanaged.passRetained(newValue)
            borrowsOrigin = false
            if !borrowed { old.release() }
        }
    }

    /// How the object reaches its context while registered (see ``ContextLink``); kept after
    /// the context forgets the object, but then not used (the lifecycle says it is forgotten).
    var link: ContextLink? { originReference._withUnsafeGuaranteedRef { $0.link } }

    /// A new object of `entity`, not in any context yet, holding the entity's default values.
    /// Insert it with ``ObjectContext/insert(_:)``.
    ///
    /// ```swift
    /// let person = StoredObject(entity: schema.entity(named: "Person")!)
    /// person["name"] = .string("Ann")
    /// context.insert(person)
    /// ```
    public convenience init(entity: EntityDescription) {
        self.init(inserting: ObjectOrigin(layout: entity.layout, link: nil))
    }

    /// A new object of `origin`'s entity, holding its default values, with a temporary ID.
    init(inserting origin: ObjectOrigin) {
        originReference = Unmanaged.passRetained(origin)
        identity = ObjectID.temporary(entityName: origin.layout.name).identity
        currentStorage = origin.layout.defaultValues
        ancestor = AncestorValues(origin.layout.nullValues, current: origin.layout.defaultValues)
    }

    /// An object of `id` with no values yet (a fault, or one about to be filled).
    init(origin: ObjectOrigin, id: ObjectID) {
        assert(id.entityName == origin.layout.name, "an object's ID names another entity")
        originReference = Unmanaged.passRetained(origin)
        identity = id.identity
        currentStorage = origin.layout.nullValues
        ancestor = .same
    }

    /// An object of `id` read with `values` at record `version`: its ancestor.
    init(origin: ObjectOrigin, id: ObjectID, values: ObjectValues, version: UInt64) {
        assert(id.entityName == origin.layout.name, "an object's ID names another entity")
        originReference = Unmanaged.passRetained(origin)
        identity = id.identity
        currentStorage = values
        ancestor = .same
        ancestorVersion = version
    }

    /// An object of primary key `primaryKey` read at record `version`, its values (its
    /// ancestor's too) in `record`, which ``ValueCodec/validate(_:layout:referencePosition:reference:valueOffsets:)``
    /// accepted.
    init(primaryKey: UInt64, record: RecordBytes, version: UInt64) {
        // Not retained: the read hands its origins to the context (see `borrowsOrigin`).
        originReference = record.origin
        borrowsOrigin = true
        identity = .permanent(primaryKey)
        currentStorage = nil
        holdsRecord = true
        recordStart = record.start
        ancestor = .same
        ancestorVersion = version
    }

    deinit {
        if !borrowsOrigin { originReference.release() }
    }

    /// Whether the object is as `init(primaryKey:record:version:)` made it, apart from its key,
    /// record, version and registration: nothing decoded, written, flagged or counted on its
    /// origin. Such an object's other fields hold their initial values (see ``SpareObjects``).
    var isPristineRead: Bool {
        holdsRecord && borrowsOrigin && !isFaultStorage && !insertedFlag && !deletedFlag && !conflictCheckMark
            && !membershipChangedFlag && !hasChosenKey
    }

    /// Makes a spare object (``SpareObjects``: `isPristineRead`, nothing else referencing it)
    /// what `init(primaryKey:record:version:)` makes.
    @inline(__always)
    func refill(primaryKey: UInt64, record: RecordBytes, version: UInt64) {
        originReference = record.origin
        identity = .permanent(primaryKey)
        recordStart = record.start
        ancestorVersion = version
        isIndexed = false
    }

    /// Gives the object a reference count on its origin, if it has none (see `borrowsOrigin`):
    /// its context's part, before it stops holding the origin for the object.
    func holdOrigin() {
        guard borrowsOrigin else { return }
        _ = originReference.retain()
        borrowsOrigin = false
    }

    /// Marks the origin the object borrows (see `borrowsOrigin`) as in use; nothing when it owns one.
    func markBorrowedOrigin() {
        if borrowsOrigin { originReference._withUnsafeGuaranteedRef { $0.isBorrowed = true } }
    }

    /// The values now, decoded. The choke point of every use of the values but the property
    /// subscript's read (`value(at:)`) and the ancestor's `.same` answers.
    private var decoded: ObjectValues {
        _read {
            if holdsRecord { decodeRecord() }
            yield currentStorage.unsafelyUnwrapped
        }
        _modify {
            if holdsRecord { decodeRecord() }
            yield &currentStorage!
        }
    }

    /// Decodes the record into the values: once, on the first use that needs them whole.
    @inline(never)
    private func decodeRecord() {
        guard holdsRecord else { return }
        let start = recordStart
        currentStorage = originReference._withUnsafeGuaranteedRef { origin in
            origin.withRecord(at: start) { bytes, _ in ValueCodec.decodeValidated(bytes, layout: origin.layout, sharing: origin.sharing) }
        }
        holdsRecord = false
    }

    /// Whether the values are still undecoded in a record (see ``ObjectOrigin``).
    package var holdsUndecodedRecord: Bool { holdsRecord }

    /// The value of the attribute at `position`, decoding only it while the values are in a
    /// record (unless it is a value that allocates: then the record is decoded whole, once).
    @inline(__always)
    func value(at position: Int) -> AttributeValue {
        if !holdsRecord { return currentStorage.unsafelyUnwrapped[position] }
        return undecodedValue(at: position)
    }

    private func undecodedValue(at position: Int) -> AttributeValue {
        let start = recordStart
        let value = originReference._withUnsafeGuaranteedRef { origin in
            origin.withRecord(at: start) { bytes, offsets in
                ValueCodec.validatedValue(at: position, in: bytes, layout: origin.layout, valueOffset: offsets[position])
            }
        }
        return value ?? decoded[position]
    }

    /// Whether the attribute at `position` is `value`, without decoding a record: a string is
    /// compared there byte by byte, so one equal to `value` in other bytes (another Unicode
    /// normalization) may answer false. False means "not known equal" only.
    func value(at position: Int, equals value: AttributeValue) -> Bool {
        if holdsRecord, case .string(let text) = value {
            let start = recordStart
            let same = originReference._withUnsafeGuaranteedRef { origin in
                origin.withRecord(at: start) { bytes, offsets in
                    ValueCodec.validatedValue(atOffset: offsets[position], in: bytes, isStringOf: text)
                }
            }
            if let same { return same }
        }
        return self.value(at: position) == value
    }

    /// The values now. Replacing or changing them through this property first gives the
    /// ancestor values of its own (see ``AncestorValues``).
    package var current: ObjectValues {
        _read { yield decoded }
        set {
            ancestor.detach(from: decoded)
            currentStorage = newValue
            noteGraphChange()
        }
        _modify {
            ancestor.detach(from: decoded)
            yield &currentStorage!
            noteGraphChange()
        }
    }

    /// The ancestor's values: as last read or saved.
    var ancestorValues: ObjectValues {
        get { ancestor.values(current: decoded) }
        set { ancestor = AncestorValues(newValue, current: decoded) }
    }

    /// One attribute's ancestor value. Unlike `ancestorValues[position]`, it makes no values:
    /// while a delta stands for the ancestor, those are a copy of the object's buffer.
    func ancestorValue(at position: Int) -> AttributeValue {
        // An undecoded record is its ancestor (`.same`).
        if holdsRecord { return value(at: position) }
        return ancestor.value(at: position, current: currentStorage.unsafelyUnwrapped)
    }

    /// `ancestorValue(at: position) == value`, as `value(at:equals:)` answers it (false: not
    /// known equal).
    func ancestorValue(at position: Int, equals value: AttributeValue) -> Bool {
        // An undecoded record is its ancestor (`.same`).
        if holdsRecord { return self.value(at: position, equals: value) }
        return ancestor.value(at: position, current: currentStorage.unsafelyUnwrapped) == value
    }

    /// Whether the object differs from its ancestor: in its values, or in a to-many's members.
    var hasLocalChanges: Bool { membershipChangedFlag || hasChangedValues }

    /// Whether the values differ from the ancestor's (absent counting as null).
    var hasChangedValues: Bool {
        // An undecoded record is its ancestor (`.same`).
        if holdsRecord { return false }
        return ancestor.differs(from: currentStorage.unsafelyUnwrapped)
    }

    /// Sets attribute `position` to `value`: the property subscript's path.
    @inline(__always)
    func write(_ value: AttributeValue, at position: Int) {
        if holdsRecord { decodeRecord() }
        ancestor.willWrite(at: position, in: currentStorage.unsafelyUnwrapped)
        currentStorage![position] = value
    }

    /// Values of an object with to-ones changed: its context's held references may be stale.
    @inline(__always)
    func noteGraphChange() {
        // Through `withContext`: `owner` retained and released the context per flag set.
        if !withLayout({ $0.relationships.isEmpty }), case .registered = lifecycle { _ = link?.withContext { $0.graphEpoch &+= 1 } }
    }

    /// The object's ID: temporary until its first save (or `obtainPermanentIDs`), then
    /// permanent. Read it on the context's queue; it may still be read after the context
    /// forgot the object.
    ///
    /// ```swift
    /// let id = try context.performAndWait { () throws -> ObjectID in
    ///     try context.save()
    ///     return person.objectID
    /// }
    /// ```
    public var objectID: ObjectID {
        if case .registered = lifecycle { owner?.checkQueue() }
        return storedID
    }

    /// The context the object is registered in; nil before insertion and after the context
    /// forgot it (reset, or a saved deletion).
    ///
    /// ```swift
    /// person.context === context   // true while registered
    /// ```
    public var context: ObjectContext? {
        guard case .registered = lifecycle else { return nil }
        owner?.checkQueue()
        return owner
    }

    /// Whether the object is inserted in its context and not saved yet.
    ///
    /// ```swift
    /// context.insert(entity: "Person").isInserted   // true
    /// ```
    public var isInserted: Bool {
        guard isRegisteredChecked() else { return false }
        return insertedFlag
    }

    /// Whether the object is deleted in its context and the deletion is not saved yet.
    ///
    /// ```swift
    /// context.delete(person)
    /// person.isDeleted   // true
    /// ```
    public var isDeleted: Bool {
        guard isRegisteredChecked() else { return false }
        return deletedFlag
    }

    /// Whether a saved object's values differ from what was last read or saved.
    ///
    /// Setting a property back to its saved value makes the object clean again.
    ///
    /// ```swift
    /// person["age"] = .int(31)
    /// person.isUpdated   // true
    /// ```
    public var isUpdated: Bool {
        guard isRegisteredChecked() else { return false }
        return !insertedFlag && !isFaultStorage && hasLocalChanges
    }

    /// Whether the next save would write this object: inserted, deleted or updated.
    ///
    /// ```swift
    /// if person.hasChanges { try context.save() }
    /// ```
    public var hasChanges: Bool {
        guard isRegisteredChecked() else { return false }
        return insertedFlag || deletedFlag || isUpdated
    }

    /// Whether the object is registered by ID but its values are not loaded yet; the first read
    /// or write loads them.
    ///
    /// ```swift
    /// context.object(with: id).isFault   // true until a property is touched
    /// ```
    public var isFault: Bool {
        guard isRegisteredChecked() else { return false }
        return isFaultStorage
    }

    /// The value of `property`, `.null` when unset; setting `.null` clears it.
    ///
    /// Values are checked against the schema when saved, not here, so a wrong type fails the
    /// save with ``ValidationError``. An attribute the entity does not have stops the process
    /// (a programming error, like an unknown key in Core Data).
    ///
    /// ```swift
    /// person["city"] = .string("Oslo")
    /// person["city"]   // .string("Oslo")
    /// ```
    public subscript(_ property: String) -> AttributeValue {
        get {
            checkAccess()
            return value(at: position(of: property))
        }
        set {
            checkAccess()
            let position = position(of: property)
            if position >= layout.declaredAttributes.count {
                // A to-one's stored reference: both ends change (StoredObject+Relationships.swift).
                assignReference(newValue, at: position)
            } else {
                write(newValue, at: position)
            }
        }
    }

    /// The value of `property` as a Swift type; nil when it is `.null` or of another type.
    /// Setting nil clears it.
    ///
    /// ```swift
    /// person["age", as: Int.self] = 30
    /// let age = person["age", as: Int.self] ?? 0
    /// ```
    public subscript<Value: AttributeConvertible>(_ property: String, as type: Value.Type) -> Value? {
        get { Value(attributeValue: self[property]) }
        set { self[property] = newValue?.attributeValue ?? .null }
    }

    /// The value of `key` (the same as the subscript), for code that reads like Core Data's.
    ///
    /// ```swift
    /// person.value(forKey: "name")   // .string("Ann")
    /// ```
    public func value(forKey key: String) -> AttributeValue {
        self[key]
    }

    /// Sets the value of `key` (the same as the subscript).
    ///
    /// ```swift
    /// person.setValue(.int(31), forKey: "age")
    /// ```
    public func setValue(_ value: AttributeValue, forKey key: String) {
        self[key] = value
    }

    /// All current values; unset (null) properties are absent.
    ///
    /// ```swift
    /// person.values   // ["name": "Ann", "age": 30]
    /// ```
    public var values: PropertyValues {
        checkAccess()
        return current.dictionary(layout)
    }

    /// The properties whose current value differs from the last read or saved one, with their
    /// current values (`.null` for a cleared property). For an inserted object: every set value.
    ///
    /// ```swift
    /// person["age"] = .int(31)
    /// person.changedValues()   // ["age": .int(31)]
    /// ```
    public func changedValues() -> PropertyValues {
        checkAccess()
        return current.values(at: current.differences(from: ancestorValues), layout: layout)
    }

    /// The values as last read from or saved to the store (the ancestor); empty for an object
    /// never saved.
    ///
    /// ```swift
    /// person["age"] = .int(31)
    /// person.committedValues["age"]   // .int(30)
    /// ```
    public var committedValues: PropertyValues {
        checkAccess()
        return ancestorValues.dictionary(layout)
    }

    /// The record version last read or saved (the ancestor's version); 0 for an object never
    /// saved. After a successful save it is the version that save wrote.
    ///
    /// ```swift
    /// try context.save()
    /// person.committedVersion   // 1 after the first save, 2 after the next update, …
    /// ```
    public var committedVersion: UInt64 {
        checkAccess()
        return ancestorVersion
    }

    // MARK: - Checks

    /// Whether the object is registered; checks the queue when it is.
    private func isRegisteredChecked() -> Bool {
        guard case .registered = lifecycle else { return false }
        guard let owner else { return false }
        owner.checkQueue()
        return true
    }

    /// The context the object is registered in, while that context lives.
    var owner: ObjectContext? { link?.context }

    /// Stops the process unless the object may be used here; loads a fault.
    func checkAccess() {
        switch lifecycle {
        case .unattached:
            return
        case .forgotten(let forgetting):
            contextMisuse(
                "StoredObject \(storedID) used after \(forgetting.reason); it no longer belongs to context '\(forgetting.contextName)'. "
                    + "Keep its objectID and get the object again with context.object(with:) or existingObject(with:)")
        case .registered:
            let reached: Void? = originReference._withUnsafeGuaranteedRef { origin in
                origin.link?.withContext { owner in
                    owner.checkQueue()
                    if isFaultStorage { owner.fulfillFault(self) }
                }
            }
            if reached == nil {
                contextMisuse(
                    "StoredObject \(storedID) used after its context '\(ownerName)' was deallocated; "
                        + "keep the context alive as long as its objects")
            }
        }
    }

    /// The position of attribute `property`; an attribute the entity lacks stops the process.
    @inline(__always)
    private func position(of property: String) -> Int {
        if let position = withLayout({ $0.index(of: property) }) { return position }
        unknownAttribute(property)
    }

    @inline(never)
    private func unknownAttribute(_ property: String) -> Never {
        contextMisuse(
            "entity \(entity.name) has no attribute \"\(property)\" (its attributes: "
                + entity.attributes.map(\.name).joined(separator: ", ") + ")")
    }
}

extension StoredObject: Hashable {
    /// Identity: two references are equal only when they are the same object.
    ///
    /// ```swift
    /// try context.fetch(request).first === try context.fetch(request).first   // true: no duplicates
    /// ```
    public static func == (lhs: StoredObject, rhs: StoredObject) -> Bool {
        lhs === rhs
    }

    /// Hashes the object's identity (safe off the queue: reads nothing mutable).
    ///
    /// ```swift
    /// let unique = Set(objects)
    /// ```
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }

    /// The hash a set or dictionary takes: the identity and the collection's seed mixed by
    /// SplitMix64's finalizer (every bit of the result depends on every bit of both), not
    /// SipHash: about 85 instructions less per insertion or lookup (`deletedObjects` of a
    /// cascade inserts 10,000). Only one object equals another, itself, so any function of the
    /// identity is a valid hash; an address is not chosen by whoever feeds a set, so a keyed
    /// hash buys nothing. Pinned by `ContainedTricksTests.storedObjectHashesSpreadOverBuckets`.
    public func _rawHashValue(seed: Int) -> Int {
        var mixed = UInt64(UInt(bitPattern: Int(bitPattern: ObjectIdentifier(self)))) ^ UInt64(UInt(bitPattern: seed))
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(bitPattern: UInt(mixed ^ (mixed >> 31)))
    }
}

extension StoredObject: CustomStringConvertible {
    /// The entity and ID, plus the values when read on the context's queue.
    ///
    /// ```swift
    /// print(person)   // StoredObject(cairn://Person/p1, ["age": 30, "name": "Ann"])
    /// ```
    public var description: String {
        // Never trips the queue check: descriptions are printed by test failures and debuggers.
        switch lifecycle {
        case .unattached:
            return "StoredObject(\(storedID), unattached, \(Self.render(current.dictionary(layout))))"
        case .forgotten:
            return "StoredObject(\(storedID), forgotten)"
        case .registered:
            guard let owner, owner.isOnQueue else { return "StoredObject(\(entity.name), off its context's queue)" }
            if isFaultStorage { return "StoredObject(\(storedID), fault)" }
            var flags: [String] = []
            if insertedFlag { flags.append("inserted") }
            if deletedFlag { flags.append("deleted") }
            if !insertedFlag && hasLocalChanges { flags.append("updated") }
            let state = flags.isEmpty ? "" : " " + flags.joined(separator: ",")
            return "StoredObject(\(storedID)\(state), \(Self.render(current.dictionary(layout))))"
        }
    }

    static func render(_ values: PropertyValues) -> String {
        "{" + values.keys.sorted().map { "\($0): \(values.value(of: $0))" }.joined(separator: ", ") + "}"
    }
}

/// Objects belong to one context and its queue; pass `objectID` between threads instead.
@available(*, unavailable)
extension StoredObject: Sendable {}
