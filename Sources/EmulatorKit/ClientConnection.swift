import Glibc

/// One accepted client socket: reads bytes, picks HTTP/2 or HTTP/1.1 (ALPN, else the h2
/// preface), hands bytes to that protocol's session and writes what it answers.
final class ClientConnection: LoopHandler {
    private enum Mode {
        case sniffing([UInt8])
        case http2(H2Session)
        case http1(HTTP1Session)
    }

    static let http2Preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    let fd: Int32
    let loop: EventLoop
    let service: EmulatorService
    private let transport: Transport
    private var mode: Mode = .sniffing([])
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    private(set) var isClosed = false
    /// Our side is shut (after a finished GOAWAY or `Connection: close`); the peer's last bytes
    /// are read and dropped until it closes or `lingerLimit` passes. Closing with unread bytes
    /// would make the kernel send a reset that can destroy the GOAWAY before the peer reads it.
    private var lingering = false
    static let lingerLimit: Duration = .seconds(2)
    /// Close once everything queued is written (HTTP/1.1 `Connection: close`, finished GOAWAY).
    var closeAfterFlush = false

    init(fd: Int32, transport: Transport, loop: EventLoop, service: EmulatorService) {
        self.fd = fd
        self.transport = transport
        self.loop = loop
        self.service = service
    }

    var interest: Int16 {
        var events = Int16(POLLIN)
        if outboundStart < outbound.count || transport.wantsWritable { events |= Int16(POLLOUT) }
        return events
    }

    func handle(events: Int16) {
        if events & Int16(POLLNVAL) != 0 { close(); return }
        if events & Int16(POLLOUT) != 0 { flush() }
        if !isClosed, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
            if lingering { drainUntilPeerCloses() } else { readAvailable() }
        }
    }

    private func drainUntilPeerCloses() {
        let buffer = loop.readBuffer
        for _ in 0..<16 {
            switch transport.read(into: buffer) {
            case .bytes: continue
            case .wouldBlock: return
            case .closed: close(); return
            }
        }
    }

    private func beginLingeringClose() {
        guard !lingering, !isClosed else { return }
        lingering = true
        transport.shutdownWrite()
        loop.schedule(after: Self.lingerLimit) { [weak self] in self?.close() }
    }

    private func readAvailable() {
        let buffer = loop.readBuffer
        for _ in 0..<16 {
            switch transport.read(into: buffer) {
            case .bytes(let n):
                receive(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                if isClosed { return }
            case .wouldBlock:
                produceAndFlush()
                return
            case .closed:
                close()
                return
            }
        }
        produceAndFlush()
    }

    private func receive(_ bytes: UnsafeRawBufferPointer) {
        switch mode {
        case .http2(let session):
            if !session.receive(bytes) { close() }
        case .http1(let session):
            session.receive(bytes)
        case .sniffing(var seen):
            seen.append(contentsOf: bytes)
            switch transport.negotiatedProtocol {
            case "h2": startHTTP2(with: seen)
            case "http/1.1": startHTTP1(with: seen)
            default:
                let n = min(seen.count, Self.http2Preface.count)
                if seen[0..<n].elementsEqual(Self.http2Preface[0..<n]) {
                    if n == Self.http2Preface.count { startHTTP2(with: seen) } else { mode = .sniffing(seen) }
                } else {
                    startHTTP1(with: seen)
                }
            }
        }
    }

    private func startHTTP2(with bytes: [UInt8]) {
        guard let session = H2Session(connection: self) else { close(); return }
        mode = .http2(session)
        let ok = bytes.withUnsafeBytes { session.receive($0) }
        if !ok { close() }
    }

    private func startHTTP1(with bytes: [UInt8]) {
        let session = HTTP1Session(connection: self)
        mode = .http1(session)
        bytes.withUnsafeBytes { session.receive($0) }
    }

    /// Collects pending protocol output (HTTP/2 frames) and writes what the socket takes.
    func produceAndFlush() {
        guard !isClosed, !lingering else { return }
        if case .http2(let session) = mode {
            session.produceOutput()
            if session.isFinished { closeAfterFlush = true }
        }
        flush()
    }

    func enqueue(_ bytes: UnsafeRawBufferPointer) {
        if outboundStart == outbound.count { outbound.removeAll(keepingCapacity: true); outboundStart = 0 }
        outbound.append(contentsOf: bytes)
    }

    func enqueue(_ bytes: [UInt8]) { bytes.withUnsafeBytes { enqueue($0) } }

    private func flush() {
        while outboundStart < outbound.count {
            let result = outbound.withUnsafeBytes { raw in
                transport.write(UnsafeRawBufferPointer(rebasing: raw[outboundStart...]))
            }
            switch result {
            case .wrote(let n): outboundStart += n
            case .wouldBlock: return
            case .failed: close(); return
            }
        }
        outbound.removeAll(keepingCapacity: outbound.capacity <= 1 << 20)
        outboundStart = 0
        if closeAfterFlush { beginLingeringClose() }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        transport.close()
        mode = .sniffing([])
    }
}
