// The baseline: the benchmark's work done with libcurl from C, nothing else.
//
//   curl-baseline sequential BASE_URL N
//   curl-baseline concurrent BASE_URL N C
//
// With C over 64 (the refresh storm's reference: 1000 requests all at once),
// at most 64 connections are opened, as CurlTransport's default configuration
// allows; the other transfers wait inside libcurl.
//
// Both first POST a client-credentials grant to BASE_URL/token and take the
// access token out of the JSON answer, then send N GET BASE_URL/api/resource
// with "Authorization: Bearer <token>", each checked for status 200:
// sequential reuses one easy handle (one keep-alive connection); concurrent
// keeps C transfers in flight on one multi handle, reusing C easy handles.
// The requests carry the same header lines as the Swift client's (libcurl's
// own Accept line suppressed, as CurlTransport does), so both put the same
// bytes on the wire.
//
// It prints one JSON line in the format of the Swift benchmark (see
// Benchmarks/Sources/oauth2-bench/Report.swift): requests/s, latency
// percentiles, CPU time and peak RSS of the process.
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
    char *data;
    size_t size;
    size_t capacity;
} buffer;

static size_t write_body(char *ptr, size_t size, size_t count, void *userdata) {
    buffer *body = userdata;
    size_t length = size * count;
    if (body->size + length > body->capacity) {
        size_t capacity = body->capacity ? body->capacity : 256;
        while (capacity < body->size + length) capacity *= 2;
        char *grown = realloc(body->data, capacity);
        if (!grown) return 0;
        body->data = grown;
        body->capacity = capacity;
    }
    memcpy(body->data + body->size, ptr, length);
    body->size += length;
    return length;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6
        + (double)usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

// The peak RSS of this program's own image (VmHWM): getrusage's ru_maxrss
// keeps the peak of the process that exec'ed it (the Python driver) too.
static long peak_rss_kib(void) {
    FILE *status = fopen("/proc/self/status", "r");
    if (!status) return 0;
    char line[256];
    long kib = 0;
    while (fgets(line, sizeof line, status)) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = atol(line + 6);
            break;
        }
    }
    fclose(status);
    return kib;
}

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double percentile_us(uint64_t *sorted, size_t count, double p) {
    if (count == 0) return 0;
    size_t index = (size_t)(p * (double)(count - 1) + 0.5);
    return sorted[index] / 1000.0;
}

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "curl-baseline: %s: %s\n", what, detail);
    exit(1);
}

// The client-credentials grant; returns the access token (malloc'ed).
static char *fetch_token(const char *base) {
    char url[2048];
    snprintf(url, sizeof url, "%s/token", base);
    CURL *easy = curl_easy_init();
    if (!easy) fail("token", "curl_easy_init");
    buffer body = {0};
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Authorization: Basic YmVuY2gtY2xpZW50OmJlbmNoLXNlY3JldA==");
    headers = curl_slist_append(headers, "Content-Type: application/x-www-form-urlencoded");
    headers = curl_slist_append(headers, "Accept: application/json");
    static const char form[] = "grant_type=client_credentials";
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, form);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)(sizeof form - 1));
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
    CURLcode code = curl_easy_perform(easy);
    if (code != CURLE_OK) fail("token request", curl_easy_strerror(code));
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) fail("token request", "status is not 200");
    if (!write_body("", 1, 1, &body)) fail("token", "out of memory");
    const char *key = "\"access_token\":\"";
    char *start = strstr(body.data, key);
    if (!start) fail("token response", "no access_token");
    start += strlen(key);
    char *end = strchr(start, '"');
    if (!end) fail("token response", "unterminated access_token");
    char *token = strndup(start, (size_t)(end - start));
    free(body.data);
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    return token;
}

typedef struct {
    CURL *easy;
    buffer body;
    uint64_t started;
} slot;

static void prepare(slot *s, const char *url, struct curl_slist *headers) {
    curl_easy_setopt(s->easy, CURLOPT_URL, url);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, &s->body);
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: curl-baseline sequential|concurrent BASE_URL N [C]\n");
        return 64;
    }
    const char *mode = argv[1];
    const char *base = argv[2];
    long total = atol(argv[3]);
    long concurrency = argc > 4 ? atol(argv[4]) : 1;
    int sequential = strcmp(mode, "sequential") == 0;
    if (total <= 0 || concurrency <= 0 || (!sequential && strcmp(mode, "concurrent") != 0)) {
        fprintf(stderr, "curl-baseline: bad arguments\n");
        return 64;
    }
    if (sequential) concurrency = 1;

    curl_global_init(CURL_GLOBAL_ALL);
    double cpu_start = cpu_seconds();
    uint64_t wall_start = now_ns();

    char *token = fetch_token(base);
    char url[2048];
    snprintf(url, sizeof url, "%s/api/resource", base);
    size_t header_length = strlen(token) + 32;
    char *authorization = malloc(header_length);
    snprintf(authorization, header_length, "Authorization: Bearer %s", token);
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, authorization);
    headers = curl_slist_append(headers, "Accept:");

    uint64_t *latencies = calloc((size_t)total, sizeof *latencies);
    long completed = 0, errors = 0;
    uint64_t requests_start = now_ns();

    if (sequential) {
        slot s = {curl_easy_init(), {0}, 0};
        prepare(&s, url, headers);
        for (long i = 0; i < total; i++) {
            s.body.size = 0;
            uint64_t started = now_ns();
            CURLcode code = curl_easy_perform(s.easy);
            latencies[completed++] = now_ns() - started;
            long status = 0;
            curl_easy_getinfo(s.easy, CURLINFO_RESPONSE_CODE, &status);
            if (code != CURLE_OK || status != 200) errors++;
        }
        curl_easy_cleanup(s.easy);
        free(s.body.data);
    } else {
        CURLM *multi = curl_multi_init();
        long connections = concurrency < 64 ? concurrency : 64;
        curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, connections);
        curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
        slot *slots = calloc((size_t)concurrency, sizeof *slots);
        long started_count = 0;
        for (long i = 0; i < concurrency && started_count < total; i++, started_count++) {
            slots[i].easy = curl_easy_init();
            prepare(&slots[i], url, headers);
            slots[i].started = now_ns();
            curl_multi_add_handle(multi, slots[i].easy);
        }
        int running = 1;
        while (completed < total) {
            curl_multi_perform(multi, &running);
            CURLMsg *message;
            int queued;
            while ((message = curl_multi_info_read(multi, &queued))) {
                if (message->msg != CURLMSG_DONE) continue;
                slot *s;
                curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&s);
                latencies[completed++] = now_ns() - s->started;
                long status = 0;
                curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
                if (message->data.result != CURLE_OK || status != 200) errors++;
                curl_multi_remove_handle(multi, s->easy);
                if (started_count < total) {
                    started_count++;
                    s->body.size = 0;
                    s->started = now_ns();
                    curl_multi_add_handle(multi, s->easy);
                }
            }
            if (completed < total) curl_multi_poll(multi, NULL, 0, 1000, NULL);
        }
        for (long i = 0; i < concurrency; i++) {
            if (slots[i].easy) curl_easy_cleanup(slots[i].easy);
            free(slots[i].body.data);
        }
        free(slots);
        curl_multi_cleanup(multi);
    }

    uint64_t wall_end = now_ns();
    double seconds = (wall_end - requests_start) / 1e9;
    double cpu = cpu_seconds() - cpu_start;
    qsort(latencies, (size_t)completed, sizeof *latencies, compare_u64);
    printf("{\"scenario\":\"%s\",\"implementation\":\"libcurl\",\"requests\":%ld,\"concurrency\":%ld,"
           "\"errors\":%ld,\"seconds\":%.6f,\"requests_per_second\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
           "\"cpu_seconds\":%.4f,\"peak_rss_kib\":%ld,\"total_seconds\":%.6f}\n",
           sequential ? "sequential" : "concurrent", completed, concurrency, errors, seconds,
           completed / seconds, percentile_us(latencies, (size_t)completed, 0.50),
           percentile_us(latencies, (size_t)completed, 0.99), cpu, peak_rss_kib(),
           (wall_end - wall_start) / 1e9);

    free(latencies);
    curl_slist_free_all(headers);
    free(authorization);
    free(token);
    curl_global_cleanup();
    return errors == 0 ? 0 : 1;
}
