// A table with one column per merge policy, as plain aligned text or as Markdown. In each row
// where the policies disagree, the cells that differ from the row's most common value (ties:
// the leftmost) stand out: a trailing `*` in text, bold in Markdown.

/// Rows of labels and per-policy cells.
struct ComparisonTable {
    /// Headers of the label columns (the first columns).
    let labelHeaders: [String]
    /// Headers of the compared columns: policy names.
    let columns: [String]
    private(set) var rows: [Row] = []

    struct Row {
        let labels: [String]
        let cells: [String]

        /// Which cells stand out: those that differ from the most common cell of the row.
        var marks: [Bool] {
            guard Set(cells).count > 1 else { return cells.map { _ in false } }
            var counts: [String: Int] = [:]
            for cell in cells { counts[cell, default: 0] += 1 }
            let top = counts.values.max()!
            let common = cells.first { counts[$0] == top }!
            return cells.map { $0 != common }
        }
    }

    init(labelHeaders: [String], columns: [String]) {
        self.labelHeaders = labelHeaders
        self.columns = columns
    }

    mutating func append(labels: [String], cells: [String]) {
        precondition(labels.count == labelHeaders.count && cells.count == columns.count, "row shape")
        rows.append(Row(labels: labels, cells: cells))
    }

    /// Whether any row has a cell that stands out.
    var hasMarks: Bool { rows.contains { $0.marks.contains(true) } }

    /// Aligned columns separated by two spaces; marked cells end in `*`.
    var text: String {
        let headers = labelHeaders + columns
        var lines: [[String]] = [headers]
        for row in rows {
            let cells = zip(row.cells, row.marks).map { $1 ? $0 + "*" : $0 }
            lines.append(row.labels + cells)
        }
        var widths = headers.map(\.count)
        for line in lines {
            for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var out = ""
        for line in lines {
            var text = ""
            for (index, cell) in line.enumerated() {
                text += index == line.count - 1 ? cell : cell.padded(to: widths[index] + 2)
            }
            while text.hasSuffix(" ") { text.removeLast() }
            out += text + "\n"
        }
        if hasMarks { out += "\n* differs from the most common value in its row\n" }
        return out
    }

    /// A GitHub-flavoured Markdown table; marked cells are bold.
    var markdown: String {
        func escape(_ cell: String) -> String {
            cell.replacing("\\", with: "\\\\").replacing("|", with: "\\|")
        }
        let headers = labelHeaders + columns
        var out = "| " + headers.map(escape).joined(separator: " | ") + " |\n"
        out += "|" + String(repeating: "---|", count: headers.count) + "\n"
        for row in rows {
            let cells = zip(row.cells, row.marks).map { $1 ? "**\(escape($0))**" : escape($0) }
            out += "| " + (row.labels.map(escape) + cells).joined(separator: " | ") + " |\n"
        }
        if hasMarks { out += "\nBold: differs from the most common value in its row.\n" }
        return out
    }
}
