import Foundation

/// The identity of a stored object: its entity and primary key, or a temporary identity until
/// the object's first save. Sendable: pass it between contexts and threads, never the object.
///
/// URI forms: `cairn://Person/p42` (permanent, primary key 42) and
/// `cairn://Person/t6F1C…` (temporary, a UUID). The URI is stable: a permanent ID's URI means the
/// same record in every process that opens the store.
///
/// ```swift
/// let id = try await background.perform {
///     let person = background.insert(entity: "Person")
///     person["name"] = .string("Ann")
///     try background.save()
///     return person.objectID            // permanent now
/// }
/// let name = try await viewContext.perform { try viewContext.existingObject(with: id)["name"] }
/// ```
public struct ObjectID: Sendable, Hashable, CustomStringConvertible {
    enum Identity: Sendable, Hashable {
        case permanent(UInt64)
        /// A UUID's 16 bytes as two integers: Foundation's `UUID` has a layout fixed only at
        /// run time, which made every copy of an ID (several per object in a fetch or a
        /// save) a call through the runtime's value witnesses. Two integers copy inline.
        case temporary(UInt64, UInt64)

        static func temporary(_ uuid: UUID) -> Identity {
            withUnsafeBytes(of: uuid.uuid) { bytes in
                .temporary(bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                           bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
        }

        /// The UUID of a temporary identity.
        static func uuid(_ high: UInt64, _ low: UInt64) -> UUID {
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { bytes in
                bytes.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
                bytes.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            }
            return UUID(uuid: uuid)
        }
    }

    /// The name of the object's entity.
    ///
    /// ```swift
    /// ObjectID(entityName: "Person", primaryKey: 1).entityName   // "Person"
    /// ```
    public let entityName: String

    let identity: Identity

    /// The permanent ID of the object of `entityName` with this primary key.
    ///
    /// Use it to address a record whose key you know (for example one inserted with
    /// ``ObjectContext/insert(entity:primaryKey:)``).
    ///
    /// ```swift
    /// let id = ObjectID(entityName: "Person", primaryKey: 1)
    /// let person = try context.existingObject(with: id)
    /// ```
    public init(entityName: String, primaryKey: UInt64) {
        self.entityName = entityName
        identity = .permanent(primaryKey)
    }

    init(entityName: String, identity: Identity) {
        self.entityName = entityName
        self.identity = identity
    }

    /// A fresh temporary ID for a newly inserted object.
    package static func temporary(entityName: String) -> ObjectID {
        ObjectID(entityName: entityName, identity: .temporary(UUID()))
    }

    /// Whether the ID is temporary: its object was inserted and not yet saved (nor given a
    /// permanent ID by ``ObjectContext/obtainPermanentIDs(for:)``).
    ///
    /// ```swift
    /// context.insert(entity: "Person").objectID.isTemporaryID   // true
    /// ```
    public var isTemporaryID: Bool {
        if case .temporary = identity { return true }
        return false
    }

    /// The primary key of a permanent ID; nil for a temporary one.
    ///
    /// ```swift
    /// ObjectID(entityName: "Person", primaryKey: 7).primaryKey   // 7
    /// ```
    public var primaryKey: UInt64? {
        if case .permanent(let key) = identity { return key }
        return nil
    }

    /// The ID as a URI string: `cairn://<entity>/p<key>` or `cairn://<entity>/t<UUID>`.
    ///
    /// ```swift
    /// ObjectID(entityName: "Person", primaryKey: 7).uriString   // "cairn://Person/p7"
    /// ```
    public var uriString: String {
        switch identity {
        case .permanent(let key): return Self.permanentURI(entityName: entityName, key: key)
        case let .temporary(high, low): return "cairn://\(entityName)/t\(Identity.uuid(high, low).uuidString)"
        }
    }

    /// The ID as a URI (see ``uriString``); ``init(uriRepresentation:)`` reads it back.
    ///
    /// ```swift
    /// let uri = person.objectID.uriRepresentation
    /// ObjectID(uriRepresentation: uri) == person.objectID   // true
    /// ```
    public var uriRepresentation: URL {
        // Entity names are identifiers, keys digits and UUIDs hex: always a valid URL.
        URL(string: uriString)!
    }

    /// Reads an ID back from its URI; nil for anything that is not exactly the URI of an ID.
    ///
    /// ```swift
    /// ObjectID(uriRepresentation: URL(string: "cairn://Person/p7")!)?.primaryKey   // 7
    /// ObjectID(uriRepresentation: URL(string: "cairn://Person/p07")!)             // nil: not canonical
    /// ```
    public init?(uriRepresentation uri: URL) {
        self.init(uriString: uri.absoluteString)
    }

    /// Reads an ID back from its URI string; nil for anything else.
    ///
    /// ```swift
    /// ObjectID(uriString: "cairn://Person/p7") == ObjectID(entityName: "Person", primaryKey: 7)   // true
    /// ```
    public init?(uriString: String) {
        // The form every stored reference has, read over its bytes (ObjectID+URIParsing.swift).
        guard let id = ObjectID(canonicalPermanentURI: uriString) ?? ObjectID(anyURI: uriString) else { return nil }
        self = id
    }

    /// `init(uriString:)` for any form, read by characters.
    package init?(anyURI uriString: String) {
        let scheme = "cairn://"
        guard uriString.hasPrefix(scheme) else { return nil }
        let rest = uriString.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let entity = String(rest[..<slash])
        let reference = rest[rest.index(after: slash)...]
        guard Schema.isValidName(entity, maxBytes: Schema.maxEntityNameBytes), let marker = reference.first
        else { return nil }
        let body = String(reference.dropFirst())
        switch marker {
        case "p":
            // Canonical digits only, so one ID has exactly one URI.
            guard let key = UInt64(body), String(key) == body else { return nil }
            self.init(entityName: entity, identity: .permanent(key))
        case "t":
            guard let uuid = UUID(uuidString: body), uuid.uuidString == body else { return nil }
            self.init(entityName: entity, identity: .temporary(uuid))
        default:
            return nil
        }
    }

    /// The URI string.
    ///
    /// ```swift
    /// print(ObjectID(entityName: "Person", primaryKey: 7))   // cairn://Person/p7
    /// ```
    public var description: String { uriString }

    /// Whether two IDs name the same object: the same entity and the same key (or temporary
    /// identity).
    ///
    /// ```swift
    /// ObjectID(entityName: "Person", primaryKey: 7) == ObjectID(entityName: "Tag", primaryKey: 7)   // false
    /// ```
    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.identity == rhs.identity && lhs.entityName == rhs.entityName
    }

    /// Hashes the key (or temporary identity) only, consistently with ``==(_:_:)``.
    ///
    /// Contexts hash IDs for every object they register, save or notify about; hashing the
    /// entity name too would cost more than the rest of the hash, and keys of one entity are
    /// distinct already. IDs of different entities with the same key share a hash, which only
    /// costs a comparison. A context's own tables hash IDs without a `Hasher`.
    ///
    /// ```swift
    /// let saved: Set<ObjectID> = [person.objectID]
    /// ```
    public func hash(into hasher: inout Hasher) {
        switch identity {
        case .permanent(let key): hasher.combine(key)
        case let .temporary(high, low):
            hasher.combine(high)
            hasher.combine(low)
        }
    }
}
