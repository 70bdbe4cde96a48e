// Reports what a user did with a push (receive, open, click, dismiss) to push-connector's events
// endpoint, from a web page or a service worker. No dependencies; an ES module.
//
//   import { PushEvents, messageIdFrom } from "./push-events.js";
//   const events = new PushEvents({ endpoint: "https://events.shop.example", appId: "shop-web", key: "…" });
//   onMessage(messaging, (payload) => events.report("receive", messageIdFrom(payload)));   // firebase/messaging
//
// The endpoint must list the page's origin in the App ID's `allowed_origins` (docs/apps.md).
// Events wait in a queue (kept in localStorage when there is one, so a closed tab loses
// nothing) and go to POST /events one batch at a time (one request in flight, whoever calls
// `report` or `flush`), each batch at most 500 events and 60 000 bytes, so that it may be sent
// with `keepalive` (the Fetch standard allows 64 KiB) and survive the page closing:
//   202          sent; the events listed in `rejected` are invalid and dropped (resending cannot help)
//   400          the whole batch is invalid: dropped, and the reason given to `onDrop`
//   413          too large for the endpoint: sent again in halves (an event alone over the limit is dropped)
//   401, 403     the key or the origin is refused: kept, and reporting stops until `flush()` is called again
//   503, network kept, and retried after Retry-After (else 5 s, doubling to 5 min)
// An answer removes exactly the events of its own batch. Each event carries an event_id, so
// that a batch sent twice (an answer lost) counts once.

/**
 * The mn_message_id of a push as the Firebase JS SDK hands it over, or null. Takes the
 * MessagePayload of onMessage / onBackgroundMessage (`payload.data`), the Notification of a
 * notificationclick / notificationclose event (`event.notification`: its `data` is the original
 * message under FCM_MSG when the SDK displayed it, or what you gave showNotification), or the
 * event itself.
 */
export function messageIdFrom(source) {
  if (!source) return null;
  for (const data of [source.data, source.notification && source.notification.data]) {
    if (!data) continue;
    if (typeof data.mn_message_id === "string") return data.mn_message_id;
    const fcm = data.FCM_MSG;
    if (fcm && fcm.data && typeof fcm.data.mn_message_id === "string") return fcm.data.mn_message_id;
  }
  return null;
}

const TYPES = new Set(["receive", "open", "click", "dismiss"]);
const MAX_BATCH = 500;
// A keepalive request's body may be 64 KiB at most (Fetch standard); keep room for the wrapper.
const MAX_BATCH_BYTES = 60000;
const encoder = new TextEncoder();

export class PushEvents {
  /**
   * @param {object} options
   * @param {string} options.endpoint  the events service, e.g. "https://events.shop.example"
   * @param {string} options.appId     the App ID the pushes were sent for
   * @param {string} [options.key]     the App ID's event key, when the service has keys
   * @param {string} [options.storageKey] where the queue is kept in localStorage
   * @param {(events: object[], reason: string) => void} [options.onDrop] told of events dropped as invalid
   */
  constructor({ endpoint, appId, key, storageKey = "push-events-queue", onDrop = () => {} }) {
    this.endpoint = endpoint.replace(/\/+$/, "");
    this.appId = appId;
    this.key = key;
    this.storageKey = storageKey;
    this.onDrop = onDrop;
    this.queue = this.load();
    this.delay = 5000;
    this.timer = null;
    this.stopped = false;
    this.sending = null;
    this.batchLimit = MAX_BATCH;
  }

  /** Queues one event and sends what is queued. Returns the flush's promise. */
  report(type, mnMessageId, occurredAt = new Date()) {
    if (!TYPES.has(type) || !mnMessageId) return Promise.resolve();
    this.queue.push({
      event_type: type,
      mn_message_id: mnMessageId,
      app_id: this.appId,
      occurred_at: occurredAt.toISOString().replace(/\.\d{3}Z$/, "Z"),
      event_id: `${type}-${mnMessageId}-${occurredAt.getTime()}-${Math.random().toString(36).slice(2, 8)}`,
    });
    this.save();
    return this.flush();
  }

  /**
   * Sends the queue, batch by batch; resolves when it is empty or must wait. One sending loop
   * at a time: a call while one runs returns that loop's promise (it sends what was queued since).
   */
  flush() {
    if (!this.sending) {
      this.stopped = false;
      this.sending = this.sendAll().finally(() => { this.sending = null; });
    }
    return this.sending;
  }

  async sendAll() {
    while (this.queue.length > 0 && !this.stopped) {
      const batch = this.nextBatch();
      const body = JSON.stringify({ events: batch });
      let response;
      try {
        const headers = { "Content-Type": "application/json" };
        if (this.key) headers["X-Push-Event-Key"] = this.key;
        const keepalive = encoder.encode(body).length <= MAX_BATCH_BYTES + 1024;
        response = await fetch(`${this.endpoint}/events`, { method: "POST", headers, body, keepalive });
      } catch (error) {
        return this.retryLater(null);
      }
      if (response.status === 202) {
        const answer = await response.json().catch(() => ({}));
        const rejected = (answer.rejected || []).map((item) => batch[item.index]).filter(Boolean);
        if (rejected.length > 0) this.onDrop(rejected, "rejected by the endpoint");
        this.done(batch);
      } else if (response.status === 413 && batch.length > 1) {
        this.batchLimit = Math.max(1, Math.floor(batch.length / 2));  // smaller batches from now on
      } else if (response.status === 400 || response.status === 413) {
        this.onDrop(batch, `refused: ${response.status}`);
        this.done(batch);
      } else if (response.status === 401 || response.status === 403) {
        this.stopped = true;  // a configuration problem: keep the events, stop until flush() again
        return;
      } else {
        return this.retryLater(response.headers.get("Retry-After"));
      }
    }
  }

  /** The first events of the queue that fit one batch: by count, and by bytes for keepalive. */
  nextBatch() {
    const batch = [];
    let bytes = 0;
    for (const event of this.queue) {
      if (batch.length >= Math.min(MAX_BATCH, this.batchLimit)) break;
      const size = encoder.encode(JSON.stringify(event)).length + 1;
      if (batch.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      batch.push(event);
      bytes += size;
    }
    return batch;
  }

  /** Removes the events of `batch`, and only those, from the queue. */
  done(batch) {
    const sent = new Set(batch.map((event) => event.event_id));
    this.queue = this.queue.filter((event) => !sent.has(event.event_id));
    this.delay = 5000;
    this.save();
  }

  retryLater(retryAfter) {
    const seconds = Number(retryAfter);
    const wait = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : this.delay;
    this.delay = Math.min(this.delay * 2, 300000);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), wait);
  }

  load() {
    try {
      return JSON.parse(globalThis.localStorage?.getItem(this.storageKey) || "[]");
    } catch {
      return [];
    }
  }

  save() {
    try {
      globalThis.localStorage?.setItem(this.storageKey, JSON.stringify(this.queue));
    } catch {
      // No storage (a service worker): the queue lives as long as the worker.
    }
  }
}
