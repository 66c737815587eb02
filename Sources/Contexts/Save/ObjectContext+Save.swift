import Policies

// Saving: one conditional commit, conflicts to the merge policy, commit again (bounded).
// The contract is the project's merge-semantics spec, restated in Docs/MergePolicies.md.
//
// A child context's save takes another path: ObjectContext+Parent.swift applies its changes to
// the parent's objects, with no commit, no version check and no policy.

extension ObjectContext {
    /// Writes every pending insert, update and delete to the store in one all-or-nothing,
    /// conditional commit, resolving conflicts with ``mergePolicy``.
    ///
    /// Each updated or deleted object (and each one marked with ``detectConflicts(for:)``)
    /// expects the store to still hold the record version it last read; inserted objects expect
    /// their key to be free. When any expectation fails, nothing is written: the conflicts go to
    /// the merge policy, its resolutions are applied, and the save commits again, at most
    /// ``ObjectStore/Options/maxSaveAttempts`` times.
    ///
    /// After success: inserted objects have permanent IDs (their temporary IDs still find them
    /// here), every saved object's committed values and version are what was written, and
    /// deleted objects are forgotten. After any failure: nothing is written and every object is
    /// exactly as before the call, so you can `refresh(_:mergeChanges: true)` and save again.
    ///
    /// ```swift
    /// do {
    ///     try context.save()
    /// } catch let error as MergeError {
    ///     for conflict in error.conflicts {
    ///         try context.refresh(context.object(with: ObjectID(uriString: conflict.objectID)!), mergeChanges: true)
    ///     }
    ///     try context.save()
    /// }
    /// ```
    ///
    /// - Throws: ``ValidationError``; ``MergeError`` from the default error policy, or whatever
    ///   a custom policy throws (and `ResolutionCountMismatch`); ``ContextError`` for a chosen
    ///   primary key in use, too many conflict rounds, or a storage failure.
    public func save() throws {
        checkQueue()
        var report = SaveReport()
        defer { lastSaveReportStorage = report }
        guard hasSaveWork else {
            report.succeeded = true
            cascadeReads.removeAll()
            advanceQueryGeneration()
            return
        }
        // Before the will-save, which lists the to-many ends this marks as updated.
        if parent == nil && core.schema.hasRelationships { try prepareRelationshipsForSave() }
        let willSave = postWillSave()
        if parent != nil {
            try saveToParent(&report)
        } else {
            try performSave(&report, willSave: (willSave.updated.ids, willSave.deleted.ids))
        }
        report.succeeded = true
        cascadeReads.removeAll()
        advanceQueryGeneration()
        let note = ContextDidSaveNotification(
            contextName: name, insertedObjectIDs: report.insertedObjectIDs, updatedObjectIDs: report.updatedObjectIDs,
            deletedObjectIDs: report.deletedObjectIDs, commitVersion: report.commitVersion,
            temporaryIDs: report.temporaryIDs, isSaveToParent: report.savedToParent)
        lastDidSaveStorage = note
        postDidSave(note, reusing: willSave)
        deliverAutomaticMerges(note)
        PostedIDSets.dropElsewhere(consume willSave)
    }

    /// Whether a save has anything to write or check.
    private var hasSaveWork: Bool {
        // The registered objects, in order (without indexing them: see `registry`).
        objectsInOrder.contains { object in
            !object.isFaultStorage
                && (object.insertedFlag || object.deletedFlag || object.conflictCheckMark || isUpdated(object))
        }
    }

    /// What the last `save()` did, successful or not; nil before the first save and after
    /// ``reset()``.
    ///
    /// ```swift
    /// try context.save()
    /// context.lastSaveReport?.attempts   // 1 when nothing conflicted
    /// ```
    public var lastSaveReport: SaveReport? {
        checkQueue()
        return lastSaveReportStorage
    }

    /// Every conflict the last save's policy was asked about (all rounds); empty when none.
    ///
    /// ```swift
    /// context.mergePolicy = .storeTrump
    /// try context.save()
    /// context.lastSaveConflicts.map(\.kind)   // [.updateUpdate]
    /// ```
    public var lastSaveConflicts: [MergeConflict] {
        checkQueue()
        return lastSaveReportStorage?.conflicts.flatMap { $0 } ?? []
    }

    // MARK: - The save

    /// `willSave`: the will-save's lists of updated and deleted objects, which the report takes
    /// when it lists the same (see `finish`).
    private func performSave(_ report: inout SaveReport, willSave: PostedListMatch.Lists) throws {
        let policy = mergePolicy
        var firstBatch: (batch: StorageBatch, entryOfOperation: [Int])? = nil
        var entries = try collectEntries(firstBatch: &firstBatch)
        guard !entries.isEmpty else {
            report.succeeded = true
            return
        }
        let maxAttempts = max(1, core.options.maxSaveAttempts)
        while true {
            var batch = StorageBatch()
            var entryOfOperation: [Int] = []
            if let made = firstBatch.take() {
                (batch, entryOfOperation) = made
            } else {
                batch.reserveCapacity(entries.count)
                entryOfOperation.reserveCapacity(entries.count)
                for index in entries.indices where entries[index].append(to: &batch) {
                    entryOfOperation.append(index)
                }
            }
            // After the record operations: operation i stays entry i's record (`finish`).
            if core.schema.hasIndexes {
                // Growing a batch of 10,000 operations twice moved all of them each time.
                batch.reserveCapacity(batch.count + SaveEntry.reservedIndexOperations * entries.count)
                var recent = RecentIndexKeys()
                for index in entries.indices { entries[index].appendIndexOperations(to: &batch, recent: &recent) }
            }
            if core.hasManyToMany { try appendLinkOperations(of: entries, to: &batch) }
            var keyRoles: [StorageKey: SaveKeyRole] = [:]
            if core.schema.hasUniquenessConstraints { appendUniquenessOperations(of: entries, to: &batch, roles: &keyRoles) }
            guard !batch.isEmpty else {
                // Every entry resolved to "write nothing" (take the store's state, both deleted).
                finish(consume entries, recordVersions: [], entryOfOperation: [], commitVersion: nil,
                       willSave: willSave, report: &report)
                return
            }
            report.attempts += 1
            let outcome: StorageCommitOutcome
            do {
                // The history record goes into the same commit, so it is there exactly when the data is.
                // The batch is handed over (`consume`): a copy left its operations shared, and
                // the storage could not move their keys and values on.
                if core.options.tracksHistory, let record = historyRecord(of: entries) {
                    outcome = try core.storage.commit(consume batch, durability: core.options.saveDurability,
                                                      keyedByVersion: record, in: StorageMapping.historyTable)
                } else {
                    outcome = try core.storage.commit(consume batch, durability: core.options.saveDurability)
                }
            } catch {
                throw ContextError.storage(error)
            }
            switch outcome {
            case let .committed(version, recordVersions):
                finish(consume entries, recordVersions: recordVersions, entryOfOperation: entryOfOperation,
                       commitVersion: version, willSave: willSave, report: &report)
                return
            case .conditionsFailed(let failures):
                let round = try conflicts(after: failures, in: &entries, roles: keyRoles)
                guard report.attempts < maxAttempts else {
                    throw ContextError.tooManyConflictRetries(attempts: report.attempts, conflicts: round.conflicts)
                }
                guard !round.conflicts.isEmpty else { continue }  // only races or a re-allocated key
                report.conflicts.append(round.conflicts)
                var resolutions = try policy.resolutions(for: round.conflicts)
                report.resolutions.append(resolutions)
                // A resolution's link properties settle the links; the rest is the object's.
                let links = core.hasManyToMany ? takeLinkDecisions(from: &resolutions, round: round) : []
                for (position, resolution) in resolutions.enumerated() {
                    if let target = round.constraintTargets[position] {
                        try apply(resolution, to: &entries[round.entryIndices[position]], mergingInto: target)
                    } else {
                        try apply(resolution, to: &entries[round.entryIndices[position]], theirs: round.theirs[position])
                    }
                }
                if core.hasManyToMany { try settleLinks(links, round: round, in: &entries) }
                if core.schema.hasRelationships { try repairReferences(in: &entries, resolved: round.entryIndices, theirs: round.theirs) }
            }
        }
    }

    /// The save set as entries, after validating it and allocating keys for new objects.
    ///
    /// Each object's record is encoded in the pass, while its values are in cache: a pass of
    /// its own over 10,000 entries missed on each object's values again. When no object is
    /// new (so every entry's key is known in the pass), the pass also makes the first
    /// commit's batch into `firstBatch`.
    private func collectEntries(firstBatch: inout (batch: StorageBatch, entryOfOperation: [Int])?) throws -> [SaveEntry] {
        // One pass decides each object's step (comparing values once per object) and makes its
        // entry, under the ID it has now; inserted objects get their permanent IDs below.
        var entries: [SaveEntry] = []
        var insertedEntries: [Int] = []
        let objects = objectsInOrder
        // At most one entry per registered object: room for all of them at once instead of
        // regrowing a dozen times (moving every entry each time) for a save of many. What is
        // not used is address space only, and freed at the end of the save.
        entries.reserveCapacity(objects.count)
        var batch = StorageBatch()
        var entryOfOperation: [Int] = []
        // With indexes, room for the index operations `performSave` adds too, so the batch is
        // not made again at that size, its operations moved.
        batch.reserveCapacity(objects.count * (core.schema.hasIndexes ? 1 + SaveEntry.reservedIndexOperations : 1))
        entryOfOperation.reserveCapacity(objects.count)
        // The deletes whose members the store may hold beyond this context's view (the filter
        // `includeStoreMembers` applies), listed while each object is in cache: its own pass
        // over a cascade's 10,000 entries missed on each object and its origin again.
        var ownersOfMembers: [Int] = []
        let hasOneToOne = core.schema.hasOneToOne
        for position in objects.indices {
            // Read without a count of its own (`objects` holds it to the end of the pass), and
            // lent to the steps below as it is: iterating the list retained and released each.
            try Unmanaged.passUnretained(objects[position])._withUnsafeGuaranteedRef { object in
                if object.isFaultStorage { return }
                // `writes`: an insert or an update, told apart below by this flag rather than by
                // `step`, whose every copy (its cases may hold values) is an outlined call.
                let step: SaveEntry.Step, deletes: Bool, writes: Bool
                if object.insertedFlag {
                    (step, deletes, writes) = (.insert, false, true)
                    insertedEntries.append(entries.count)
                } else if object.deletedFlag {
                    (step, deletes, writes) = (.delete, true, false)
                } else if isUpdated(object) {
                    (step, deletes, writes) = (.update, false, true)
                } else if object.conflictCheckMark {
                    (step, deletes, writes) = (.check, false, false)
                } else {
                    return
                }
                entries.append(SaveEntry(
                    object: object, id: object.storedID, step: step,
                    values: deletes ? SaveEntry.nullValues(for: object) : object.current, ancestorVersion: object.ancestorVersion))
                if deletes && (hasOneToOne || object.withLayout({ $0.hasToMany })) { ownersOfMembers.append(entries.count - 1) }
                // Validated here, in the same pass (and so in the same order) as before, while the
                // object is in cache: a separate pass over 10,000 objects misses on each again.
                // Through the entry, in place: validating the object's own values retained and
                // released them, its entity and its ID, per object.
                if writes && !object.deletedFlag { try entries[entries.count - 1].validate() }
                if insertedEntries.isEmpty {
                    if entries[entries.count - 1].append(to: &batch) { entryOfOperation.append(entries.count - 1) }
                } else {
                    // From the first new object on, keys wait for allocation: the batch begun is
                    // dropped below, and the first attempt builds one from the kept records.
                    if writes { entries[entries.count - 1].encodeAhead() }
                }
            }
        }
        // Entries added below (ends of links, members of deletes, one-to-one partners) need the batch made again.
        var addedEntries = false
        if core.hasManyToMany, try planLinkWrites(in: &entries) { addedEntries = true }
        // The members of deleted objects as the store holds them, which this context may not see.
        if core.schema.hasRelationships {
            // Link planning may have added deletes: then every entry (the function takes the
            // deletes among them).
            let candidates = core.hasManyToMany ? Array(entries.indices) : ownersOfMembers
            if try includeStoreMembers(ofDeletesAmong: candidates, in: &entries, deletedAreDeletes: true) {
                try nullifyReferencesToDeleted(in: &entries)
                addedEntries = true
            }
        }
        if core.schema.hasOneToOne, try repairOneToOnePairs(in: &entries, first: []) { addedEntries = true }
        if addedEntries {
            batch = StorageBatch()
            entryOfOperation = []
            for index in entries.indices where entries[index].append(to: &batch) { entryOfOperation.append(index) }
        }
        // Before keys are allocated: a duplicate within the save costs the store nothing.
        if core.schema.hasUniquenessConstraints { try checkUniquenessWithinSave(entries) }
        if insertedEntries.isEmpty {
            firstBatch = (batch, entryOfOperation)
        } else {
            let newIDs = try allocateKeys(for: insertedEntries.map { entries[$0].object })
            for index in insertedEntries {
                if let newID = newIDs[ObjectIdentifier(entries[index].object)] { entries[index].id = newID }
            }
            if core.schema.hasRelationships { resolveTemporaryReferences(in: &entries, insertedEntries: insertedEntries) }
        }
        return entries
    }

    struct ConflictRound {
        var conflicts: [MergeConflict] = []
        var entryIndices: [Int] = []
        var theirs: [(values: ObjectValues, version: UInt64)?] = []
        /// For a constraint conflict, the stored object ours would duplicate; nil for the others.
        var constraintTargets: [ConstraintTarget?] = []
    }

    /// Reads the store's state of every failed key and turns the failures into conflicts;
    /// failures that are not conflicts (both deleted, a race already over, an allocated key
    /// taken meanwhile) are handled on the entries directly.
    private func conflicts(
        after failures: [FailedStorageCondition], in entries: inout [SaveEntry], roles: [StorageKey: SaveKeyRole]
    ) throws -> ConflictRound {
        var entryIndexByKey: [StorageKey: Int] = [:]
        for (index, entry) in entries.enumerated() where entry.condition != nil {
            entryIndexByKey[StorageKey(table: entry.table, key: entry.key)] = index
        }
        var failedIndices: [Int] = []
        var otherFailures: [(key: StorageKey, role: SaveKeyRole)] = []
        for failure in failures {
            if let index = entryIndexByKey[failure.key] {
                failedIndices.append(index)
            } else if let role = roles[failure.key] {
                otherFailures.append((failure.key, role))
            } else {
                throw ContextError.storage(StorageError(
                    code: .conditionsFailed, operation: "commit",
                    message: "commit conditions the save did not set failed: "
                        + failures.map(\.description).joined(separator: "; ")))
            }
        }
        let failedEntries = Set(failedIndices).sorted()
        let view = try core.readView()
        defer { view.close() }
        let stored = try core.committedStates(
            of: failedEntries.map { (entries[$0].id, entries[$0].object.entity) }, in: view)
        var round = ConflictRound()
        for (position, index) in failedEntries.enumerated() {
            let entry = entries[index]
            let theirs = stored[position]
            let kind: ConflictKind
            switch entry.step {
            case .insert:
                if entry.object.hasChosenKey { throw ContextError.primaryKeyInUse(entry.id) }
                // An allocated key that someone took with a chosen key after we got it: take another.
                let key = try core.allocatePrimaryKeys(count: 1, for: entry.id.entityName)[0]
                entries[index].id = ObjectID(entityName: entry.id.entityName, primaryKey: key)
                continue
            case .delete:
                guard let theirs else {
                    entries[index].step = .dropDeleted  // deleted on both sides: not a conflict
                    continue
                }
                if theirs.version == entry.ancestorVersion { continue }
                kind = .deleteUpdate
            case .update, .check:
                if (theirs?.version ?? 0) == entry.ancestorVersion { continue }
                kind = theirs == nil ? .updateDelete : .updateUpdate
            case .takeStore, .dropDeleted, .discardInsert:
                continue  // wrote nothing, so cannot have failed
            }
            let layout = entry.object.entity.layout
            round.conflicts.append(MergeConflict(
                objectID: entry.id.uriString, kind: kind,
                ancestorValues: entry.ancestorValues.dictionary(layout), ancestorVersion: entry.ancestorVersion,
                ourValues: kind == .deleteUpdate ? nil : entry.values.dictionary(layout),
                storeValues: theirs?.values.dictionary(layout), storeVersion: theirs?.version ?? 0))
            round.entryIndices.append(index)
            round.theirs.append(theirs)
            round.constraintTargets.append(nil)
        }
        if core.hasManyToMany { try addLinkProperties(to: &round, entries: entries, view: view) }
        // An entry whose record conflicts settles that first; its constraints are checked again
        // by the next commit.
        try addConstraintConflicts(otherFailures, skipping: Set(failedEntries), in: &entries, view: view, to: &round)
        return round
    }

    /// Applies one resolution to its entry; the store's state becomes the entry's ancestor, so
    /// the next commit expects exactly what the policy saw.
    private func apply(_ resolution: Resolution, to entry: inout SaveEntry, theirs: (values: ObjectValues, version: UInt64)?) throws {
        switch resolution {
        case .write(let values):
            try entry.object.entity.validate(values, of: entry.id)
            entry.values = ObjectValues(values, layout: entry.object.entity.layout)
            entry.step = .update
            if let theirs {
                entry.ancestorValues = theirs.values
                entry.ancestorVersion = theirs.version
            } else {
                entry.ancestorVersion = 0  // re-insert under the same ID, expecting the key absent
            }
        case .delete:
            if let theirs {
                entry.step = .delete
                entry.ancestorValues = theirs.values
                entry.ancestorVersion = theirs.version
            } else {
                entry.step = .dropDeleted
            }
        case .takeStore:
            entry.step = .takeStore(values: theirs?.values, version: theirs?.version ?? 0)
        }
    }

    /// Moves the committed entries' state into their objects.
    ///
    /// The entries are consumed last to first, each moved out of the array and dropped as
    /// soon as its object is done, while the entry, its object and its values are in cache:
    /// dropping the whole array afterwards released 10,000 objects' values again, each out
    /// of the cache by then. The ID lists are made in the same order and reversed at the end.
    ///
    /// The updated and deleted IDs are usually the will-save's lists (`willSave`), in the same
    /// order: then the report takes those lists themselves, matched ID by ID while each entry is
    /// at hand (`PostedListMatch`).
    private func finish(
        _ entries: consuming [SaveEntry], recordVersions: [UInt64], entryOfOperation: [Int], commitVersion: UInt64?,
        willSave: PostedListMatch.Lists, report: inout SaveReport
    ) {
        if core.hasManyToMany { finishLinks(entries, hadConflicts: !report.conflicts.isEmpty) }
        var versionOfEntry = [UInt64?](repeating: nil, count: entries.count)
        for (operation, entryIndex) in entryOfOperation.enumerated() where operation < recordVersions.count {
            versionOfEntry[entryIndex] = recordVersions[operation]
        }
        // The ID lists are made at their final size (a save of many objects regrew them a
        // dozen times).
        var updates = 0, inserts = 0, deletes = 0
        for index in entries.indices {
            switch entries[index].step {
            case .insert, .update:
                if entries[index].updatesStoredRecord { updates += 1 } else { inserts += 1 }
            case .delete, .dropDeleted: deletes += 1
            default: break
            }
        }
        var inserted: [ObjectID] = [], tookStore: [ObjectID] = []
        inserted.reserveCapacity(inserts)
        var updated = PostedListMatch(
            posted: willSave.updated, canMatch: updates == willSave.updated.count && report.updatedObjectIDs.isEmpty,
            capacity: updates)
        var deleted = PostedListMatch(
            posted: willSave.deleted, canMatch: deletes == willSave.deleted.count && report.deletedObjectIDs.isEmpty,
            capacity: deletes)
        // Shared by the saved deletions. A constant (not optional: unwrapping it retained and
        // released it per deletion), and the object and ID read from the entry in place, not
        // bound to locals: each binding cost a retain and a release per entry.
        let deletionSaved = Forgetting(reason: "its deletion was saved", contextName: name)
        while let entry = entries.popLast() {
            entry.object.conflictCheckMark = false
            entry.object.membershipChangedFlag = false
            for retired in entry.retiredRecords { deleted.append(retired.id) }
            switch entry.step {
            case .insert, .update:
                let wasStored = entry.updatesStoredRecord
                // Written values are the object's own unless a policy chose others: then the
                // object keeps its buffer, and only the ancestor moves (an assignment retains
                // the new buffer and releases the old).
                if !entry.values.sharesStorage(with: entry.object.current) { entry.object.current = entry.values }
                entry.object.ancestorValues = entry.object.current
                entry.object.ancestorVersion = versionOfEntry[entries.count] ?? 0
                entry.object.insertedFlag = false
                entry.object.deletedFlag = false
                if entry.isConstraintMerge {
                    if let temporary = temporaryID(of: entry.object) { report.temporaryIDs[entry.id] = temporary }
                    takeOverID(of: entry.object, to: entry.id)
                } else {
                    changeID(of: entry.object, to: entry.id)
                }
                if wasStored {
                    updated.append(entry.id)
                } else {
                    inserted.append(entry.id)
                    if let temporary = temporaryIDOfPermanent[entry.id] { report.temporaryIDs[entry.id] = temporary }
                }
            case .delete, .dropDeleted:
                deleted.append(entry.id)
                forget(entry.object, deletionSaved)
            case .check where entry.isConstraintMerge:
                // Merged into a stored object that already held every value: nothing written.
                entry.object.current = entry.values
                entry.object.ancestorValues = entry.values
                entry.object.ancestorVersion = versionOfEntry[entries.count] ?? entry.ancestorVersion
                entry.object.insertedFlag = false
                entry.object.deletedFlag = false
                if let temporary = temporaryID(of: entry.object) { report.temporaryIDs[entry.id] = temporary }
                takeOverID(of: entry.object, to: entry.id)
                tookStore.append(entry.id)
            case .check:
                break
            case .discardInsert:
                forget(entry.object, reason: "the merge policy discarded its insert: a stored object holds its values of a uniqueness constraint")
            case let .takeStore(values, version):
                tookStore.append(entry.id)
                if let values {
                    entry.object.current = values
                    entry.object.ancestorValues = values
                    entry.object.ancestorVersion = version
                    entry.object.deletedFlag = false
                } else {
                    forget(entry.object, reason: "the store deleted it and the merge policy took the store's state")
                }
            }
        }
        func add(_ ids: inout [ObjectID], to list: inout [ObjectID]) {
            ids.reverse()
            if list.isEmpty { list = ids } else { list.append(contentsOf: ids) }
        }
        updated.add(to: &report.updatedObjectIDs)
        add(&inserted, to: &report.insertedObjectIDs)
        deleted.add(to: &report.deletedObjectIDs)
        add(&tookStore, to: &report.tookStoreObjectIDs)
        report.commitVersion = commitVersion
    }
}
