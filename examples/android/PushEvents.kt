// Reports what a user did with a push (receive, open, click, dismiss) to push-connector's events
// endpoint from an Android app: the same rules as examples/web/push-events.js (docs/apps.md,
// "Offline batching and retry rules"). The JDK only (java.net, org.json is not needed); call it
// from a background thread or a coroutine on Dispatchers.IO.
//
//   val events = PushEvents(URL("https://events.shop.example"), "shop-android", key = "…",
//                           file = File(context.filesDir, "push-events-queue.json"))
//   // FirebaseMessagingService.onMessageReceived(message):
//   message.data["mn_message_id"]?.let { id -> executor.execute { events.report("receive", id) } }
//   // the Activity opened from the notification: intent.extras?.getString("mn_message_id")
//
// Events wait in a queue kept in `file`, so that a killed app loses nothing, and go to
// POST /events one batch at a time, at most 500 events and 60 000 bytes:
//   202          sent; the events listed in `rejected` are invalid and dropped
//   400          the whole batch is invalid: dropped, and told to `onDrop`
//   413          too large for the endpoint: sent again in halves (an event alone over the limit is dropped)
//   401, 403     the key is refused: kept, and reporting stops until `flush()` is called again
//   503, network kept; `flush` returns the seconds to wait (Retry-After, else 5 s doubling to 5 min):
//                schedule the next `flush` then (WorkManager with a network constraint does it well)
// An answer removes exactly the events of its own batch. Each event carries an event_id, so
// that a batch sent twice (an answer lost) counts once.

import java.io.File
import java.net.HttpURLConnection
import java.net.URL
import java.time.Instant
import java.time.temporal.ChronoUnit
import java.util.UUID

class PushEvents(
    private val endpoint: URL,
    private val appId: String,
    private val key: String? = null,
    private val file: File,
    private val onDrop: (List<Event>, String) -> Unit = { _, _ -> }
) {
    /** One queued event, as the endpoint reads it. */
    data class Event(val type: String, val messageId: String, val appId: String, val occurredAt: String, val eventId: String) {
        fun json(): String = "{\"event_type\":${quote(type)},\"mn_message_id\":${quote(messageId)},\"app_id\":${quote(appId)}," +
            "\"occurred_at\":${quote(occurredAt)},\"event_id\":${quote(eventId)}}"
    }

    private val lock = Object()
    private val sending = Object()
    private var queue: MutableList<Event> = load()
    private var delaySeconds = 5L
    private var batchLimit = MAX_BATCH

    /** Events waiting to be sent. */
    val pending: Int get() = synchronized(lock) { queue.size }

    /** Queues one event and sends what is queued; returns what `flush` returns. Blocks: not on the main thread. */
    fun report(type: String, messageId: String, at: Instant = Instant.now()): Long? {
        require(type in TYPES) { "event type must be one of $TYPES" }
        if (messageId.isBlank()) return null
        synchronized(lock) {
            val id = "$type-$messageId-${at.toEpochMilli()}-${UUID.randomUUID().toString().take(8)}"
            queue.add(Event(type, messageId, appId, at.truncatedTo(ChronoUnit.SECONDS).toString(), id))
            save()
        }
        return flush()
    }

    /**
     * Sends the queue, batch by batch, one request at a time (callers wait for each other).
     * Returns null when the queue is empty or sending stopped (401, 403), else the seconds
     * after which to call it again.
     */
    fun flush(): Long? {
        synchronized(sending) {
            var batch = synchronized(lock) { nextBatch() }
            while (batch.isNotEmpty()) {
                val (status, answer, retryAfter) = try {
                    post("{\"events\":[" + batch.joinToString(",") { it.json() } + "]}")
                } catch (e: java.io.IOException) {
                    return later(null)
                }
                when {
                    status == 202 -> {
                        val rejected = REJECTED_INDEX.findAll(answer).map { it.groupValues[1].toInt() }
                            .mapNotNull { batch.getOrNull(it) }.toList()
                        if (rejected.isNotEmpty()) onDrop(rejected, "rejected by the endpoint")
                        done(batch)
                    }
                    status == 413 && batch.size > 1 -> batchLimit = maxOf(1, batch.size / 2)  // smaller batches from now on
                    status == 400 || status == 413 -> {
                        onDrop(batch, "refused: $status")
                        done(batch)
                    }
                    status == 401 || status == 403 -> return null  // a configuration problem: keep the events
                    else -> return later(retryAfter)
                }
                batch = synchronized(lock) { nextBatch() }
            }
            return null
        }
    }

    private fun post(body: String): Triple<Int, String, String?> {
        val connection = URL(endpoint, "/events").openConnection() as HttpURLConnection
        try {
            connection.requestMethod = "POST"
            connection.doOutput = true
            connection.connectTimeout = 10_000
            connection.readTimeout = 30_000
            connection.setRequestProperty("Content-Type", "application/json")
            key?.let { connection.setRequestProperty("X-Push-Event-Key", it) }
            connection.outputStream.use { it.write(body.toByteArray(Charsets.UTF_8)) }
            val status = connection.responseCode
            val stream = if (status >= 400) connection.errorStream else connection.inputStream
            val answer = stream?.use { it.readBytes().toString(Charsets.UTF_8) } ?: ""
            return Triple(status, answer, connection.getHeaderField("Retry-After"))
        } finally {
            connection.disconnect()
        }
    }

    /** The first events of the queue that fit one batch, by count and by bytes. */
    private fun nextBatch(): List<Event> {
        val batch = mutableListOf<Event>()
        var bytes = 0
        for (event in queue) {
            if (batch.size >= minOf(MAX_BATCH, batchLimit)) break
            val size = event.json().toByteArray(Charsets.UTF_8).size + 1
            if (batch.isNotEmpty() && bytes + size > MAX_BATCH_BYTES) break
            batch.add(event)
            bytes += size
        }
        return batch
    }

    /** Removes the events of `batch`, and only those, from the queue. */
    private fun done(batch: List<Event>) = synchronized(lock) {
        val sent = batch.map { it.eventId }.toSet()
        queue.removeAll { it.eventId in sent }
        delaySeconds = 5
        save()
    }

    private fun later(retryAfter: String?): Long {
        val wait = retryAfter?.toLongOrNull()?.takeIf { it > 0 } ?: delaySeconds
        delaySeconds = minOf(delaySeconds * 2, 300)
        return wait
    }

    private fun load(): MutableList<Event> = try {
        file.readLines().filter { it.isNotBlank() }.map { line ->
            val f = line.split('\t')
            Event(f[0], f[1], f[2], f[3], f[4])
        }.toMutableList()
    } catch (e: Exception) {
        mutableListOf()
    }

    /** One event a line, tab-separated (no field holds a tab: the endpoint refuses control characters). */
    private fun save() {
        val temporary = File(file.path + ".tmp")
        temporary.writeText(queue.joinToString("") { "${it.type}\t${it.messageId}\t${it.appId}\t${it.occurredAt}\t${it.eventId}\n" })
        temporary.renameTo(file)
    }

    companion object {
        const val MAX_BATCH = 500
        const val MAX_BATCH_BYTES = 60_000
        val TYPES = setOf("receive", "open", "click", "dismiss")
        private val REJECTED_INDEX = Regex("\"index\"\\s*:\\s*(\\d+)")

        fun quote(text: String): String = buildString {
            append('"')
            for (c in text) when {
                c == '"' -> append("\\\"")
                c == '\\' -> append("\\\\")
                c < ' ' -> append(String.format("\\u%04x", c.toInt()))
                else -> append(c)
            }
            append('"')
        }
    }
}
