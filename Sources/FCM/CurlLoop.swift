import CCurl
import Dispatch
import FoundationEssentials
import OSThread
import Synchronization

/// One thread driving one curl multi handle: HTTP/2 multiplexed connections, pooled easy
/// handles, new requests picked up from a locked queue after `curl_multi_wakeup`.
///
/// Wake-ups (`LoopInbox`): `curl_multi_wakeup`, which a `curl_multi_poll` in progress or to come
/// returns on.
final class CurlLoop: @unchecked Sendable {

    private let configuration: CurlTransportConfiguration
    private let multi: UnsafeMutableRawPointer
    private let inbox = LoopInbox<CurlTransfer>()
    private let stopped = DispatchSemaphore(value: 0)
    private let idleWaitMillis: Int32
    // Loop-thread state.
    private var idleHandles: [UnsafeMutableRawPointer] = []
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// The header lists of the last few distinct header sets, reused by requests carrying the
    /// same lines (a bearer token per service account: a list is built when a token changes).
    private var headerLists: [CurlHeaderList] = []

    init(configuration: CurlTransportConfiguration, name: String) {
        CurlGlobal.initialize()
        self.configuration = configuration
        idleWaitMillis = Int32(clamping: Self.milliseconds(configuration.loopIdleWait))
        multi = curl_multi_init()
        pc_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        pc_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
                                  max(1, min(configuration.streamsPerConnection, 100)))
        pc_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.connectionsPerHost)
        pc_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(8, configuration.connectionsPerHost * 2))
        OSThread.start(name: name) { [self] in run() }
    }

    /// Queues a transfer for the loop's thread; fails it at once after `close()`.
    func submit(_ transfer: CurlTransfer) {
        if !inbox.submit(transfer, wake: { curl_multi_wakeup(multi) }) {
            transfer.finish(.failure(TransportError(kind: .shutdown, message: "transport shut down")))
        }
    }

    /// Stops the loop: transfers still running fail with `.shutdown`. Waits for the thread.
    func close() {
        guard inbox.close() else { return }
        curl_multi_wakeup(multi)
        stopped.wait()
        curl_multi_cleanup(multi)
    }

    private func run() {
        var batch: [CurlTransfer] = []
        while true {
            let closed = inbox.take(into: &batch)
            for transfer in batch { start(transfer) }
            batch.removeAll(keepingCapacity: true)
            if closed { break }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            collectCompleted()
            curl_multi_poll(multi, nil, 0, idleWaitMillis, nil)
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi, easy)
            transfer.finish(.failure(TransportError(kind: .shutdown, message: "transport shut down")))
            curl_easy_cleanup(easy)
        }
        active.removeAll()
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles.removeAll()
        stopped.signal()
    }

    private func start(_ transfer: CurlTransfer) {
        guard let easy = idleHandles.popLast() ?? makeHandle() else {
            transfer.finish(.failure(TransportError(kind: .other, message: "curl_easy_init failed")))
            return
        }
        let body = transfer.prepare(headers: headerList(for: transfer.request.headers))
        let url = transfer.request.url
        url.withCString { _ = pc_curl_easy_setopt_ptr(easy, CURLOPT_URL, $0) }
        let cleartextHTTP2 = configuration.cleartextHTTP2
        let cleartext = url.hasPrefix("http://") && cleartextHTTP2
        let version = url.hasPrefix("http://") ? (cleartextHTTP2 ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_1_1)
            : CURL_HTTP_VERSION_2TLS
        pc_curl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(version))
        // libcurl < 7.89 cannot reuse an h2c prior-knowledge connection (curl#10634: the second
        // stream fails with "Error in the HTTP2 framing layer"). There, each cleartext request
        // gets its own connection; TLS (the production path) multiplexes normally.
        let isolate = cleartext && CurlGlobal.priorKnowledgeReuseBroken
        pc_curl_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, isolate ? 1 : 0)
        pc_curl_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, isolate ? 1 : 0)
        if transfer.request.method == "GET" {
            pc_curl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
        } else {
            pc_curl_easy_setopt_long(easy, CURLOPT_POST, 1)
            pc_curl_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(transfer.request.body.count))
            pc_curl_easy_setopt_ptr(easy, CURLOPT_POSTFIELDS, body)
        }
        pc_curl_easy_setopt_ptr(easy, CURLOPT_HTTPHEADER, transfer.headerList)
        transfer.bodyLimit = max(1, configuration.maxResponseBytes)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        pc_curl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, context)
        pc_curl_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, context)
        active[easy] = transfer
        let added = curl_multi_add_handle(multi, easy)
        if added != CURLM_OK {
            active[easy] = nil
            idleHandles.append(easy)
            transfer.finish(.failure(TransportError(kind: .other, message: String(cString: curl_multi_strerror(added)))))
        }
    }

    private func headerList(for headers: [String]) -> CurlHeaderList {
        if let known = headerLists.first(where: { $0.headers == headers }) { return known }
        let list = CurlHeaderList(headers)
        headerLists.insert(list, at: 0)
        if headerLists.count > 8 { headerLists.removeLast() }  // transfers still using it keep it alive
        return list
    }

    private func collectCompleted() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            curl_multi_remove_handle(multi, easy)
            guard let transfer = active.removeValue(forKey: easy) else { continue }
            let result: Result<HTTPResponse, TransportError>
            if transfer.oversized {
                result = .failure(TransportError(kind: .responseTooLarge,
                                                 message: "response body larger than \(configuration.maxResponseBytes) bytes"))
            } else {
                var status = 0
                pc_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
                // A transfer cut after a 2xx status (reset, closed, timed out) is an answer too: FCM
                // accepted the message, and failing would have it sent again (the rule of
                // H2Exchange.finishInterrupted). Only when libcurl kept the status: 7.88 drops it
                // when a stream reset arrives with the headers, so that case is still a loss here.
                result = code == CURLE_OK || (200..<300).contains(status)
                    ? .success(HTTPResponse(status: status, body: transfer.responseBody, retryAfter: transfer.retryAfter))
                    : .failure(Self.transportError(code))
            }
            idleHandles.append(easy)
            transfer.finish(result)
        }
    }

    /// A new easy handle with every option that does not change between requests.
    private func makeHandle() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        configure(easy)
        return easy
    }

    private func configure(_ easy: UnsafeMutableRawPointer) {
        pc_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        pc_curl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        pc_curl_easy_setopt_long(easy, CURLOPT_POST, 1)
        pc_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        pc_curl_easy_setopt_long(easy, CURLOPT_TCP_NODELAY, 1)
        // A handle per request in flight (1 000 by default): libcurl's 16 KiB receive and 64 KiB
        // upload buffers per handle were most of the worker's memory. FCM's answers and our
        // bodies are a few hundred bytes; the smallest buffers libcurl takes are plenty.
        pc_curl_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, 4096)
        pc_curl_easy_setopt_long(easy, CURLOPT_UPLOAD_BUFFERSIZE, 16384)
        pc_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, configuration.verifyTLS ? 1 : 0)
        pc_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, configuration.verifyTLS ? 2 : 0)
        if let caFile = configuration.caFile {
            caFile.withCString { _ = pc_curl_easy_setopt_ptr(easy, CURLOPT_CAINFO, $0) }
        }
        pc_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout))
        pc_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Self.milliseconds(configuration.requestTimeout))
        pc_curl_easy_setopt_write(easy, CURLOPT_WRITEFUNCTION) { data, size, count, user in
            let length = size * count
            guard let data, let user, length > 0 else { return length }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
            let kept = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                transfer.appendBody(UnsafeBufferPointer(start: $0, count: length))
            }
            return kept ? length : 0  // 0 makes libcurl abort the transfer (CURLE_WRITE_ERROR)
        }
        pc_curl_easy_setopt_write(easy, CURLOPT_HEADERFUNCTION) { data, size, count, user in
            let length = size * count
            guard let data, let user, length > 0 else { return length }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
            data.withMemoryRebound(to: UInt8.self, capacity: length) {
                transfer.headerLine(UnsafeBufferPointer(start: $0, count: length))
            }
            return length
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    static func transportError(_ code: CURLcode) -> TransportError {
        let message = String(cString: curl_easy_strerror(code))
        let kind: TransportError.Kind
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            kind = .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            kind = .connectFailed
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_GOT_NOTHING,
             CURLE_PARTIAL_FILE:
            kind = .connectionLost
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_CERTPROBLEM:
            kind = .tls
        default:
            kind = .other
        }
        return TransportError(kind: kind, message: message)
    }
}

/// `curl_global_init`, exactly once per process.
enum CurlGlobal {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return true
    }()

    static func initialize() { _ = initialized }

    /// True for libcurl older than 7.89.0 (curl#10634, fixed by curl PR #10643).
    static let priorKnowledgeReuseBroken: Bool = {
        guard let info = curl_version_info(CURLVERSION_FIRST) else { return true }
        return info.pointee.version_num < 0x07_59_00
    }()
}
