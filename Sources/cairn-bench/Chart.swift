import Foundation

/// Draws commits/s against writer count, one line per system, as a standalone SVG.
enum Chart {
    static func svg(title: String, writers: [Int], series: [(system: String, rates: [Double])]) -> String {
        let width = 760.0, height = 420.0, left = 80.0, right = 200.0, top = 40.0, bottom = 50.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let maxRate = max(1, series.flatMap(\.rates).max() ?? 1)
        let step = niceStep(maxRate / 5)
        let yMax = (maxRate / step).rounded(.up) * step
        let colors = ["#1b6ac9", "#d1495b", "#2e933c", "#edae49", "#7b4fa0", "#555555"]
        func x(_ index: Int) -> Double { left + plotWidth * Double(index) / Double(max(1, writers.count - 1)) }
        func y(_ rate: Double) -> Double { top + plotHeight * (1 - rate / yMax) }
        var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(left)" y="24" font-size="15">\(title)</text>

        """
        var tick = 0.0
        while tick <= yMax + 0.5 {
            svg += "<line x1=\"\(left)\" y1=\"\(y(tick))\" x2=\"\(left + plotWidth)\" y2=\"\(y(tick))\" stroke=\"#e4e4e4\"/>\n"
            svg += "<text x=\"\(left - 8)\" y=\"\(y(tick) + 4)\" text-anchor=\"end\">\(Int(tick))</text>\n"
            tick += step
        }
        for (index, count) in writers.enumerated() {
            svg += "<text x=\"\(x(index))\" y=\"\(top + plotHeight + 18)\" text-anchor=\"middle\">\(count)</text>\n"
        }
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(height - 10)\" text-anchor=\"middle\">concurrent writers</text>\n"
        svg += "<text x=\"18\" y=\"\(top + plotHeight / 2)\" transform=\"rotate(-90 18 \(top + plotHeight / 2))\" text-anchor=\"middle\">commits/s</text>\n"
        for (index, line) in series.enumerated() {
            let color = colors[index % colors.count]
            let points = line.rates.enumerated().map { "\(x($0.offset)),\(y($0.element))" }.joined(separator: " ")
            svg += "<polyline points=\"\(points)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2.5\"/>\n"
            for (position, rate) in line.rates.enumerated() {
                svg += "<circle cx=\"\(x(position))\" cy=\"\(y(rate))\" r=\"3.5\" fill=\"\(color)\"/>\n"
            }
            let legendY = top + 20 * Double(index)
            svg += "<rect x=\"\(left + plotWidth + 20)\" y=\"\(legendY - 9)\" width=\"14\" height=\"4\" fill=\"\(color)\"/>\n"
            svg += "<text x=\"\(left + plotWidth + 40)\" y=\"\(legendY - 3)\">\(line.system)</text>\n"
        }
        return svg + "</svg>\n"
    }

    private static func niceStep(_ raw: Double) -> Double {
        let magnitude = pow(10, floor(log10(max(raw, 1))))
        for factor in [1.0, 2.0, 5.0, 10.0] where raw <= factor * magnitude { return factor * magnitude }
        return 10 * magnitude
    }
}
