// A small hand-written argument parser: positionals, `--name VALUE` (or `--name=VALUE`)
// options, `--flag` switches, `-h`/`--help`, and `--` to end options so that a key or
// value may start with a dash.

/// An option a command accepts.
struct OptionSpec: Sendable {
    /// The long name, without the leading dashes: `table` for `--table`.
    let name: String
    /// The placeholder of its value (`T` for `--table T`), or nil for a flag.
    let valueName: String?
    /// One line of help.
    let help: String

    /// An option that takes a value.
    static func value(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help)
    }

    /// A switch without a value.
    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: nil, help: help)
    }

    /// How the option is written in a usage line: `--table T` or `--reverse`.
    var synopsis: String {
        valueName.map { "--\(name) \($0)" } ?? "--\(name)"
    }
}

/// The parsed command line of one command.
struct Arguments {
    /// The positional arguments, in order.
    var positionals: [String] = []
    /// The options given with a value, by name.
    var values: [String: String] = [:]
    /// The flags given, by name.
    var flags: Set<String> = []
    /// Whether `-h` or `--help` was given.
    var helpRequested = false

    /// The value of option `name`, or nil when it was not given.
    func value(_ name: String) -> String? {
        values[name]
    }

    /// Whether flag `name` was given.
    func flag(_ name: String) -> Bool {
        flags.contains(name)
    }

    /// The value of option `name` as an integer in `range`, or `defaultValue` when absent.
    ///
    /// Throws `CommandError.usage` when the value is not a whole number in `range`.
    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(CommandError) -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            let wanted = range.upperBound == Int.max
                ? "\(range.lowerBound) or more" : "from \(range.lowerBound) to \(range.upperBound)"
            throw CommandError.usage("--\(name) needs a whole number \(wanted), not \"\(abbreviated(text))\"")
        }
        return number
    }

    /// Parses `words` (the words after the command name) against `options`.
    ///
    /// Throws `CommandError.usage` for an unknown option, a missing option value, or an
    /// option given twice. Positional counts are checked by the caller, after `--help`.
    static func parse(_ words: [String], options: [OptionSpec]) throws(CommandError) -> Arguments {
        var parsed = Arguments()
        var index = 0
        var optionsEnded = false
        while index < words.count {
            let word = words[index]
            index += 1
            if optionsEnded || word == "-" || !word.hasPrefix("-") {
                parsed.positionals.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            if word == "-h" || word == "--help" {
                parsed.helpRequested = true
                continue
            }
            guard word.hasPrefix("--") else {
                throw CommandError.usage("unknown option \(abbreviated(word))")
            }
            var name = String(word.dropFirst(2))
            var inlineValue: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw CommandError.usage("unknown option --\(abbreviated(name))")
            }
            if parsed.values[name] != nil || parsed.flags.contains(name) {
                throw CommandError.usage("--\(name) is given more than once")
            }
            guard let valueName = option.valueName else {
                if inlineValue != nil { throw CommandError.usage("--\(name) does not take a value") }
                parsed.flags.insert(name)
                continue
            }
            if let inlineValue {
                parsed.values[name] = inlineValue
            } else if index < words.count {
                parsed.values[name] = words[index]
                index += 1
            } else {
                throw CommandError.usage("--\(name) needs a value (\(valueName))")
            }
        }
        return parsed
    }
}
