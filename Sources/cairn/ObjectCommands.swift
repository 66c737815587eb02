import Contexts
import EtcdStorage
import Foundation
import KVEngine
import Policies
import ScenarioFormat

// `cairn fetch` and the JSON form of `cairn dump` for object tables: both read the schema the
// store recorded (`meta:schema`, Contexts' StoredSchema), so they need no schema file.
//
// An object prints as one JSON object per line: "_id" (the object ID's URI), then every
// attribute of its entity in schema order, absent ones as null. Strings are JSON strings,
// ints and doubles numbers (a NaN or infinite double the string "nan", "+inf" or "-inf"),
// bools true/false, bytes base64 text, dates ISO 8601 text with fractional seconds (UTC).

enum ObjectCommands {
    static let group = CommandGroup(title: "Object commands", commands: [fetch, schema, migrate, HistoryCommand.command])

    static let schema = Command(
        name: "schema",
        summary: "Print the schema the store recorded, as JSON (the file format of 'cairn migrate').",
        arguments: ["STORE"],
        options: [],
        discussion: """
            Entities with their attributes (name, type, optional, defaultValue), indexes and
            uniqueness constraints, and the schema's version hash (Docs/Contexts.md, "Schema
            evolution").
            """
    ) { arguments in
        let recorded = try recordedSchema(arguments.positionals[0])
        StandardStream.output.write(String(decoding: StoredSchema.encode(recorded, prettyPrinted: true), as: UTF8.self) + "\n")
        return .success
    }

    static let migrate = Command(
        name: "migrate",
        summary: "Migrate the store's objects to the schema in a JSON file, in one commit.",
        arguments: ["STORE", "SCHEMA_FILE"],
        options: [],
        discussion: """
            SCHEMA_FILE has the format 'cairn schema' prints; "versionHash" may be left out,
            and an entity or attribute may carry "renamingIdentifier": its name in the
            store's schema. Only automatic (lightweight) migrations run here: a type change
            or a new required attribute without a default is refused with the list of
            differences, and nothing is written. Progress goes to standard error; a crash
            leaves the store as it was.
            """
    ) { arguments in
        let path = arguments.positionals[0], file = arguments.positionals[1]
        try StoreAccess.requireStore(path)
        guard let bytes = FileManager.default.contents(atPath: file) else {
            throw CommandError.failed("cannot read \(StoreAccess.shown(file))")
        }
        let target: Schema
        do throws(StorageError) {
            target = try StoredSchema.decode(Array(bytes)).schema
        } catch {
            throw CommandError.failed("\(StoreAccess.shown(file)): \(error.message)")
        }
        do {
            let objects = try ObjectStore(directory: path, schema: target, options: progressOptions())
            objects.close()
        } catch ContextError.incompatibleSchema(let differences) {
            throw CommandError.failed("cannot migrate without a migration closure; nothing was written:\n"
                + differences.map { "  " + $0.description }.joined(separator: "\n"))
        } catch {
            throw CommandError.failed("cannot migrate \(StoreAccess.shown(path)): \(error)")
        }
        return .success
    }

    /// The object store at `path` for a command that only reads: read-only beside the process
    /// that has it open (`ObjectStore.Options.readOnly`), as any open otherwise.
    static func openForReading(_ path: String, schema: Schema) throws(ContextError) -> ObjectStore {
        do {
            return try ObjectStore(directory: path, schema: schema, options: progressOptions())
        } catch {
            guard case .storage(let failure) = error, case .locked(let pid) = failure.code, pid != getpid() else { throw error }
        }
        var options = progressOptions()
        options.readOnly = true
        return try ObjectStore(directory: path, schema: schema, options: options)
    }

    /// Options that report migrations and index builds on standard error.
    static func progressOptions() -> ObjectStore.Options {
        var options = ObjectStore.Options()
        options.indexBuildProgress = { progress in
            guard progress.entries > 0 else { return }
            StandardStream.error.write("cairn: index \(progress)\n")
        }
        options.migrationProgress = { progress in StandardStream.error.write("cairn: migration \(progress)\n") }
        return options
    }

    static let fetch = Command(
        name: "fetch",
        summary: "Print the objects of an entity that match a predicate, using the store's recorded schema.",
        arguments: ["STORE", "ENTITY"],
        options: [.flag("json", "Print one JSON object per line instead of a table.")],
        discussion: """
            PREDICATE (optional) compares attributes with constants:

              name == "Ann" AND age > 3
              NOT (city == null) OR score >= 9.5
              city IN {"Oslo", "Rome"}

            Operators: == (or =) != < <= > >=, IN {list}, AND (&&), OR (||), NOT (!),
            parentheses. Constants: "strings" (escapes \\" \\\\ \\n \\t), integers, decimals,
            true, false, null; for a date attribute, an ISO 8601 string. Keywords are
            case-insensitive. Comparisons follow Contexts' FetchPredicate (ints and doubles
            compare as numbers; an ordering comparison with null is false). Objects print
            in primary-key order; without --json as a tab-separated table with a header.
            """,
        optionalArguments: ["PREDICATE"]
    ) { arguments in
        let path = arguments.positionals[0], entityName = arguments.positionals[1]
        let schema = try recordedSchema(path)
        guard let entity = schema.entity(named: entityName) else {
            throw CommandError.usage("the store has no entity \"\(abbreviated(entityName))\"; its entities are "
                + schema.entities.map(\.name).joined(separator: ", "))
        }
        let predicate: FetchPredicate?
        if arguments.positionals.count > 2 {
            do throws(PredicateParser.Failure) {
                predicate = try PredicateParser.parse(arguments.positionals[2], entity: entity)
            } catch {
                throw CommandError.usage("PREDICATE: \(error.message)")
            }
        } else {
            predicate = nil
        }
        let objects: ObjectStore
        do {
            objects = try EtcdConfiguration.isURL(path)
                ? ObjectStore(location: path, schema: schema, options: progressOptions())
                : openForReading(path, schema: schema)
        } catch {
            throw CommandError.failed("cannot open \(StoreAccess.shown(path)): \(error)")
        }
        defer { objects.close() }
        let context = objects.newBackgroundContext(name: "cairn fetch")
        let json = arguments.flag("json")
        var output = OutputBuffer(.output)
        defer { output.flush() }
        if !json { output.append((["_id"] + entity.attributes.map(\.name)).joined(separator: "\t") + "\n") }
        do {
            try context.performAndWait {
                // An index may serve the predicate, and return its own order: the output's is the keys'.
                let found = try context.fetch(FetchRequest(entityName: entity.name, predicate: predicate))
                for object in found.sorted(by: { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }) {
                    let values = entity.attributes.map { object[$0.name] }
                    if json {
                        output.append(jsonLine(id: object.objectID.uriString, entity: entity, values: values))
                    } else {
                        output.append(([object.objectID.uriString] + values.map(plainText)).joined(separator: "\t") + "\n")
                    }
                }
            }
        } catch {
            throw CommandError.failed("fetch failed: \(error)")
        }
        return .success
    }

    /// `cairn dump` of an `entity:<Entity>` table whose entity the store's recorded schema
    /// knows: prints its records as JSON lines and returns the status; nil for any other table
    /// (the caller prints raw records).
    static func dumpObjectTable(path: String, table: String) throws -> ExitStatus? {
        guard table.hasPrefix("entity:") else { return nil }
        if EtcdConfiguration.isURL(path) {
            throw CommandError.usage("on etcd, print an object table with 'cairn fetch STORE \(table.dropFirst("entity:".count)) --json'")
        }
        let store = try StoreAccess.openForReading(path)
        defer { store.close() }
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        guard let record = try snapshot.get(StoredSchema.key, in: StoredSchema.table) else { return nil }
        let schema = try decodeSchema(record.value, path: path)
        guard let entity = schema.entity(named: String(table.dropFirst("entity:".count))) else { return nil }
        var output = OutputBuffer(.output)
        defer { output.flush() }
        try snapshot.forEach(in: table, prefix: nil, reverse: false, onCorruptRecord: nil) { key, value, _ in
            guard key.count == 8 else { return true }
            let primaryKey = key.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
            let stored: PropertyValues
            do {
                stored = try ValueCodec.decode(value)
            } catch {
                throw CommandError.failed("record \(primaryKey) of \(table) does not decode: \(error)")
            }
            let id = ObjectID(entityName: entity.name, primaryKey: primaryKey).uriString
            output.append(jsonLine(id: id, entity: entity, values: entity.attributes.map { stored[$0.name] ?? .null }))
            return true
        }
        return .success
    }

    /// The schema the store at `path` recorded.
    static func recordedSchema(_ path: String) throws -> Schema {
        if EtcdConfiguration.isURL(path) {
            let bytes: [UInt8]?
            do { bytes = try EtcdConfiguration(url: path).recordedSchemaBytes() } catch {
                throw CommandError.failed("cannot read \(path): \(error)")
            }
            guard let bytes else { throw CommandError.failed("\(path) has no recorded schema: it holds no objects") }
            return try decodeSchema(bytes, path: path)
        }
        let store = try StoreAccess.openForReading(path)
        defer { store.close() }
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        guard let record = try snapshot.get(StoredSchema.key, in: StoredSchema.table) else {
            throw CommandError.failed("\(StoreAccess.shown(path)) has no recorded schema: it holds no objects "
                + "(or was written before stores recorded their schema; opening it once with its schema records it)")
        }
        return try decodeSchema(record.value, path: path)
    }

    private static func decodeSchema(_ bytes: [UInt8], path: String) throws -> Schema {
        do {
            return try StoredSchema.decode(bytes).schema
        } catch {
            throw CommandError.failed("\(StoreAccess.shown(path)): \(error)")
        }
    }

    /// One object as a JSON line.
    static func jsonLine(id: String, entity: EntityDescription, values: [AttributeValue]) -> String {
        var line = "{\"_id\":" + jsonString(id)
        for (attribute, value) in zip(entity.attributes, values) {
            line += "," + jsonString(attribute.name) + ":" + json(value)
        }
        return line + "}\n"
    }

    static func json(_ value: AttributeValue) -> String {
        switch value {
        case .null: return "null"
        case .string(let text): return jsonString(text)
        case .int(let number): return String(number)
        case .double(let number):
            if number.isNaN { return "\"nan\"" }
            if number.isInfinite { return number > 0 ? "\"+inf\"" : "\"-inf\"" }
            return "\(number)"
        case .bool(let flag): return flag ? "true" : "false"
        case .bytes(let bytes): return jsonString(Data(bytes).base64EncodedString())
        case .date(let date): return jsonString(dateText(date))
        }
    }

    /// A value in the plain table: strings with the tool's escapes (KeyText), others as in JSON.
    static func plainText(_ value: AttributeValue) -> String {
        switch value {
        case .string(let text): return KeyText.encode(Array(text.utf8))
        case .bytes(let bytes): return Data(bytes).base64EncodedString()
        case .date(let date): return dateText(date)
        default: return json(value)
        }
    }

    static func dateText(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// `text` as a JSON string, escaped as the scenario runner's JSON is.
    static func jsonString(_ text: String) -> String { JSONValue.quoted(text) }
}

/// Reads `cairn fetch`'s predicate syntax into a ``FetchPredicate`` (grammar in the command's help).
struct PredicateParser {
    struct Failure: Error {
        let message: String
    }

    fileprivate enum Token: Equatable {
        case word(String), string(String), number(String), symbol(String), end
    }

    private var tokens: [Token]
    private var position = 0
    private let entity: EntityDescription

    static func parse(_ text: String, entity: EntityDescription) throws(Failure) -> FetchPredicate {
        var parser = PredicateParser(tokens: try tokenize(text), entity: entity)
        let predicate = try parser.or()
        guard parser.peek == .end else { throw Failure(message: "unexpected \(parser.peek.shown) after the predicate") }
        return predicate
    }

    private init(tokens: [Token], entity: EntityDescription) {
        self.tokens = tokens
        self.entity = entity
    }

    private var peek: Token { tokens[position] }

    private mutating func next() -> Token {
        defer { if position < tokens.count - 1 { position += 1 } }
        return tokens[position]
    }

    private func isKeyword(_ token: Token, _ words: String...) -> Bool {
        switch token {
        case .word(let word): return words.contains(word.uppercased())
        case .symbol(let symbol): return words.contains(symbol)
        default: return false
        }
    }

    private mutating func or() throws(Failure) -> FetchPredicate {
        var terms = [try and()]
        while isKeyword(peek, "OR", "||") {
            _ = next()
            terms.append(try and())
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func and() throws(Failure) -> FetchPredicate {
        var terms = [try unary()]
        while isKeyword(peek, "AND", "&&") {
            _ = next()
            terms.append(try unary())
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func unary() throws(Failure) -> FetchPredicate {
        if isKeyword(peek, "NOT", "!") {
            _ = next()
            return .not(try unary())
        }
        if peek == .symbol("(") {
            _ = next()
            let inner = try or()
            guard next() == .symbol(")") else { throw Failure(message: "missing )") }
            return inner
        }
        guard case .word(let name) = next() else { throw Failure(message: "expected an attribute name") }
        guard let attribute = entity.attribute(named: name) else {
            throw Failure(message: "entity \(entity.name) has no attribute \"\(name)\"; its attributes are "
                + entity.attributes.map(\.name).joined(separator: ", "))
        }
        if isKeyword(peek, "IN") {
            _ = next()
            guard next() == .symbol("{") else { throw Failure(message: "expected { after IN") }
            var values: [AttributeValue] = []
            if peek != .symbol("}") {
                values.append(try constant(for: attribute))
                while peek == .symbol(",") {
                    _ = next()
                    values.append(try constant(for: attribute))
                }
            }
            guard next() == .symbol("}") else { throw Failure(message: "expected } to close the IN list") }
            return .isIn(name, values)
        }
        let operatorToken = next()
        guard case .symbol(let text) = operatorToken,
              let comparison = FetchPredicate.Operator(rawValue: text == "=" ? "==" : text)
        else { throw Failure(message: "expected a comparison operator after \(name), found \(operatorToken.shown)") }
        return .compare(name, comparison, try constant(for: attribute))
    }

    private mutating func constant(for attribute: AttributeDescription) throws(Failure) -> AttributeValue {
        let token = next()
        switch token {
        case .string(let text):
            if attribute.type == .date {
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let plain = ISO8601DateFormatter()
                guard let date = formatter.date(from: text) ?? plain.date(from: text) else {
                    throw Failure(message: "\"\(text)\" is not an ISO 8601 date (\(attribute.name) is a date)")
                }
                return .date(date)
            }
            return .string(text)
        case .number(let text):
            if let number = Int64(text) { return attribute.type == .double ? .double(Double(number)) : .int(number) }
            if let number = Double(text) { return .double(number) }
            throw Failure(message: "\(text) is not a number")
        case .word(let word):
            switch word.lowercased() {
            case "true": return .bool(true)
            case "false": return .bool(false)
            case "null", "nil": return .null
            default: throw Failure(message: "expected a constant, found \(word) (quote strings: \"\(word)\")")
            }
        default:
            throw Failure(message: "expected a constant, found \(token.shown)")
        }
    }

    private static func tokenize(_ text: String) throws(Failure) -> [Token] {
        var tokens: [Token] = []
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character.isWhitespace {
                index += 1
            } else if character == "\"" {
                var value = ""
                index += 1
                while true {
                    guard index < characters.count else { throw Failure(message: "unterminated string") }
                    let next = characters[index]
                    index += 1
                    if next == "\"" { break }
                    if next == "\\" {
                        guard index < characters.count else { throw Failure(message: "unterminated string") }
                        let escaped = characters[index]
                        index += 1
                        switch escaped {
                        case "n": value.append("\n")
                        case "t": value.append("\t")
                        case "\"", "\\": value.append(escaped)
                        default: throw Failure(message: "unknown escape \\\(escaped)")
                        }
                    } else {
                        value.append(next)
                    }
                }
                tokens.append(.string(value))
            } else if character.isNumber || (character == "-" && index + 1 < characters.count && characters[index + 1].isNumber) {
                var value = String(character)
                index += 1
                while index < characters.count, characters[index].isNumber || "._eE+-".contains(characters[index]) {
                    if "+-".contains(characters[index]), !"eE".contains(value.last!) { break }
                    value.append(characters[index])
                    index += 1
                }
                tokens.append(.number(value))
            } else if character.isLetter || character == "_" {
                var value = ""
                while index < characters.count, characters[index].isLetter || characters[index].isNumber || characters[index] == "_" {
                    value.append(characters[index])
                    index += 1
                }
                tokens.append(.word(value))
            } else {
                let two = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                if ["==", "!=", "<=", ">=", "&&", "||"].contains(two) {
                    tokens.append(.symbol(two))
                    index += 2
                } else if "=<>!(){},".contains(character) {
                    tokens.append(.symbol(String(character)))
                    index += 1
                } else {
                    throw Failure(message: "unexpected character \"\(character)\"")
                }
            }
        }
        tokens.append(.end)
        return tokens
    }
}

extension PredicateParser.Token {
    var shown: String {
        switch self {
        case .word(let word): return word
        case .string(let text): return "\"\(text)\""
        case .number(let text): return text
        case .symbol(let symbol): return symbol
        case .end: return "the end"
        }
    }
}
