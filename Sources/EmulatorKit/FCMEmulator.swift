import Foundation
import Synchronization

/// A running emulator: FCM HTTP v1 `messages:send`, the OAuth2 token endpoint and the
/// inspection endpoints, on one port, served by one event-loop thread.
public final class FCMEmulator: Sendable {
    /// Why the emulator could not start.
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    public let configuration: EmulatorConfiguration
    private let service: EmulatorService
    private let tls: TLSContext?
    private struct Running {
        var loop: EventLoop?
        var port = 0
        var finished: DispatchSemaphore?
    }
    private let state = Mutex(Running())

    public init(configuration: EmulatorConfiguration) throws {
        self.configuration = configuration
        var accounts: [ServiceAccountKey] = []
        for file in configuration.serviceAccountFiles {
            let text: String
            do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
                throw StartError(description: "cannot read service account file \(file)")
            }
            do { accounts.append(try ServiceAccountKey.parse(text)) } catch {
                throw StartError(description: "service account file \(file) is not usable: \(error)")
            }
        }
        switch (configuration.tlsCertificateFile, configuration.tlsKeyFile) {
        case let (cert?, key?): tls = try TLSContext(certificateFile: cert, keyFile: key)
        case (nil, nil): tls = nil
        default: throw StartError(description: "TLS needs both a certificate file and a key file")
        }
        service = EmulatorService(configuration: configuration, accounts: accounts)
    }

    deinit { stop() }

    /// Binds and starts serving; afterwards `port` is the bound port.
    public func start() throws {
        let (fd, port) = try Listener.bind(host: configuration.host, port: configuration.port)
        let loop = EventLoop()
        loop.add(Listener(fd: fd, loop: loop, service: service, tls: tls))
        let finished = DispatchSemaphore(value: 0)
        state.withLock { $0 = Running(loop: loop, port: port, finished: finished) }
        service.oauth.setOwnTokenURL(tokenURL)
        let thread = Thread {
            loop.run()
            finished.signal()
        }
        thread.name = "fcm-emulator"
        thread.start()
    }

    /// The bound port (after `start()`).
    public var port: Int { state.withLock { $0.port } }

    /// `http://HOST:PORT` or `https://HOST:PORT` (a wildcard host reads as 127.0.0.1).
    public var baseURL: String {
        var host = configuration.host
        if host == "0.0.0.0" || host.isEmpty { host = "127.0.0.1" }
        if host.contains(":") { host = "[\(host)]" }
        return "\(tls == nil ? "http" : "https")://\(host):\(port)"
    }

    /// The OAuth2 token endpoint (`baseURL + "/token"`).
    public var tokenURL: String { baseURL + "/token" }

    /// Stops serving and closes every connection; waits for the loop thread to finish.
    public func stop() {
        let running = state.withLock { s -> Running in
            let r = s
            s.loop = nil
            s.finished = nil
            return r
        }
        guard let loop = running.loop else { return }
        loop.stop()
        running.finished?.wait()
    }

    /// Accepted messages, oldest first, newest last (a bounded ring of `recordCapacity`).
    public func recordedMessages() -> [RecordedMessage] { service.store.messages() }

    /// Forgets the recorded messages (counters stay).
    public func clearRecordedMessages() { service.store.clear() }

    /// Outcome counts per project, since start.
    public func stats() -> EmulatorStats { service.store.stats() }

    /// Trusts one more service account (its JSON text) for `/token`, e.g. one made with
    /// `ServiceAccountFactory.make(…, tokenURI: emulator.tokenURL)` after `start()`.
    public func trustServiceAccount(json: String) throws {
        do { service.oauth.trust(try ServiceAccountKey.parse(json)) } catch {
            throw StartError(description: "service account JSON is not usable: \(error)")
        }
    }

    /// Fault: `/token` answers `fault` instead of a token until set back to nil.
    public func setTokenEndpointFault(_ fault: TokenEndpointFault?) { service.tokenFault.withLock { $0 = fault } }

    /// Fault: every access token issued so far stops working now (senders get 401).
    public func expireAccessTokens() { service.oauth.expireAll() }
}
