/// The save failed on conflicts; lists every one of them with all three states.
///
/// Thrown by ``ErrorMergePolicy`` (the default of every context). The context writes nothing and
/// keeps its pending changes, so the caller can refresh the objects with
/// `refresh(_:mergeChanges: true)` and save again.
///
/// ```swift
/// do {
///     try context.save()
/// } catch let error as MergeError {
///     for conflict in error.conflicts { print(conflict.objectID, conflict.kind) }
/// }
/// ```
public struct MergeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Every conflict of the failed save, in the order the policy received them.
    ///
    /// ```swift
    /// error.conflicts.map(\.objectID)
    /// ```
    public let conflicts: [MergeConflict]

    /// Creates the error for these conflicts.
    ///
    /// ```swift
    /// throw MergeError(conflicts: conflicts)
    /// ```
    public init(conflicts: [MergeConflict]) {
        self.conflicts = conflicts
    }

    /// One line per conflict: object ID, kind, ancestor version and values, ours, theirs and
    /// their version; properties sorted by name so the text is stable.
    ///
    /// ```swift
    /// print(error)
    /// // merge conflict on 1 object:
    /// // - cairn://Person/p1 (update/update): ancestor v1 {age: 30, name: "Ann"};
    /// //   ours {age: 40, name: "Ann"}; theirs v2 {age: 31, name: "Ann"}
    /// ```
    ///
    /// (The example wraps one line in two for width.) A constraint conflict's line names the
    /// constraint, its values and the stored object holding them:
    /// `- cairn://Person/t1 (constraint [email] = {email: "a@x"}): already held by cairn://Person/3 v1 {…}; ours {…}`.
    public var description: String {
        let noun = conflicts.count == 1 ? "object" : "objects"
        var lines = ["merge conflict on \(conflicts.count) \(noun):"]
        for conflict in conflicts {
            let ours = conflict.ourValues.map(Self.render) ?? "deleted"
            let theirs = conflict.storeValues.map { "v\(conflict.storeVersion) " + Self.render($0) }
                ?? "deleted (version \(conflict.storeVersion))"
            if conflict.kind == .constraint {
                lines.append(
                    "- \(conflict.objectID) (constraint [\(conflict.constraint.joined(separator: ", "))] = "
                        + "\(Self.render(conflict.constraintValues))): already held by \(conflict.storedObjectID ?? "?") "
                        + "v\(conflict.storeVersion) \(Self.render(conflict.storeValues ?? [:])); ours \(ours)"
                )
                continue
            }
            lines.append(
                "- \(conflict.objectID) (\(conflict.kind.rawValue)): "
                    + "ancestor v\(conflict.ancestorVersion) \(Self.render(conflict.ancestorValues)); "
                    + "ours \(ours); theirs \(theirs)"
            )
        }
        return lines.joined(separator: "\n")
    }

    private static func render(_ values: PropertyValues) -> String {
        "{" + values.keys.sorted().map { "\($0): \(values.value(of: $0))" }.joined(separator: ", ") + "}"
    }
}
