import Contexts
import Policies
import Testing

/// An ordered to-many: `Playlist.songs` (ordered) with the to-one `Song.playlist`. The members
/// keep the order they were added or placed in; a move or an insert writes one member; the order
/// is each member's key, resolved like an attribute under every policy.
@Suite("Relationships: ordered to-many")
struct OrderedToManyTests {
    static func schema(songsRule: RelationshipDescription.DeleteRule = .nullify) -> Schema {
        do {
            return try Schema([
                EntityDescription("Playlist", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("songs", destination: "Song", inverse: "playlist", isToMany: true,
                                            deleteRule: songsRule, isOrdered: true),
                ]),
                EntityDescription("Song", attributes: [AttributeDescription("name", .string)], relationships: [
                    RelationshipDescription("playlist", destination: "Playlist", inverse: "songs"),
                ]),
            ])
        } catch {
            fatalError("playlist schema: \(error)")
        }
    }

    struct Seed {
        let list, other: ObjectID
        let songs: [ObjectID]
    }

    /// Playlist "L" with songs s1…s`count` added in order, and an empty playlist "M"; committed.
    static func seed(_ store: OrgStore, count: Int = 4) throws -> Seed {
        let context = store.context("seed")
        return try context.performAndWait {
            let list = insert("Playlist", ["name": "L"], in: context), other = insert("Playlist", ["name": "M"], in: context)
            let songs = (1...count).map { insert("Song", ["name": "s\($0)"], in: context) }
            for song in songs { list.addMember(song, to: "songs") }
            try context.save()
            return Seed(list: list.objectID, other: other.objectID, songs: songs.map(\.objectID))
        }
    }

    /// The names of the stored members of `owner`, in order, read by a fresh context.
    static func stored(_ store: OrgStore, _ owner: ObjectID) throws -> [String] {
        let context = store.context("reader")
        return try context.performAndWait { try context.existingObject(with: owner).members(of: "songs").map(\.name) }
    }

    @Test("the schema takes an ordered one-to-many and refuses an ordered to-one")
    func schemaChecks() throws {
        #expect(Self.schema().entity(named: "Playlist")?.relationship(named: "songs")?.isOrdered == true)
        #expect(throws: SchemaError.self) {
            try Schema([
                EntityDescription("A", attributes: [], relationships: [
                    RelationshipDescription("b", destination: "B", inverse: "as", isOrdered: true)]),
                EntityDescription("B", attributes: [], relationships: [
                    RelationshipDescription("as", destination: "A", inverse: "b", isToMany: true)]),
            ])
        }
    }

    @Test("members keep the order they were added and placed in: append, insert at an index, move, remove, replace")
    func orderFollowsEdits() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            #expect(try Self.stored(store, seed.list) == ["s1", "s2", "s3", "s4"])
            let context = store.context("editor")
            try context.performAndWait {
                let list = try context.existingObject(with: seed.list)
                let s5 = insert("Song", ["name": "s5"], in: context)
                try list.insertMember(s5, at: 0, into: "songs")
                #expect(list.members(named: "songs") == ["s5", "s1", "s2", "s3", "s4"])
                try list.moveMember(at: 4, to: 1, in: "songs")
                #expect(list.members(named: "songs") == ["s5", "s4", "s1", "s2", "s3"])
                list.removeMember(try context.existingObject(with: seed.songs[0]), from: "songs")
                try list.insertMember(try context.existingObject(with: seed.songs[0]), at: 4, into: "songs")  // back, last
                // A member set from its own end, or added, goes last.
                try context.existingObject(with: seed.songs[1]).setDestination(list, of: "playlist")  // already a member: stays
                let s6 = insert("Song", ["name": "s6"], in: context)
                s6.setDestination(list, of: "playlist")
                #expect(list.members(named: "songs") == ["s5", "s4", "s2", "s3", "s1", "s6"])
                try context.save()
            }
            #expect(try Self.stored(store, seed.list) == ["s5", "s4", "s2", "s3", "s1", "s6"])
            try context.performAndWait {
                let list = try context.existingObject(with: seed.list)
                let songs = try list.members(of: "songs")
                try list.replaceMembers(of: "songs", with: [songs[5], songs[0], songs[2]])
                try context.save()
            }
            #expect(try Self.stored(store, seed.list) == ["s6", "s5", "s2"])
            #expect(try store.problems() == [])
        }
    }

    @Test("inserting again and again at one place renumbers when the gap is gone, and keeps the order")
    func renumbering() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store, count: 2)
            let context = store.context("editor")
            try context.performAndWait {
                let list = try context.existingObject(with: seed.list)
                var expected = ["s1", "s2"]
                for round in 0..<45 {
                    let song = insert("Song", ["name": "n\(round)"], in: context)
                    try list.insertMember(song, at: 1, into: "songs")  // always just after s1
                    expected.insert("n\(round)", at: 1)
                }
                #expect(list.members(named: "songs") == expected)
                try context.save()
                #expect(try Self.stored(store, seed.list) == expected)
            }
            #expect(try store.problems() == [])
        }
    }

    @Test("a move writes the member, its owner and one index entry moved, with ten members or two thousand")
    func constantWrites() throws {
        for size in [10, 2_000] {
            try withOrgStore(schema: Self.schema()) { store in
                let seed = try Self.seed(store, count: size)
                let written = WrittenKeys()
                store.objects.storage.addCommitObserver { notice in written.note(notice.writtenKeys) }
                let context = store.context("editor")
                try context.performAndWait {
                    try context.existingObject(with: seed.list).moveMember(at: size - 1, to: size / 2, in: "songs")
                    try context.save()
                }
                let tables = written.last.map(\.table).sorted()
                #expect(tables == ["entity:Playlist", "entity:Song", "index:Song:playlist,playlist#order", "index:Song:playlist,playlist#order"],
                        "\(size) members")
                let names = try Self.stored(store, seed.list)
                #expect(names[size / 2] == "s\(size)" && names.count == size)
            }
        }
    }

    @Test("a one-to-many made ordered keeps its members, first in primary-key order, and places new ones after them")
    func madeOrdered() throws {
        let unordered = try Schema([
            EntityDescription("Playlist", attributes: [AttributeDescription("name", .string)], relationships: [
                RelationshipDescription("songs", destination: "Song", inverse: "playlist", isToMany: true)]),
            EntityDescription("Song", attributes: [AttributeDescription("name", .string)], relationships: [
                RelationshipDescription("playlist", destination: "Playlist", inverse: "songs")]),
        ])
        try withOrgStore(schema: unordered) { store in
            let seed = try Self.seed(store, count: 3)
            store.objects.close()
            let reopened = try ObjectStore(directory: store.directory.path, schema: Self.schema())
            defer { reopened.close() }
            let context = reopened.newBackgroundContext()
            try context.performAndWait {
                let list = try context.existingObject(with: seed.list)
                #expect(list.members(named: "songs") == ["s1", "s2", "s3"])
                try list.moveMember(at: 0, to: 2, in: "songs")
                list.addMember(insert("Song", ["name": "s4"], in: context), to: "songs")
                #expect(list.members(named: "songs") == ["s2", "s3", "s1", "s4"])
                try context.save()
            }
            #expect(try reopened.relationshipProblems() + reopened.indexProblems() == [])
        }
    }

    @Test("delete rules of an ordered to-many: cascade deletes the songs, nullify empties their playlist, deny keeps the list")
    func deleteRules() throws {
        for rule in [RelationshipDescription.DeleteRule.cascade, .nullify, .deny] {
            try withOrgStore(schema: Self.schema(songsRule: rule)) { store in
                let seed = try Self.seed(store, count: 3)
                let context = store.context("editor")
                let outcome = try context.performAndWait { () throws -> String in
                    context.delete(try context.existingObject(with: seed.list))
                    do {
                        try context.save()
                        return "ok"
                    } catch is ValidationError {
                        return "denied"
                    }
                }
                #expect(outcome == (rule == .deny ? "denied" : "ok"), "\(rule)")
                for song in seed.songs {
                    let record = try store.committed(song)
                    switch rule {
                    case .cascade: #expect(record == nil)
                    case .nullify: #expect(record?.values.value(of: "playlist") == .null)
                    default: #expect(record?.values.value(of: "playlist") == .string(seed.list.uriString))
                    }
                }
                #expect(try store.problems() == [], "\(rule)")
            }
        }
    }

    @Test("membership on a one-to-many's to-many is the member's to-one, pending changes included")
    func membership() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let context = store.context("editor")
            try context.performAndWait {
                let request = FetchRequest(entityName: "Playlist", predicate: .hasMember("songs", seed.songs[0]))
                #expect(try context.fetch(request).map(\.name) == ["L"])
                try context.existingObject(with: seed.songs[0]).setDestination(try context.existingObject(with: seed.other), of: "playlist")
                #expect(try context.fetch(request).map(\.name) == ["M"])
                #expect(try context.count(for: FetchRequest(entityName: "Playlist", predicate: .not(.hasMember("songs", seed.songs[0])))) == 1)
            }
        }
    }

    @Test("the order survives a reopen, a child's push and a prefetch")
    func acrossContexts() throws {
        try withOrgStore(schema: Self.schema()) { store in
            let seed = try Self.seed(store)
            let parent = store.context("parent")
            let child = parent.newChildContext(name: "child")
            try child.performAndWait {
                try child.existingObject(with: seed.list).moveMember(at: 0, to: 3, in: "songs")
                try child.save()
            }
            try parent.performAndWait {
                #expect(try parent.existingObject(with: seed.list).members(named: "songs") == ["s2", "s3", "s4", "s1"])
                try parent.save()
            }
            let reader = store.context("prefetch")
            try reader.performAndWait {
                var request = FetchRequest(entityName: "Playlist", predicate: .compare("name", .equal, .string("L")))
                request.relationshipKeyPathsForPrefetching = ["songs"]
                let list = try #require(try reader.fetch(request).first)
                if TestBackend.current == .engine {
                    #expect(reader.keptMembers(of: list, "songs")?.map(\.name) == ["s2", "s3", "s4", "s1"])
                }
                #expect(list.members(named: "songs") == ["s2", "s3", "s4", "s1"])
            }
        }
    }
}

extension StoredObject {
    /// The names of the members of `relationship`, in the order `members(of:)` gives ([] when it throws).
    func members(named relationship: String) -> [String] {
        ((try? members(of: relationship)) ?? []).map(\.name)
    }
}

/// The ordered to-many's conflicts under the five policies: the order is each member's key, a
/// property resolved like an attribute; the owner conflicts as for any membership change and is
/// never resolved into its members' keys.
@Suite("Relationships: ordered to-many conflicts under every policy")
struct OrderedToManyConflictTests {
    typealias Race = RelationshipConflictTests

    @Test("two contexts move different members: a conflict on the owner under error, both moves kept under the others",
          arguments: policyNames)
    func differentMembersMoved(_ policy: String) throws {
        try withOrgStore(schema: OrderedToManyTests.schema()) { store in
            let seed = try OrderedToManyTests.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.list, first: { a in
                try a.existingObject(with: seed.list).moveMember(at: 0, to: 3, in: "songs")  // s1 last
            }, theirs: { b in
                try b.existingObject(with: seed.list).moveMember(at: 2, to: 0, in: "songs")  // s3 first
            })
            #expect(result == Race.outcome(policy))
            let expected = policy == "error" ? ["s3", "s1", "s2", "s4"] : ["s3", "s2", "s4", "s1"]
            #expect(try OrderedToManyTests.stored(store, seed.list) == expected)
            #expect(try store.problems() == [])
        }
    }

    @Test("both contexts move one member: its place is a property changed on both sides", arguments: policyNames)
    func sameMemberMoved(_ policy: String) throws {
        try withOrgStore(schema: OrderedToManyTests.schema()) { store in
            let seed = try OrderedToManyTests.seed(store)
            let (result, a) = try Race.race(store, policy: policy, read: seed.list, first: { a in
                try a.existingObject(with: seed.list).moveMember(at: 1, to: 3, in: "songs")  // s2 last
            }, theirs: { b in
                try b.existingObject(with: seed.list).moveMember(at: 1, to: 0, in: "songs")  // s2 first
            })
            #expect(result == Race.outcome(policy))
            if result == "conflict" {
                #expect(a.performAndWait { Set(a.lastSaveConflicts.map(\.objectID)) } == [seed.list.uriString, seed.songs[1].uriString])
            }
            let ours = ["objectTrump", "overwrite"].contains(policy)
            #expect(try OrderedToManyTests.stored(store, seed.list) == (ours ? ["s1", "s3", "s4", "s2"] : ["s2", "s1", "s3", "s4"]))
            #expect(try store.problems() == [])
        }
    }

    @Test("two contexts append a song each: both end up last, in primary-key order, under every policy but error",
          arguments: policyNames)
    func concurrentAppends(_ policy: String) throws {
        try withOrgStore(schema: OrderedToManyTests.schema()) { store in
            let seed = try OrderedToManyTests.seed(store, count: 2)
            let (result, _) = try Race.race(store, policy: policy, read: seed.list, first: { a in
                try a.existingObject(with: seed.list).addMember(insert("Song", ["name": "a"], in: a), to: "songs")
                try a.obtainPermanentIDs(for: Array(a.insertedObjects))  // A's song has the lower key
            }, theirs: { b in
                try b.existingObject(with: seed.list).addMember(insert("Song", ["name": "b"], in: b), to: "songs")
            })
            #expect(result == Race.outcome(policy))
            #expect(try OrderedToManyTests.stored(store, seed.list) == (policy == "error" ? ["s1", "s2", "b"] : ["s1", "s2", "a", "b"]))
            #expect(try store.problems() == [])
        }
    }

    @Test("a member moved to another list while the store reordered it in this one: its to-one, changed here only, is ours but under rollback",
          arguments: policyNames)
    func movedAwayVersusReordered(_ policy: String) throws {
        try withOrgStore(schema: OrderedToManyTests.schema()) { store in
            let seed = try OrderedToManyTests.seed(store)
            let (result, _) = try Race.race(store, policy: policy, read: seed.songs[3], first: { a in
                try a.existingObject(with: seed.songs[3]).setDestination(try a.existingObject(with: seed.other), of: "playlist")
            }, theirs: { b in
                try b.existingObject(with: seed.list).moveMember(at: 3, to: 0, in: "songs")  // s4 first
            })
            #expect(result == Race.outcome(policy))
            let moved = ["storeTrump", "objectTrump", "overwrite"].contains(policy)
            #expect(try OrderedToManyTests.stored(store, seed.list) == (moved ? ["s1", "s2", "s3"] : ["s4", "s1", "s2", "s3"]))
            #expect(try OrderedToManyTests.stored(store, seed.other) == (moved ? ["s4"] : []))
            #expect(try store.problems() == [])
        }
    }
}
