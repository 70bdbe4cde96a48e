// Reports what a user did with a push (receive, open, click, dismiss) to push-connector's events
// endpoint from an iOS app: the same rules as examples/web/push-events.js (docs/apps.md,
// "Offline batching and retry rules"). Foundation only; drop the file into the app target.
//
//   let events = PushEvents(endpoint: URL(string: "https://events.shop.example")!, appID: "shop-ios", key: "…")
//   // UNUserNotificationCenterDelegate, didReceive response:
//   if let id = PushEvents.messageID(from: response.notification.request.content.userInfo) {
//       Task { await events.report(.open, messageID: id) }
//   }
//
// Events wait in a queue kept in a file (Application Support), so that a killed app loses
// nothing, and go to POST /events one batch at a time, at most 500 events and 60 000 bytes:
//   202          sent; the events listed in `rejected` are invalid and dropped
//   400          the whole batch is invalid: dropped, and told to `onDrop`
//   413          too large for the endpoint: sent again in halves (an event alone over the limit is dropped)
//   401, 403     the key is refused: kept, and reporting stops until `flush()` is called again
//   503, network kept, and retried after Retry-After (else 5 s, doubling to 5 min)
// An answer removes exactly the events of its own batch. Each event carries an event_id, so
// that a batch sent twice (an answer lost) counts once.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

public actor PushEvents {
    public enum EventType: String, Sendable { case receive, open, click, dismiss }

    /// One queued event, as the endpoint reads it.
    public struct Event: Codable, Sendable, Equatable {
        public var event_type: String
        public var mn_message_id: String
        public var app_id: String
        public var occurred_at: String
        public var event_id: String
    }

    public static let maxBatch = 500
    public static let maxBatchBytes = 60_000

    private let endpoint: URL
    private let appID: String
    private let key: String?
    private let file: URL
    private let session: URLSession
    private let onDrop: @Sendable ([Event], String) -> Void
    private var queue: [Event]
    private var sending: Task<Void, Never>?
    private var retry: Task<Void, Never>?
    private var stopped = false
    private var delay: Double = 5
    private var batchLimit = PushEvents.maxBatch

    /// `file`: where the queue is kept (default: Application Support/push-events-queue.json).
    public init(endpoint: URL, appID: String, key: String? = nil, file: URL? = nil, session: URLSession = .shared,
                onDrop: @escaping @Sendable ([Event], String) -> Void = { _, _ in }) {
        self.endpoint = endpoint
        self.appID = appID
        self.key = key
        let folder = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        self.file = file ?? folder.appendingPathComponent("push-events-queue.json")
        self.session = session
        self.onDrop = onDrop
        self.queue = (try? JSONDecoder().decode([Event].self, from: Data(contentsOf: self.file))) ?? []
    }

    /// The `mn_message_id` of a push's `userInfo` (the data keys FCM hands to the app), or nil.
    public static func messageID(from userInfo: [AnyHashable: Any]) -> String? {
        userInfo["mn_message_id"] as? String
    }

    /// Events waiting to be sent.
    public var pending: Int { queue.count }

    /// Queues one event and sends what is queued; returns once the queue is empty or must wait.
    public func report(_ type: EventType, messageID: String, at date: Date = Date()) async {
        guard !messageID.isEmpty else { return }
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let formatter = ISO8601DateFormatter()
        queue.append(Event(event_type: type.rawValue, mn_message_id: messageID, app_id: appID,
                           occurred_at: formatter.string(from: date), event_id: "\(type.rawValue)-\(messageID)-\(millis)-\(suffix)"))
        save()
        await flush()
    }

    /// Sends the queue, batch by batch. One sending loop at a time: a call while one runs waits
    /// for that loop (which sends what was queued since).
    public func flush() async {
        if let sending { return await sending.value }
        stopped = false
        let loop = Task { await self.sendAll() }
        sending = loop
        await loop.value
        sending = nil
    }

    private func sendAll() async {
        while !queue.isEmpty && !stopped {
            let batch = nextBatch()
            var request = URLRequest(url: endpoint.appendingPathComponent("events"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if let key { request.setValue(key, forHTTPHeaderField: "X-Push-Event-Key") }
            request.httpBody = try? JSONEncoder().encode(["events": batch])
            let status: Int
            let answer: Data
            let retryAfter: String?
            do {
                let (data, response) = try await session.data(for: request)
                guard let http = response as? HTTPURLResponse else { return retryLater(nil) }
                (status, answer, retryAfter) = (http.statusCode, data, http.value(forHTTPHeaderField: "Retry-After"))
            } catch {
                return retryLater(nil)
            }
            switch status {
            case 202:
                let rejected = Self.rejectedIndexes(answer).compactMap { $0 < batch.count ? batch[$0] : nil }
                if !rejected.isEmpty { onDrop(rejected, "rejected by the endpoint") }
                done(batch)
            case 413 where batch.count > 1:
                batchLimit = max(1, batch.count / 2)  // smaller batches from now on
            case 400, 413:
                onDrop(batch, "refused: \(status)")
                done(batch)
            case 401, 403:
                stopped = true  // a configuration problem: keep the events, stop until flush() again
                return
            default:
                return retryLater(retryAfter)
            }
        }
    }

    /// The first events of the queue that fit one batch, by count and by bytes.
    private func nextBatch() -> [Event] {
        var batch: [Event] = []
        var bytes = 0
        let encoder = JSONEncoder()
        for event in queue {
            guard batch.count < min(Self.maxBatch, batchLimit) else { break }
            let size = ((try? encoder.encode(event))?.count ?? 0) + 1
            if !batch.isEmpty && bytes + size > Self.maxBatchBytes { break }
            batch.append(event)
            bytes += size
        }
        return batch
    }

    /// Removes the events of `batch`, and only those, from the queue.
    private func done(_ batch: [Event]) {
        let sent = Set(batch.map(\.event_id))
        queue.removeAll { sent.contains($0.event_id) }
        delay = 5
        save()
    }

    private func retryLater(_ retryAfter: String?) {
        let wait = retryAfter.flatMap(Double.init).flatMap { $0 > 0 ? $0 : nil } ?? delay
        delay = min(delay * 2, 300)
        retry?.cancel()
        retry = Task {
            try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
            guard !Task.isCancelled else { return }
            await self.flush()
        }
    }

    private static func rejectedIndexes(_ answer: Data) -> [Int] {
        guard let object = try? JSONSerialization.jsonObject(with: answer) as? [String: Any],
              let rejected = object["rejected"] as? [[String: Any]] else { return [] }
        return rejected.compactMap { $0["index"] as? Int }
    }

    private func save() {
        guard let data = try? JSONEncoder().encode(queue) else { return }
        try? data.write(to: file, options: .atomic)
    }
}
