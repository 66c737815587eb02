/// `cairn version` (and `cairn --version`): which Cairn the tool is.
enum VersionCommand {
    /// Cairn's version, semantic versioning: raised with each release, in the same commit as the
    /// README's changes for it. Scripts may compare it, so it is only ever MAJOR.MINOR.PATCH.
    static let version = "0.1.0"

    /// What both spellings print: `cairn 0.1.0` and a line feed.
    static var line: String { "cairn \(version)\n" }

    static let command = Command(
        name: "version",
        summary: "Print the tool's version (also 'cairn --version').",
        arguments: [],
        options: [],
        discussion: "Prints 'cairn MAJOR.MINOR.PATCH' on standard output."
    ) { _ in
        StandardStream.output.write(line)
        return .success
    }
}
