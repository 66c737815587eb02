import Contexts
import EtcdStorage
import Foundation
import KVEngine
import Policies
import ScenarioFormat
#if canImport(Glibc)
import Glibc
#endif

// Runs a scenario under one policy on a fresh temporary store, and records what each step
// did and the final state of every ref in the store and in each context.
//
// Rules the runner keeps:
// 1. `store` objects are committed before the first step by a context of their own, with
//    primary keys 1, 2, … per entity in file order, so a ref is the same ObjectID everywhere.
// 2. Each context is a root private-queue context, created on first use with the run's
//    policy, unless a `child` step makes it a child of another; every touch of a context goes
//    through `performAndWait`, and after each save the runner waits for the automatic merges
//    it queued, so every run is deterministic.
// 3. A step reaches its ref with `existingObject(with:)`: the registered object when there is
//    one, otherwise it is read from the store (so a step may `set` without a `fetch` first). A
//    `fetch` also reads the object's many-to-many members: the links the context then holds
//    (and overwrite writes back) are those it read.
// 4. An inserted ref has a temporary ID in its own context (and in each parent its child saves
//    push it into); once a root context saves it, the ref names the permanent ID everywhere.
// 5. A step that fails does not stop the run: its outcome is `error` with the message.
// 6. An inserted ref that a constraint merge made the stored object names that object's
//    permanent ID, so it and the stored ref print the same values.
// 7. A relationship value names refs (ScenarioValues): a to-one is set with setDestination, a
//    to-many replaced with replaceMembers, `relate` adds and removes members; the refs it names
//    are registered in the step's context (read from its store or parent) as rule 3 says. The
//    results name refs the same way: a to-many is read as its members, in the store by a reader
//    context of the runner's own, in a context by that context (after its registered refs are
//    listed, so reading members registers nothing that is reported).

/// What one step did.
struct StepRecord {
    let step: ScenarioStep
    let outcome: StepOutcome
    /// The conflicts the context's policy was asked about (saves only).
    let conflicts: [ConflictRecord]
}

/// A step's outcome: saves may conflict; any step may fail.
enum StepOutcome: Equatable {
    case ok
    /// The save threw `MergeError`.
    case conflict
    /// Anything else went wrong; the message says what.
    case error(String)

    var word: SaveOutcomeWord {
        switch self {
        case .ok: .ok
        case .conflict: .conflict
        case .error: .error
        }
    }
}

/// One conflict of a save, with the object named by its ref.
struct ConflictRecord: Equatable {
    let ref: String
    let kind: ConflictKind
    let ancestorVersion: UInt64
    let storeVersion: UInt64
    /// A constraint conflict's stored object, by its ref (or its URI when no ref names it).
    var storedRef: String? = nil
    /// A constraint conflict's attributes.
    var constraint: [String]? = nil
}

/// Everything a run under one policy ended with.
struct ScenarioResult {
    /// The policy the run is for (contexts may switch with a step's `policy`).
    let policy: String
    /// One record per step, in order.
    let records: [StepRecord]
    /// Every ref in scenario order: its committed values, or nil when it has no record.
    let store: [(ref: String, values: PropertyValues?)]
    /// Refs that had a record at some point: a nil store state of one of these means deleted.
    let savedRefs: Set<String>
    /// Per context in order of first use, every ref registered there.
    let contexts: [(context: String, refs: [(ref: String, state: InMemoryState)])]

    func storeValues(of ref: String) -> PropertyValues? {
        store.first { $0.ref == ref }?.values
    }

    func record(at index: Int) -> StepRecord? {
        records.first { $0.step.index == index }
    }
}

/// The store itself failed (exit 2): it could not be created, seeded or read.
struct ScenarioStoreError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// One run of a scenario on its own store.
final class ScenarioRunner {
    let scenario: Scenario
    let policy: any MergePolicy
    private let objects: ObjectStore

    private var contexts: [String: ObjectContext] = [:]
    private var contextOrder: [String] = []
    /// Ref → permanent ID, for store refs and for inserted refs once saved.
    private var savedIDs: [String: ObjectID] = [:]
    /// Context → ref → temporary ID, for the refs that context inserted or a child saved into it.
    private var temporaryIDs: [String: [String: ObjectID]] = [:]
    /// Child context → its parent.
    private var parents: [String: String] = [:]

    private init(scenario: Scenario, policy: any MergePolicy, objects: ObjectStore) {
        self.scenario = scenario
        self.policy = policy
        self.objects = objects
    }

    /// Where each run's fresh store is.
    enum Location {
        /// A temporary directory, removed after the run.
        case temporaryDirectory
        /// A fresh prefix `<PREFIX>/scenario-<UUID>-<policy>` on this etcd cluster.
        case etcd(EtcdConfiguration)
    }

    /// Runs `scenario` under `policy` on a fresh store at `location`.
    ///
    /// Throws `ScenarioStoreError` when the store cannot be created, seeded or read; a step
    /// that fails is an outcome, not an error.
    static func run(_ scenario: Scenario, policy: any MergePolicy, on location: Location = .temporaryDirectory) throws(ScenarioStoreError) -> ScenarioResult {
        var directory: ScratchDirectory? = nil
        defer { directory?.remove() }
        var options = ObjectStore.Options()
        // A scratch store that is removed at the end: no need to wait for fdatasync.
        options.saveDurability = .normal
        // Opening builds the indexes a schema declares: say so on stderr, as every cairn store
        // opener does, unless there is nothing to say (the scratch store is new, so its builds
        // are empty; one line per index and policy run only buried the report's own errors).
        options.indexBuildProgress = { progress in
            guard progress.entries > 0 else { return }
            FileHandle.standardError.write(Data("cairn: index \(progress)\n".utf8))
        }
        let objects: ObjectStore
        switch location {
        case .temporaryDirectory:
            let made = try ScratchDirectory(purpose: "scenario")
            directory = made
            do {
                objects = try ObjectStore(directory: made.path, schema: scenario.schema, options: options)
            } catch {
                throw ScenarioStoreError("cannot create a store in \(made.path): \(error)")
            }
        case .etcd(var cluster):
            cluster.prefix += "/scenario-\(UUID().uuidString)-\(policy.name)"
            do {
                objects = try ObjectStore(etcd: cluster, schema: scenario.schema, options: options)
            } catch {
                throw ScenarioStoreError("cannot open a store at \(cluster.url): \(error)")
            }
        }
        defer { objects.close() }
        let runner = ScenarioRunner(scenario: scenario, policy: policy, objects: objects)
        // Contexts (and the query generations they pin) go before the store closes.
        defer { runner.contexts.removeAll() }
        try runner.seed()
        let records = scenario.steps.map { runner.perform($0) }
        return try runner.result(records: records)
    }

    // MARK: - Before the first step

    private func seed() throws(ScenarioStoreError) {
        let seedContext = objects.newBackgroundContext(name: "scenario-store")
        var nextKey: [String: UInt64] = [:]
        do {
            try seedContext.performAndWait {
                var seeded: [(object: StoredObject, values: PropertyValues)] = []
                for ref in scenario.refs {
                    guard let values = ref.storeValues else { continue }
                    let key = nextKey[ref.entity.name, default: 1]
                    nextKey[ref.entity.name] = key + 1
                    let object = seedContext.insert(entity: ref.entity.name, primaryKey: key)
                    for (name, value) in values where ref.entity.relationship(named: name) == nil { object[name] = value }
                    savedIDs[ref.name] = object.objectID
                    seeded.append((object, values))
                }
                // Relationships once every object exists: a value may name a ref given later.
                for (object, values) in seeded {
                    try applyRelationships(values, to: object, contextName: "scenario-store", in: seedContext)
                }
                try seedContext.save()
            }
        } catch {
            throw ScenarioStoreError("cannot commit the scenario's store objects: \(error)")
        }
    }

    // MARK: - Steps

    private func context(named name: String) -> ObjectContext {
        if let context = contexts[name] { return context }
        let context = objects.newBackgroundContext(name: name, mergePolicy: policy)
        contexts[name] = context
        contextOrder.append(name)
        return context
    }

    /// Why a step could not do its work; becomes its `error` outcome.
    private struct StepFailure: Error, CustomStringConvertible {
        let description: String
    }

    private func perform(_ step: ScenarioStep) -> StepRecord {
        // What a step needs from another context is read on that context's queue first.
        var didSave: ContextDidSaveNotification?
        var token: QueryGenerationToken?
        switch step.action {
        case .child(let parentName):
            let parent = context(named: parentName)
            let child = parent.performAndWait { parent.newChildContext(name: step.context, mergePolicy: policy) }
            contexts[step.context] = child
            contextOrder.append(step.context)
            parents[step.context] = parentName
        case .merge(let from):
            let source = context(named: from)
            didSave = source.performAndWait { source.lastDidSaveNotification }
            guard didSave != nil else {
                return StepRecord(step: step, outcome: .error("context \(from) has no successful save to merge"), conflicts: [])
            }
        case .pin(let target) where target != "current" && target != "none":
            let source = context(named: target)
            token = source.performAndWait { source.queryGenerationToken }
            guard token != nil else {
                return StepRecord(
                    step: step, outcome: .error("context \(target) is not pinned, so there is no token to align with"),
                    conflicts: [])
            }
        default:
            break
        }

        let context = context(named: step.context)
        let record = context.performAndWait { () -> StepRecord in
            if let name = step.policy, case .success(let policy) = Scenario.policy(named: name) {
                context.mergePolicy = policy
            }
            do {
                switch step.action {
                case .fetch(let ref):
                    let object = try object(ref, for: step, in: context)
                    // Its many-to-manys are read with it: what the context holds of its links (rule 3).
                    for relationship in object.entity.relationships where relationship.isToMany
                        && scenario.schema.entity(named: relationship.destination)?.relationship(named: relationship.inverse)?.isToMany == true {
                        _ = try object.members(of: relationship.name)
                    }
                case .set(let ref, let values):
                    let object = try object(ref, for: step, in: context)
                    for (name, value) in values.sorted(by: { $0.key < $1.key }) where object.entity.relationship(named: name) == nil {
                        object[name] = value
                    }
                    try applyRelationships(values, to: object, contextName: step.context, in: context)
                case .insert(let ref, let entity, let values):
                    let object = context.insert(entity: entity)
                    for (name, value) in values.sorted(by: { $0.key < $1.key }) where object.entity.relationship(named: name) == nil {
                        object[name] = value
                    }
                    temporaryIDs[step.context, default: [:]][ref] = object.objectID
                    try applyRelationships(values, to: object, contextName: step.context, in: context)
                case let .relate(ref, relationship, add, remove):
                    let owner = try object(ref, for: step, in: context)
                    for member in remove { owner.removeMember(try object(member, in: step.context, context), from: relationship) }
                    for member in add { owner.addMember(try object(member, in: step.context, context), to: relationship) }
                case .delete(let ref):
                    context.delete(try object(ref, for: step, in: context))
                case .save:
                    return save(step, in: context)
                case .detectConflicts(let ref):
                    context.detectConflicts(for: try object(ref, for: step, in: context))
                case .refresh(let ref, let merge):
                    try context.refresh(try object(ref, for: step, in: context), mergeChanges: merge)
                case .rollback:
                    context.rollback()
                case .reset:
                    context.reset()
                case .child:
                    break  // made above
                case .merge:
                    try context.mergeChanges(fromContextDidSave: didSave!)
                case .pin(let target):
                    switch target {
                    case "current": try context.setQueryGenerationFrom(.current)
                    case "none": try context.setQueryGenerationFrom(nil)
                    default: try context.setQueryGenerationFrom(token!)
                    }
                case .autoMerge(let on):
                    context.automaticallyMergesChangesFromParent = on
                }
                return StepRecord(step: step, outcome: .ok, conflicts: [])
            } catch {
                return StepRecord(step: step, outcome: .error("\(error)"), conflicts: [])
            }
        }
        if case .save = step.action { waitForAutomaticMerges() }
        return record
    }

    /// Lets the merges that a save queued on contexts with `automaticallyMergesChangesFromParent`
    /// run before the next step: they are blocks on those contexts' queues, ahead of ours.
    /// Parents come before their children, so a merge that queues another is waited for too.
    private func waitForAutomaticMerges() {
        for name in contextOrder {
            contexts[name]!.performAndWait {}
        }
    }

    /// The ID a ref has in a context (on its queue): the temporary ID of an object the context
    /// inserted (or a child pushed into it) while it still holds that object, else the
    /// permanent ID once saved to the store.
    private func objectID(of ref: String, in contextName: String, context: ObjectContext) -> ObjectID? {
        if let temporary = temporaryIDs[contextName]?[ref], context.inMemoryState(of: temporary) != nil {
            return temporary
        }
        return savedIDs[ref] ?? temporaryIDs[contextName]?[ref]
    }

    /// The context's object for `ref` (on the context's queue).
    /// Sets the relationships `values` names on `object`, in sorted order (rule 7).
    private func applyRelationships(
        _ values: PropertyValues, to object: StoredObject, contextName: String, in context: ObjectContext
    ) throws {
        for relationship in object.entity.relationships.sorted(by: { $0.name < $1.name }) {
            guard let value = values[relationship.name] else { continue }
            let destinations = try ScenarioValues.refs(in: value).map { try self.object($0, in: contextName, context) }
            if relationship.isToMany {
                try object.replaceMembers(of: relationship.name, with: destinations)
            } else {
                object.setDestination(destinations.first, of: relationship.name)
            }
        }
    }

    private func object(_ ref: String, in contextName: String, _ context: ObjectContext) throws -> StoredObject {
        guard let id = objectID(of: ref, in: contextName, context: context) else {
            throw StepFailure(description: "ref \(ref) is not saved yet, and not inserted in context \(contextName)")
        }
        return try context.existingObject(with: id)
    }

    private func object(_ ref: String, for step: ScenarioStep, in context: ObjectContext) throws -> StoredObject {
        guard let id = objectID(of: ref, in: step.context, context: context) else {
            let inserter = temporaryIDs.first { $0.value[ref] != nil }?.key ?? "another context"
            throw StepFailure(description: "ref \(ref) was inserted in \(inserter) and is not saved yet; "
                + "other contexts can reach it once \(inserter) saves it")
        }
        let found: Result<StoredObject, ContextError>
        do {
            found = .success(try context.existingObject(with: id))
        } catch {
            found = .failure(error)
        }
        switch found {
        case .success(let object):
            return object
        case .failure(.objectNotFound):
            throw StepFailure(description: "ref \(ref) (\(id)) has no record in the store: it was deleted")
        case .failure(.unknownTemporaryID):
            throw StepFailure(description: "ref \(ref) is no longer in context \(step.context): its unsaved insert "
                + "was discarded (rollback, reset, or delete before saving)")
        case .failure(let error):
            throw error
        }
    }

    private func save(_ step: ScenarioStep, in context: ObjectContext) -> StepRecord {
        let outcome: StepOutcome
        var conflicts: [ConflictRecord]
        do {
            try context.save()
            outcome = .ok
            // Named before the refs move: after an upsert the inserted ref names the stored
            // object too, and the stored ref must stay the one the conflict was with.
            conflicts = context.lastSaveConflicts.map(record(of:))
            let inserted = (temporaryIDs[step.context] ?? [:]).filter { savedIDs[$0.key] == nil }
            if let parent = parents[step.context] {
                // The parent holds the child's inserts now, under the same temporary IDs.
                for (ref, temporaryID) in inserted where context.inMemoryState(of: temporaryID) != nil {
                    temporaryIDs[parent, default: [:]][ref] = temporaryID
                }
            } else {
                for (ref, temporaryID) in inserted {
                    if let object = try? context.existingObject(with: temporaryID), !object.objectID.isTemporaryID {
                        savedIDs[ref] = object.objectID
                    }
                }
            }
        } catch let error as MergeError {
            outcome = .conflict
            conflicts = error.conflicts.map(record(of:))
        } catch {
            outcome = .error("\(error)")
            conflicts = context.lastSaveConflicts.map(record(of:))
        }
        return StepRecord(step: step, outcome: outcome, conflicts: conflicts)
    }

    private func record(of conflict: MergeConflict) -> ConflictRecord {
        var record = ConflictRecord(
            ref: ref(ofURI: conflict.objectID) ?? conflict.objectID, kind: conflict.kind,
            ancestorVersion: conflict.ancestorVersion, storeVersion: conflict.storeVersion)
        if conflict.kind == .constraint, let stored = conflict.storedObjectID {
            record.storedRef = ref(ofURI: stored) ?? stored
            record.constraint = conflict.constraint
        }
        return record
    }

    fileprivate func ref(ofURI uri: String) -> String? {
        if let saved = savedIDs.first(where: { $0.value.uriString == uri }) { return saved.key }
        for byRef in temporaryIDs.values {
            if let temporary = byRef.first(where: { $0.value.uriString == uri }) { return temporary.key }
        }
        return nil
    }

    // MARK: - After the last step

    private func result(records: [StepRecord]) throws(ScenarioStoreError) -> ScenarioResult {
        var store: [(ref: String, values: PropertyValues?)] = []
        let reader = objects.newBackgroundContext(name: "scenario-reader")
        for ref in scenario.refs {
            guard let id = savedIDs[ref.name] else {
                store.append((ref: ref.name, values: nil))
                continue
            }
            do {
                let values = try objects.committedState(of: id)?.values
                store.append((ref: ref.name, values: try values.map { values in
                    try reader.performAndWait { try namingRefs(values, of: id, entity: ref.entity, in: reader) }
                }))
            } catch {
                throw ScenarioStoreError("cannot read \(id) (ref \(ref.name)) from the store: \(error)")
            }
        }
        var states: [(context: String, refs: [(ref: String, state: InMemoryState)])] = []
        for name in contextOrder {
            let context = contexts[name]!
            let held = context.performAndWait { () -> [(ref: String, state: InMemoryState)] in
                scenario.refs.compactMap { ref in
                    guard let id = objectID(of: ref.name, in: name, context: context),
                          let state = context.inMemoryState(of: id)
                    else {
                        return nil
                    }
                    return (ref: ref.name, state: state)
                }
            }
            // Members read after the registered refs are listed (rule 7).
            let named = context.performAndWait { () -> [(ref: String, state: InMemoryState)] in
                held.map { entry in
                    guard case .values(let values) = entry.state, let id = objectID(of: entry.ref, in: name, context: context),
                          let entity = scenario.ref(named: entry.ref)?.entity,
                          let renamed = try? namingRefs(values, of: id, entity: entity, in: context) else { return entry }
                    return (ref: entry.ref, state: .values(renamed))
                }
            }
            states.append((context: name, refs: named))
        }
        return ScenarioResult(
            policy: policy.name, records: records, store: store, savedRefs: Set(savedIDs.keys), contexts: states)
    }
}

/// A fresh directory under the temporary directory ($TMPDIR), removed with its contents.
extension ScenarioRunner {
    /// `values` of the object `id` with its relationships as the scenario names them (rule 7): a
    /// to-one's ID as its ref, a to-many as its members' refs, read in `context`.
    fileprivate func namingRefs(
        _ values: PropertyValues, of id: ObjectID, entity: EntityDescription, in context: ObjectContext
    ) throws -> PropertyValues {
        guard !entity.relationships.isEmpty else { return values }
        var named = values
        for relationship in entity.relationships {
            if relationship.isToMany {
                let members = try context.existingObject(with: id).members(of: relationship.name)
                named[relationship.name] = ScenarioValues.members(members.map { ref(of: $0.objectID) }, ordered: relationship.isOrdered)
            } else if case .string(let uri) = values.value(of: relationship.name), let target = ObjectID(uriString: uri) {
                named[relationship.name] = .string(ref(of: target))
            }
        }
        return named
    }

    /// The ref naming `id` (its URI when no ref does).
    fileprivate func ref(of id: ObjectID) -> String {
        ref(ofURI: id.uriString) ?? id.uriString
    }
}

struct ScratchDirectory {
    let path: String

    init(purpose: String) throws(ScenarioStoreError) {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array((base + "/cairn-\(purpose)-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw ScenarioStoreError("cannot create a temporary directory in \(base): \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
