import Policies
import Testing

/// The merge-semantics contract's suites again, each test function called as it is on the
/// local engine but with ``TestStore`` on a fresh prefix of the loopback etcd cluster: the
/// same contexts and policies must give the same results on either backend.
///
/// Left on the engine alone: `SaveContractTests.boundedRetries`, whose policy writes behind the
/// save's back through the engine store itself (the etcd equivalent, two stores racing on one
/// prefix, is in EtcdTests).
@Suite("Contract on etcd")
struct EtcdContractTests {
    @Test("update here, update in the store: each row under each policy", arguments: policyNames)
    func updateUpdateRows(policyName: String) throws {
        try TestBackend.$current.withValue(.etcd) {
            for row in UpdateUpdateTableTests.Row.allCases {
                try UpdateUpdateTableTests().row(policyName: policyName, row: row)
            }
        }
    }

    @Test("update here, update in the store: the docs' example and rollback")
    func updateUpdateExamples() throws {
        try TestBackend.$current.withValue(.etcd) {
            try UpdateUpdateTableTests().rollbackHoldsTheirs()
        }
    }

    @Test("deletions: each row under each policy", arguments: policyNames)
    func deletionRows(policyName: String) throws {
        try TestBackend.$current.withValue(.etcd) {
            for row in DeletionTableTests.Row.allCases {
                try DeletionTableTests().row(row: row, policyName: policyName)
            }
        }
    }

    @Test("the save contract", arguments: SaveContractCase.allCases)
    func saveContract(_ which: SaveContractCase) throws {
        try TestBackend.$current.withValue(.etcd) {
            let tests = SaveContractTests()
            switch which {
            case .rollbackSavesTheOthers: try tests.rollbackSavesTheOthers()
            case .ancestorAfterSave: try tests.ancestorAfterSave()
            case .errorPolicyError: try tests.errorPolicyError()
            case .atomicity: try tests.atomicity()
            case .reinsertKeepsID: try tests.reinsertKeepsID()
            case .throwingPolicy: try tests.throwingPolicy()
            case .miscountingPolicy: try tests.miscountingPolicy()
            case .policyWritesAreValidated: try tests.policyWritesAreValidated()
            case .policyChangesBetweenSaves: try tests.policyChangesBetweenSaves()
            case .customPolicies: try tests.customPolicies()
            case .chosenKeyInUse: try tests.chosenKeyInUse()
            case .mixedSaves: try tests.mixedSavesWriteWhatEachObjectHolds()
            case .emptySave: try tests.emptySave()
            case .reinsertVersion: try ReinsertVersionTests().versionContinuesAfterReinsert()
            }
        }
    }

    @Test("ancestors and deltas", arguments: [UInt64(1), 2])
    func ancestorDeltas(seed: UInt64) throws {
        try TestBackend.$current.withValue(.etcd) {
            let tests = AncestorDeltaTests()
            try tests.randomEditsSavesRollbacksAndRefreshesReportWhatACopyWould(seed: seed)
            if seed == 1 {
                try tests.aConflictAfterOneChangeReportsTheValuesReadAsTheAncestor()
                try tests.replacingOrMergingTheValuesAfterOneChangeKeepsTheAncestor()
                try tests.valuesTakenBeforeAChangeKeepWhatTheyHeld()
            }
        }
    }

    @Test("relationships: the conflict rows of one-to-many and one-to-one under each policy", arguments: policyNames)
    func relationshipConflictRows(policyName: String) throws {
        try TestBackend.$current.withValue(.etcd) {
            let tests = RelationshipConflictTests()
            try tests.moveVersusRename(policyName)
            try tests.concurrentAdditions(policyName)
            try tests.toOneMovedTwice(policyName)
            try tests.referenceToDeletedDestination(policyName)
            try tests.deleteVersusAddedMember(policyName)
            try CascadeConflictTests().cascadeVersusMemberUpdate(policyName)
            try OneToOneTests().personGivenTwoDesks(policyName)
            try OneToOneTests().deskGivenTwice(policyName)
        }
    }

    @Test("many-to-many: the conflict rows under each policy, links in both ends' tables", arguments: policyNames)
    func manyToManyConflictRows(policyName: String) throws {
        try TestBackend.$current.withValue(.etcd) {
            let tests = ManyToManyConflictTests()
            try tests.bothSidesChangeOneSet(policyName)
            try tests.unreadSetUnderOverwrite(policyName)
            try tests.concurrentAdditions(policyName)
            try tests.sameChangeOnBothSides(policyName)
            try tests.linkVersusRenameOfTheOtherEnd(policyName)
            try tests.linkToDeletedObject(policyName)
            try tests.deleteVersusAddedLink(policyName)
        }
    }

    @Test("ordered to-many: the conflict rows under each policy, keys in the to-one's index", arguments: policyNames)
    func orderedConflictRows(policyName: String) throws {
        try TestBackend.$current.withValue(.etcd) {
            let tests = OrderedToManyConflictTests()
            try tests.differentMembersMoved(policyName)
            try tests.sameMemberMoved(policyName)
            try tests.concurrentAppends(policyName)
            try tests.movedAwayVersusReordered(policyName)
        }
    }

    @Test("ordered many-to-many: the conflict rows under each policy, keys with the links and in the order tables", arguments: policyNames)
    func orderedManyToManyConflictRows(policyName: String) throws {
        try TestBackend.$current.withValue(.etcd) {
            let tests = OrderedManyToManyConflictTests()
            try tests.differentLinksMoved(policyName)
            try tests.sameLinkMoved(policyName)
            try tests.concurrentAppends(policyName)
            try tests.movedVersusRemoved(policyName)
            try tests.moveVersusRenameOfTheMember(policyName)
            try tests.bothEndsReorderOneLink(policyName)
            try tests.bothEndsConflict(policyName)
        }
    }

    @Test("relationships: both ends, delete rules, contexts and fetches, one-to-many (ordered too) and many-to-many (ordered too)")
    func relationshipSuites() throws {
        try TestBackend.$current.withValue(.etcd) {
            let deleteRules = DeleteRuleTests()
            try deleteRules.nullify()
            try deleteRules.cascadeRecursively()
            try deleteRules.deny()
            try deleteRules.noAction()
            let contexts = RelationshipContextTests()
            try contexts.childPushesBothEnds()
            try contexts.mergeChanges()
            try contexts.pinnedGeneration()
            let manyToMany = ManyToManyTests()
            try manyToMany.bothEndsFollow()
            try manyToMany.versionsOfBothEnds()
            try manyToMany.newObjects()
            try manyToMany.ownInverse()
            let linkRules = ManyToManyDeleteRuleTests()
            try linkRules.nullify()
            try linkRules.nullifyUnseenMembers()
            try linkRules.cascade()
            try linkRules.deny()
            try linkRules.denyCountsTheStore()
            try linkRules.noAction()
            let linkContexts = ManyToManyContextTests()
            try linkContexts.childPushesLinks()
            try linkContexts.mergeCarriesLinks()
            try linkContexts.pinnedGeneration()
            try linkContexts.refreshAndRollback()
            try linkContexts.predicates()
            try linkContexts.prefetchAndCodable()
            let ordered = OrderedToManyTests()
            try ordered.orderFollowsEdits()
            try ordered.renumbering()
            try ordered.acrossContexts()
            let orderedLinks = OrderedManyToManyTests()
            try orderedLinks.orderFollowsEdits()
            try orderedLinks.bothEndsKeepTheirOwnOrder()
            try orderedLinks.reorderChangesTheOrderedEndOnly()
            try orderedLinks.renumbering()
            try orderedLinks.ownInverse()
            try orderedLinks.deleteRules()
            try orderedLinks.acrossContexts()
            try orderedLinks.refreshAndRollback()
        }
    }

    @Test("many-to-many: randomized concurrent edits keep the stored links symmetric (and ordered ends' keys consistent), on etcd",
          arguments: [UInt64(7), 8])
    func manyToManyRandomEdits(seed: UInt64) throws {
        try TestBackend.$current.withValue(.etcd) {
            try ManyToManyRandomEditTests.run(seed: seed, postsRule: .nullify, steps: 150)
            try ManyToManyRandomEditTests.run(seed: seed, postsRule: .nullify, steps: 150, ordered: true)
        }
    }

    enum SaveContractCase: String, CaseIterable, Sendable {
        case rollbackSavesTheOthers, ancestorAfterSave, errorPolicyError, atomicity, reinsertKeepsID
        case throwingPolicy, miscountingPolicy, policyWritesAreValidated, policyChangesBetweenSaves
        case customPolicies, chosenKeyInUse, mixedSaves, emptySave, reinsertVersion
    }
}
