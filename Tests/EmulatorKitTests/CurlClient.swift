import Foundation

/// What the curl CLI got back.
struct CurlResponse {
    var status: Int
    var headers: [String: String]
    var body: String
    /// curl's `-w` report: `http_version num_connects`.
    var httpVersion: String
    var connects: Int

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    }
    var error: [String: Any] { json["error"] as? [String: Any] ?? [:] }
    var errorCode: String? {
        ((error["details"] as? [[String: Any]])?.first { ($0["@type"] as? String)?.hasSuffix("FcmError") == true })?["errorCode"] as? String
    }
}

/// Drives the real `curl` CLI (HTTP/2 prior knowledge by default): a real HTTP/2 client.
enum Curl {
    struct Failure: Error, CustomStringConvertible { let description: String }

    static func run(_ method: String, _ url: String, body: String? = nil, headers: [String] = [],
                    http2: Bool = true, extra: [String] = []) throws -> CurlResponse {
        var args = ["-s", "-S", "-i", "--max-time", "20", "-X", method]
        if url.hasPrefix("http://") && http2 { args.append("--http2-prior-knowledge") }
        if !http2 { args.append("--http1.1") }
        for h in headers { args += ["-H", h] }
        if body != nil { args += ["-H", "content-type: application/json", "--data-binary", "@-"] }
        args += extra
        args += ["-w", "\n%{http_version} %{num_connects}", url]
        let (out, status) = try execute(args, input: body)
        guard status == 0 else { throw Failure(description: "curl exited \(status): \(out)") }
        return try parse(out)
    }

    static func execute(_ args: [String], input: String?) throws -> (String, Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = args
        let output = Pipe(), inputPipe = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = inputPipe
        try process.run()
        if let input { try inputPipe.fileHandleForWriting.write(contentsOf: Data(input.utf8)) }
        try inputPipe.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: data, as: UTF8.self), process.terminationStatus)
    }

    static func parse(_ out: String) throws -> CurlResponse {
        var rest = Substring(out)
        var status = 0
        var headers: [String: String] = [:]
        repeat {
            guard let end = rest.range(of: "\r\n\r\n") else { throw Failure(description: "no HTTP head in: \(out)") }
            let lines = rest[..<end.lowerBound].components(separatedBy: "\r\n")
            status = Int(lines[0].split(separator: " ")[1]) ?? 0
            headers = [:]
            for line in lines.dropFirst() {
                if let colon = line.firstIndex(of: ":") {
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            rest = rest[end.upperBound...]
        } while status == 100
        guard let lastNewline = rest.lastIndex(of: "\n") else { throw Failure(description: "no -w report in: \(out)") }
        let report = rest[rest.index(after: lastNewline)...].split(separator: " ")
        return CurlResponse(status: status, headers: headers, body: String(rest[..<lastNewline]),
                            httpVersion: String(report.first ?? ""), connects: Int(report.last ?? "") ?? -1)
    }
}
