import Contexts
import Foundation
import Policies
import Testing

// `cairn history`: a tracked store's transactions as text and JSON, after a token.

extension CairnToolTests {
    @Suite struct HistoryCommandTests {
        /// An object store of people that tracks history.
        static func openTracked(_ path: String) throws -> ObjectStore {
            let schema = try Schema([EntityDescription("Person", attributes: [
                AttributeDescription("name", .string), AttributeDescription("age", .int),
            ])])
            var options = ObjectStore.Options()
            options.tracksHistory = true
            return try ObjectStore(directory: path, schema: schema, options: options)
        }

        /// A tracked store with three saves: two inserts (author "app\tone"), an update, a delete.
        static func trackedStore(_ directory: TemporaryDirectory) throws -> (path: String, versions: [UInt64]) {
            let path = directory.path + "/store"
            let objects = try openTracked(path)
            defer { objects.close() }
            let context = objects.newBackgroundContext(name: "editor")
            context.transactionAuthor = "app\tone"
            var versions: [UInt64] = []
            try context.performAndWait {
                let ann = context.insert(entity: "Person")
                ann["name"] = .string("Ann"); ann["age"] = .int(30)
                let bo = context.insert(entity: "Person")
                bo["name"] = .string("Bo"); bo["age"] = .int(4)
                try context.save()
                versions.append(context.lastDidSaveNotification!.commitVersion!)
                ann["age"] = .int(31)
                try context.save()
                versions.append(context.lastDidSaveNotification!.commitVersion!)
                context.delete(bo)
                try context.save()
                versions.append(context.lastDidSaveNotification!.commitVersion!)
            }
            return (path, versions)
        }

        @Test func historyReadsBesideTheProcessWritingTheStore() throws {
            let directory = try TemporaryDirectory(purpose: "history-beside")
            defer { directory.remove() }
            let (path, versions) = try Self.trackedStore(directory)
            // This process holds the store for writing; its newest save is in the log only.
            let objects = try Self.openTracked(path)
            defer { objects.close() }
            let context = objects.newBackgroundContext(name: "writer")
            let version = try context.performAndWait {
                let cy = context.insert(entity: "Person")
                cy["name"] = .string("Cy"); cy["age"] = .int(9)
                try context.save()
                return context.lastDidSaveNotification!.commitVersion!
            }
            let run = try cairn("history", path, "--after", "\(versions.last!)")
            #expect(run.status == 0, "\(run)")
            let header = try #require(run.lines.first, "\(run)").split(separator: "\t", omittingEmptySubsequences: false)
            #expect(header.count == 5 && header[0] == "\(version)" && header[2] == "writer", "\(run)")
            #expect(run.lines.dropFirst() == ["\tinsert\tcairn://Person/p3"], "\(run)")
        }

        @Test func historyPrintsEachTransactionWithItsChanges() throws {
            let directory = try TemporaryDirectory(purpose: "history")
            defer { directory.remove() }
            let (path, versions) = try Self.trackedStore(directory)
            let run = try cairn("history", path)
            #expect(run.status == 0, "\(run)")
            let headers = run.lines.filter { !$0.hasPrefix("\t") }.map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
            #expect(headers.map { String($0[0]) } == versions.map(String.init))
            #expect(headers.allSatisfy { $0.count == 5 && $0[2] == "editor" && $0[3] == "app\\tone" && $0[1].hasSuffix("Z") })
            #expect(run.lines.filter { $0.hasPrefix("\t") } == [
                "\tinsert\tcairn://Person/p1", "\tinsert\tcairn://Person/p2",
                "\tupdate\tcairn://Person/p1\tage",
                "\tdelete\tcairn://Person/p2",
            ])
            let after = try cairn("history", path, "--after", String(versions[1]))
            #expect(after.status == 0 && after.lines.count == 2 && after.lines[0].hasPrefix("\(versions[2])\t"), "\(after)")
            let none = try cairn("history", path, "--after", "18446744073709551615")
            #expect(none.status == 0 && none.output.isEmpty, "\(none)")
        }

        @Test func historyAsJSONIsOneObjectPerTransaction() throws {
            let directory = try TemporaryDirectory(purpose: "history-json")
            defer { directory.remove() }
            let (path, versions) = try Self.trackedStore(directory)
            let run = try cairn("history", path, "--json", "--after", String(versions[0]))
            #expect(run.status == 0 && run.lines.count == 2, "\(run)")
            let objects = run.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(objects.count == 2)
            #expect(objects.map { $0["token"] as? String } == [String(versions[1]), String(versions[2])])
            #expect(objects[0]["author"] as? String == "app\tone" && objects[0]["context"] as? String == "editor")
            let updated = objects[0]["updated"] as? [[String: Any]]
            #expect(updated?.first?["id"] as? String == "cairn://Person/p1" && updated?.first?["properties"] as? [String] == ["age"])
            #expect(objects[1]["deleted"] as? [String] == ["cairn://Person/p2"] && (objects[1]["inserted"] as? [Any])?.isEmpty == true)
        }

        @Test func historyRefusesABadTokenAndPrintsNothingForAnUntrackedStore() throws {
            let directory = try TemporaryDirectory(purpose: "history-usage")
            defer { directory.remove() }
            let (path, _) = try Self.trackedStore(directory)
            for bad in ["-1", "x", "1.5", ""] {
                let run = try cairn("history", path, "--after", bad)
                #expect(run.status == 1 && run.errorOutput.contains("history token"), "\(bad): \(run)")
            }
            let plain = directory.path + "/plain"
            #expect(try cairn("put", plain, "k", "v").status == 0)
            let untracked = try cairn("history", plain)
            #expect(untracked.status == 0 && untracked.output.isEmpty, "\(untracked)")
            let missing = try cairn("history", directory.path + "/nothing")
            #expect(missing.status == 3, "\(missing)")
        }
    }
}
