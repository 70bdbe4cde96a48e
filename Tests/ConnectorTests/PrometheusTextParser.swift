import Foundation

/// A strict reader of the Prometheus text exposition format 0.0.4, written independently of the
/// code that renders it: any line it does not understand, a sample before its family's TYPE, a
/// family split in two, a duplicate series, a bad escape, or a histogram whose buckets are not
/// cumulative up to a `+Inf` bucket equal to `_count` is an error.
struct PrometheusExposition {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    private(set) var types: [String: String] = [:]
    private(set) var help: [String: String] = [:]
    private(set) var samples: [Sample] = []

    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    init(_ text: String) throws {
        guard text.isEmpty || text.hasSuffix("\n") else { throw ParseError(description: "the text does not end with a line feed") }
        var finished: Set<String> = []
        var current: String?
        var seen: Set<String> = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            let line = String(raw)
            func fail(_ why: String) -> ParseError { ParseError(description: "line \(number + 1): \(why): \(line)") }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                guard parts.count >= 3, parts[0] == "#", ["HELP", "TYPE"].contains(parts[1]) else { continue }  // a comment
                let name = parts[2]
                guard Self.isMetricName(name) else { throw fail("bad metric name") }
                if parts[1] == "TYPE" {
                    guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                        throw fail("bad TYPE")
                    }
                    guard types[name] == nil, !finished.contains(name) else { throw fail("second TYPE for \(name)") }
                    types[name] = parts[3]
                } else {
                    guard help[name] == nil else { throw fail("second HELP for \(name)") }
                    help[name] = parts.count == 4 ? try Self.unescape(parts[3], quotes: false) : ""
                }
                if current != name, let c = current { finished.insert(c) }
                current = name
                continue
            }
            let sample = try Self.sample(line, fail: fail)
            let family = family(of: sample.name)
            guard types[family] != nil else { throw fail("sample before the TYPE of \(family)") }
            guard !finished.contains(family) else { throw fail("\(family) appears in two places") }
            if current != family, let c = current { finished.insert(c) }
            current = family
            let key = sample.name + "|" + sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            guard seen.insert(key).inserted else { throw fail("duplicate series") }
            if types[family] == "counter", !(sample.value >= 0) { throw fail("negative or NaN counter") }
            samples.append(sample)
        }
        try checkHistograms()
    }

    /// The family a sample belongs to (`x_bucket` → `x` when `x` is a histogram).
    private func family(of name: String) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" || types[base] == "summary" { return base }
        }
        return name
    }

    private func checkHistograms() throws {
        for (name, type) in types where type == "histogram" {
            var series: [[String: String]: [(Double, Double)]] = [:]
            for s in samples where s.name == name + "_bucket" {
                guard let le = s.labels["le"], let bound = Self.number(le) else {
                    throw ParseError(description: "\(name)_bucket without a numeric le")
                }
                var rest = s.labels
                rest["le"] = nil
                series[rest, default: []].append((bound, s.value))
            }
            for (labels, buckets) in series {
                let sorted = buckets.sorted { $0.0 < $1.0 }
                guard sorted.last?.0 == .infinity else { throw ParseError(description: "\(name)\(labels) has no +Inf bucket") }
                guard zip(sorted, sorted.dropFirst()).allSatisfy({ $0.1 <= $1.1 }) else {
                    throw ParseError(description: "\(name)\(labels) buckets are not cumulative")
                }
                guard let count = samples.first(where: { $0.name == name + "_count" && $0.labels == labels })?.value,
                      samples.contains(where: { $0.name == name + "_sum" && $0.labels == labels })
                else { throw ParseError(description: "\(name)\(labels) lacks _sum or _count") }
                guard count == sorted.last?.1 else { throw ParseError(description: "\(name)\(labels): _count != +Inf bucket") }
            }
        }
    }

    /// The sum of every sample named `name`, whatever its labels (0 when there is none).
    func sum(_ name: String) -> Double {
        samples.filter { $0.name == name }.reduce(0) { $0 + $1.value }
    }

    /// The value of the one sample named `name` with exactly `labels`, nil when absent.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    private static func sample(_ line: String, fail: (String) -> ParseError) throws -> Sample {
        var rest = Substring(line)
        let name = String(rest.prefix { $0 != "{" && $0 != " " })
        guard isMetricName(name) else { throw fail("bad metric name") }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let label = String(rest.prefix { $0 != "=" })
                guard isMetricName(label), !label.contains(":") else { throw fail("bad label name") }
                rest = rest.dropFirst(label.count)
                guard rest.hasPrefix("=\"") else { throw fail("label without =\"") }
                rest = rest.dropFirst(2)
                var raw = ""
                var escaped = false, closed = false
                while let c = rest.first {
                    rest = rest.dropFirst()
                    if escaped { raw.append("\\"); raw.append(c); escaped = false; continue }
                    if c == "\\" { escaped = true; continue }
                    if c == "\"" { closed = true; break }
                    raw.append(c)
                }
                guard closed else { throw fail("unterminated label value") }
                guard labels[label] == nil else { throw fail("label \(label) twice") }
                labels[label] = try unescape(raw, quotes: true)
                if rest.first == "," { rest = rest.dropFirst(); guard rest.first != "}" else { throw fail("trailing comma") } }
                else if rest.first != "}" { throw fail("expected , or }") }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw fail("no space before the value") }
        let fields = rest.dropFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard (1...2).contains(fields.count), let value = number(String(fields[0])) else { throw fail("bad value") }
        if fields.count == 2, Int64(fields[1]) == nil { throw fail("bad timestamp") }
        return Sample(name: name, labels: labels, value: value)
    }

    static func number(_ text: String) -> Double? {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard let first = text.first, first.isNumber || first == "-" || first == "." else { return nil }
            return Double(text)
        }
    }

    private static func unescape(_ text: String, quotes: Bool) throws -> String {
        var out = ""
        var escaped = false
        for c in text {
            if escaped {
                switch c {
                case "\\": out.append("\\")
                case "n": out.append("\n")
                case "\"" where quotes: out.append("\"")
                default: throw ParseError(description: "bad escape \\\(c) in \(text)")
                }
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        guard !escaped else { throw ParseError(description: "dangling backslash in \(text)") }
        return out
    }

    private static func isMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first else { return false }
        func letter(_ c: Unicode.Scalar) -> Bool { (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_" || c == ":" }
        return letter(first) && name.unicodeScalars.allSatisfy { letter($0) || ($0 >= "0" && $0 <= "9") }
    }
}

/// `promtool check metrics` on `text` (Debian's `prometheus` package): its exit status and output.
func promtoolCheckMetrics(_ text: String) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
    process.arguments = ["check", "metrics"]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = output
    try process.run()
    try input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
