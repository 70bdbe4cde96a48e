// Reports what a user did with a push (receive, open, click, dismiss) to push-connector's events
// endpoint, from a web page or a service worker. No dependencies; an ES module.
//
//   import { PushEvents, messageIdFrom } from "./push-events.js";
//   const events = new PushEvents({ endpoint: "https://events.shop.example", appId: "shop-web", key: "…" });
//   onMessage(messaging, (payload) => events.report("receive", messageIdFrom(payload)));   // firebase/messaging
//
// The endpoint must list the page's origin in the App ID's `allowed_origins` (docs/apps.md).
// Events wait in a queue (kept in localStorage when there is one, so a closed tab loses
// nothing) and go in batches of at most 500 to POST /events:
//   202          sent; the events listed in `rejected` are invalid and dropped (resending cannot help)
//   400          the whole batch is invalid: dropped, and the reason given to `onDrop`
//   401, 403     the key or the origin is refused: kept, and reporting stops until `flush()` is called again
//   503, network kept, and retried after Retry-After (else 5 s, doubling to 5 min)
// Each event carries an event_id, so that a batch sent twice (an answer lost) counts once.

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

  /** Sends the queue, batch by batch; resolves when it is empty or must wait. */
  async flush() {
    this.stopped = false;
    while (this.queue.length > 0 && !this.stopped) {
      const batch = this.queue.slice(0, MAX_BATCH);
      let response;
      try {
        const headers = { "Content-Type": "application/json" };
        if (this.key) headers["X-Push-Event-Key"] = this.key;
        response = await fetch(`${this.endpoint}/events`, { method: "POST", headers, body: JSON.stringify({ events: batch }), keepalive: true });
      } catch (error) {
        return this.retryLater(null);
      }
      if (response.status === 202) {
        const answer = await response.json().catch(() => ({}));
        const rejected = (answer.rejected || []).map((item) => batch[item.index]).filter(Boolean);
        if (rejected.length > 0) this.onDrop(rejected, "rejected by the endpoint");
        this.done(batch.length);
      } else if (response.status === 400 || response.status === 413) {
        this.onDrop(batch, `refused: ${response.status}`);
        this.done(batch.length);
      } else if (response.status === 401 || response.status === 403) {
        this.stopped = true;  // a configuration problem: keep the events, stop until flush() again
        return;
      } else {
        return this.retryLater(response.headers.get("Retry-After"));
      }
    }
  }

  done(count) {
    this.queue.splice(0, count);
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
