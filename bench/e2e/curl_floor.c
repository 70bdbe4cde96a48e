/*
 * curl_floor: the FCM sends of a send worker and nothing else, in C on libcurl's multi API.
 *
 * Sends COUNT POST requests to URL over one HTTP/2 connection (TLS, verified against CA_FILE),
 * at most STREAMS at a time, each with `Authorization: Bearer TOKEN` and a JSON body made from
 * BODY_FILE with every `%TOKEN%` replaced by a distinct device token (`e2e-<n>`). Easy handles
 * and the header list are reused; each answer must be 200 with a `"name"` in its body.
 *
 *   curl_floor URL CA_FILE TOKEN BODY_FILE COUNT STREAMS
 *
 * Prints one line: `sent=N failed=N seconds=S cpu_seconds=C`. Exit 1 when any request failed.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
    CURL *easy;
    char body[16384];
    char answer[1024];
    size_t answer_length;
} Slot;

static size_t on_answer(char *data, size_t size, size_t count, void *user) {
    Slot *slot = user;
    size_t length = size * count;
    size_t room = sizeof slot->answer - 1 - slot->answer_length;
    size_t kept = length < room ? length : room;
    memcpy(slot->answer + slot->answer_length, data, kept);
    slot->answer_length += kept;
    slot->answer[slot->answer_length] = 0;
    return length;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 + (double)usage.ru_stime.tv_sec +
           (double)usage.ru_stime.tv_usec / 1e6;
}

/* Writes the template into `out` with %TOKEN% replaced by e2e-<n>. */
static int render(const char *template, unsigned long n, char *out, size_t room) {
    const char *marker = strstr(template, "%TOKEN%");
    if (!marker) return snprintf(out, room, "%s", template) < (int)room ? 0 : -1;
    int written = snprintf(out, room, "%.*se2e-%lu%s", (int)(marker - template), template, n, marker + 7);
    return written > 0 && (size_t)written < room ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: curl_floor URL CA_FILE TOKEN BODY_FILE COUNT STREAMS\n");
        return 2;
    }
    const char *url = argv[1], *ca_file = argv[2], *token = argv[3], *body_file = argv[4];
    unsigned long count = strtoul(argv[5], NULL, 10);
    int streams = atoi(argv[6]);
    if (count == 0 || streams <= 0 || streams > 1000) {
        fprintf(stderr, "curl_floor: COUNT must be positive and STREAMS 1-1000\n");
        return 2;
    }
    static char template[16000];
    FILE *file = fopen(body_file, "r");
    if (!file) { fprintf(stderr, "curl_floor: cannot read %s\n", body_file); return 2; }
    size_t template_length = fread(template, 1, sizeof template - 1, file);
    fclose(file);
    template[template_length] = 0;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    char authorization[4096];
    snprintf(authorization, sizeof authorization, "Authorization: Bearer %s", token);
    struct curl_slist *headers = curl_slist_append(NULL, authorization);
    headers = curl_slist_append(headers, "Content-Type: application/json; charset=UTF-8");

    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, (long)streams);

    Slot *slots = calloc((size_t)streams, sizeof(Slot));
    unsigned long next = 0, sent = 0, failed = 0;
    for (int i = 0; i < streams; i++) {
        CURL *easy = curl_easy_init();
        slots[i].easy = easy;
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
        curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_answer);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, &slots[i]);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, &slots[i]);
        curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
    }

    double started = now_seconds(), cpu_started = cpu_seconds();
    int active = 0;
    for (int i = 0; i < streams && next < count; i++) {
        if (render(template, next++, slots[i].body, sizeof slots[i].body) != 0) { fprintf(stderr, "curl_floor: body too large\n"); return 2; }
        curl_easy_setopt(slots[i].easy, CURLOPT_POSTFIELDS, slots[i].body);
        curl_multi_add_handle(multi, slots[i].easy);
        active++;
    }
    while (active > 0) {
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int queued;
        while ((message = curl_multi_info_read(multi, &queued))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            Slot *slot;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&slot);
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result == CURLE_OK && status == 200 && strstr(slot->answer, "\"name\"")) {
                sent++;
            } else {
                if (failed < 5) fprintf(stderr, "curl_floor: request failed: %s, status %ld\n", curl_easy_strerror(message->data.result), status);
                failed++;
            }
            curl_multi_remove_handle(multi, easy);
            active--;
            slot->answer_length = 0;
            if (next < count) {
                render(template, next++, slot->body, sizeof slot->body);
                curl_easy_setopt(easy, CURLOPT_POSTFIELDS, slot->body);
                curl_multi_add_handle(multi, easy);
                active++;
            }
        }
        if (active > 0) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    double seconds = now_seconds() - started, cpu = cpu_seconds() - cpu_started;
    printf("sent=%lu failed=%lu seconds=%.3f cpu_seconds=%.3f\n", sent, failed, seconds, cpu);
    for (int i = 0; i < streams; i++) curl_easy_cleanup(slots[i].easy);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    free(slots);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
