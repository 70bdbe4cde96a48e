import AMQP
import Foundation
import Testing

@Suite("AMQP settings and credentials", .timeLimit(.minutes(2)))
struct AMQPSettingsTests {
    @Test func parsesUserPasswordHostPortAndVhostWithPercentDecoding() throws {
        let s = try AMQPSettings(url: "amqp://us%40er:p%3Ass%2Fw@broker.example:5673/my%2Fvhost")
        #expect(s.user == "us@er")
        #expect(s.password == "p:ss/w")
        #expect(s.host == "broker.example")
        #expect(s.port == 5673)
        #expect(s.vhost == "my/vhost")
        #expect(s.tls == nil)
    }

    /// Escapes are decoded exactly (without Foundation): a malformed escape or bytes that are not
    /// UTF-8 are refused with the part named, and the redacted URL escapes what needs it.
    @Test func malformedPercentEscapesAreRefusedAndTheRedactedURLEscapesTheUserAndVhost() throws {
        for (url, part) in [("amqp://us%4:secret@h/", "user"), ("amqp://user:s%zzecret@h/", "password"),
                            ("amqp://user:secret@h/v%ff", "vhost"), ("amqp://user:secret@h/v%", "vhost")] {
            let error = #expect(throws: AMQPError.self, "\(url)") { try AMQPSettings(url: url) }
            #expect("\(error.map { "\($0)" } ?? "")".contains("bad percent-encoding in the \(part)"), "\(url): \(String(describing: error))")
        }
        let s = try AMQPSettings(url: "amqp://%C3%A9t%C3%A9%20ops%2C1:pw@h:5672/a%2Fb~c")
        #expect(s.user == "été ops,1" && s.vhost == "a/b~c")
        #expect(s.redactedURL == "amqp://%C3%A9t%C3%A9%20ops%2C1:***@h:5672/a%2Fb~c")
    }

    @Test func defaultsToVhostSlashAndPort5672() throws {
        let s = try AMQPSettings(url: "amqp://app:secret@10.0.0.1")
        #expect(s.vhost == "/")
        #expect(s.port == 5672)
        let slash = try AMQPSettings(url: "amqp://app:secret@10.0.0.1:5672/")
        #expect(slash.vhost == "/")
        let encodedSlash = try AMQPSettings(url: "amqp://app:secret@10.0.0.1/%2F")
        #expect(encodedSlash.vhost == "/")
    }

    @Test func amqpsEnablesTLSWithVerificationOnAndPort5671() throws {
        let s = try AMQPSettings(url: "amqps://app:secret@rabbit.internal/prod?cacertfile=/etc/ca.pem&heartbeat=10")
        #expect(s.port == 5671)
        #expect(s.tls == AMQPSettings.TLS(caFile: "/etc/ca.pem", verifyPeer: true, verifyHostname: true))
        #expect(s.heartbeatSeconds == 10)
    }

    @Test func rejectsOtherSchemesAndBadPortsWithoutLeakingThePassword() {
        for url in ["http://u:hunter2@h/", "amqp://u:hunter2@h:99999/", "amqp://u:hunter2@h:abc/"] {
            do {
                _ = try AMQPSettings(url: url)
                Issue.record("accepted \(url)")
            } catch {
                #expect(error.code == .invalidURL)
                #expect(!String(describing: error).contains("hunter2"))
            }
        }
    }

    @Test func refusesAnEmptyQueryPairWithACleanError() {
        for url in ["amqp://h/?=", "amqp://h/?heartbeat=5&=x", "amqp://h/?=&"] {
            #expect(throws: AMQPError.self, "\(url)") { try AMQPSettings(url: url) }
        }
        // A pair with a name and no value is still fine.
        #expect((try? AMQPSettings(url: "amqp://h/?cacertfile"))?.host == "h")
    }

    @Test func refusesAPasswordWithAnUnencodedSlashQuestionMarkOrHashWithoutEchoingIt() {
        // "12/x" would otherwise parse as host "app", port 12 and vhost "x@h" - part of the password in logs.
        for url in ["amqp://app:12/x@h/v", "amqp://app:12/secret9@h", "amqp://app:12?secret9@h/", "amqp://app:12#secret9@h/",
                    "amqps://app:sec/ret9@h:5671/"] {
            do {
                _ = try AMQPSettings(url: url)
                Issue.record("accepted \(url)")
            } catch {
                #expect(error.code == .invalidURL)
                #expect(String(describing: error).contains("ambiguous"))
                for fragment in ["12", "secret9", "ret9", "sec"] where url.contains(fragment) {
                    #expect(!String(describing: error).contains(fragment), "\(error)")
                }
            }
        }
        // Percent-encoded, the same password is accepted and decoded.
        let s = try? AMQPSettings(url: "amqp://app:12%2Fx@h/v")
        #expect(s?.password == "12/x" && s?.host == "h" && s?.vhost == "v")
    }

    @Test func descriptionRedactsThePassword() throws {
        let s = try AMQPSettings(url: "amqp://app:hunter2@h:5672/v")
        #expect(s.description == "amqp://app:***@h:5672/v")
        #expect(!"\(s)".contains("hunter2"))
        #expect(AMQPSettings.redact("amqp://app:hunter2@h/v") == "amqp://app:***@h/v")
    }

    @Test func connectionErrorsDoNotContainThePassword() async throws {
        // Port 1 on loopback: nothing listens there.
        let s = try AMQPSettings(url: "amqp://app:hunter2@127.0.0.1:1/")
        do {
            _ = try await ConfirmingPublisher.connect(settings: s)
            Issue.record("connected to port 1")
        } catch let error as AMQPError {
            #expect(error.code == .connectionFailed)
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func passwordInTheURLWinsOverTheEnvironment() throws {
        let resolver = AMQPCredentialResolver(environment: ["PUSH_CONNECTOR_AMQP_PASSWORD": "env"])
        #expect(try resolver.settings(url: "amqp://app:url@h/").password == "url")
    }

    @Test func passwordComesFromTheEnvironmentVariable() throws {
        let resolver = AMQPCredentialResolver(environment: ["PUSH_CONNECTOR_AMQP_PASSWORD": "from-env",
                                                            "PUSH_CONNECTOR_AMQP_PASSWORD_FILE": "/x"])
        #expect(try resolver.settings(url: "amqp://app@h/").password == "from-env")
    }

    @Test func passwordComesFromTheFileWithoutItsTrailingNewline() throws {
        let resolver = AMQPCredentialResolver(
            environment: ["PUSH_CONNECTOR_AMQP_PASSWORD_FILE": "/run/secrets/amqp"],
            readFile: { path in path == "/run/secrets/amqp" ? "s3cret\n" : "" })
        let s = try resolver.settings(url: "amqp://app@h/")
        #expect(s.password == "s3cret")
        #expect(s.user == "app")
    }

    @Test func unreadablePasswordFileIsAnInvalidSettingsError() {
        struct Missing: Error {}
        let resolver = AMQPCredentialResolver(environment: ["PUSH_CONNECTOR_AMQP_PASSWORD_FILE": "/nope"],
                                              readFile: { _ in throw Missing() })
        #expect(throws: AMQPError.self) { try resolver.settings(url: "amqp://app@h/") }
    }

    @Test func noPasswordAnywhereLeavesItEmpty() throws {
        let resolver = AMQPCredentialResolver(environment: [:])
        #expect(try resolver.settings(url: "amqp://app@h/").password == "")
    }
}
