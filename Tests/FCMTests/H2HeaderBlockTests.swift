import CNGHTTP2
import Testing
@testable import FCM

/// How H2Transport turns a URL into an origin and `:path`, and header lines into HTTP/2 fields.
@Suite struct H2HeaderBlockTests {
    @Test func originAndPathComeFromTheURL() throws {
        let tls = try #require(H2Origin.parse("https://fcm.googleapis.com/v1/projects/p/messages:send"))
        #expect(tls.origin == H2Origin(tls: true, host: "fcm.googleapis.com", port: 443, authority: "fcm.googleapis.com"))
        #expect(tls.path == "/v1/projects/p/messages:send")
        let plain = try #require(H2Origin.parse("http://127.0.0.1:8080"))
        #expect(plain.origin == H2Origin(tls: false, host: "127.0.0.1", port: 8080, authority: "127.0.0.1:8080"))
        #expect(plain.path == "/")
        let v6 = try #require(H2Origin.parse("http://[::1]:9/token?x=1"))
        #expect(v6.origin.host == "::1" && v6.origin.port == 9 && v6.origin.authority == "[::1]:9")
        #expect(v6.path == "/token?x=1")
        #expect(H2Origin.parse("http://host?q")?.path == "/?q")
    }

    @Test(arguments: ["ftp://host/x", "https://", "https://host:0/", "https://host:70000/", "https://user@host/",
                      "https://[::1/x", "https://:443/", "fcm.googleapis.com/v1"])
    func malformedURLsAreRefused(url: String) {
        #expect(H2Origin.parse(url) == nil)
    }

    @Test func headerLinesBecomeLowerCasedFieldsAfterThePseudoHeaders() throws {
        let block = try #require(H2HeaderBlock(url: "https://fcm.example:8443/v1/send",
                                               lines: ["Content-Type: application/json", "Authorization: Bearer abc: def",
                                                       "Expect:", "Connection: keep-alive", "Host: other", "X-Tight:value"],
                                               method: "POST"))
        let fields = block.withFields { pointer, count in
            UnsafeBufferPointer(start: pointer, count: count).map {
                (String(decoding: UnsafeBufferPointer(start: $0.name, count: $0.namelen), as: UTF8.self),
                 String(decoding: UnsafeBufferPointer(start: $0.value, count: $0.valuelen), as: UTF8.self))
            }
        }
        #expect(fields.map(\.0) == [":method", ":scheme", ":authority", ":path", "content-type", "authorization", "x-tight"])
        #expect(fields.map(\.1) == ["POST", "https", "fcm.example:8443", "/v1/send", "application/json", "Bearer abc: def", "value"])
    }

    /// A metadata-server token is a GET: the block carries the request's method, not always POST.
    @Test func theMethodPseudoHeaderIsTheRequests() throws {
        let block = try #require(H2HeaderBlock(url: "http://127.0.0.1:8085/token", lines: ["Metadata-Flavor: Google"], method: "GET"))
        let method = block.withFields { pointer, _ in
            String(decoding: UnsafeBufferPointer(start: pointer[0].value, count: pointer[0].valuelen), as: UTF8.self)
        }
        #expect(method == "GET")
    }
}
