// The libcurl side of the hand-off floor: what CurlTransport's engine thread
// does, minus everything of ours (no request building, no header parsing, no
// pooled handles: each caller owns one easy handle, configured once). Callers
// queue a transfer under a mutex and wake the thread with curl_multi_wakeup
// when it sleeps in curl_multi_poll; the thread runs the transfers and calls
// `done` for each one that ends. What is left on top of the C baseline is the
// hand-off itself: a Swift task suspended on a continuation, resumed from this
// thread onto Swift's global executor.
#define _GNU_SOURCE
#include "handoff_floor.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct floor_slot {
    CURL *easy;
    struct curl_slist *headers;
    char *url;
    void *context;
    floor_slot *next;
};

struct floor_engine {
    CURLM *multi;
    floor_done done;
    pthread_mutex_t lock;
    floor_slot *incoming;  // guarded by lock
    int sleeping;          // guarded by lock: the thread is in (or about to enter) curl_multi_poll
};

static size_t discard(char *ptr, size_t size, size_t count, void *userdata) {
    (void)ptr;
    (void)userdata;
    return size * count;
}

typedef struct {
    char *data;
    size_t size;
} text;

static size_t keep(char *ptr, size_t size, size_t count, void *userdata) {
    text *body = userdata;
    size_t length = size * count;
    char *grown = realloc(body->data, body->size + length + 1);
    if (!grown) return 0;
    memcpy(grown + body->size, ptr, length);
    body->data = grown;
    body->size += length;
    body->data[body->size] = 0;
    return length;
}

void floor_global_init(void) { curl_global_init(CURL_GLOBAL_ALL); }

char *floor_fetch_token(const char *base) {
    char url[2048];
    snprintf(url, sizeof url, "%s/token", base);
    CURL *easy = curl_easy_init();
    if (!easy) return NULL;
    text body = {0};
    struct curl_slist *headers = curl_slist_append(NULL, "Authorization: Basic YmVuY2gtY2xpZW50OmJlbmNoLXNlY3JldA==");
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, "grant_type=client_credentials");
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
    CURLcode code = curl_easy_perform(easy);
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    char *token = NULL;
    const char *key = "\"access_token\":\"";
    char *start = code == CURLE_OK && body.data ? strstr(body.data, key) : NULL;
    if (start) {
        start += strlen(key);
        char *end = strchr(start, '"');
        if (end) token = strndup(start, (size_t)(end - start));
    }
    free(body.data);
    return token;
}

floor_slot *floor_slot_create(const char *base, const char *token) {
    floor_slot *slot = calloc(1, sizeof *slot);
    if (!slot || !(slot->easy = curl_easy_init())) return NULL;
    size_t length = strlen(base) + 32;
    slot->url = malloc(length);
    snprintf(slot->url, length, "%s/api/resource", base);
    size_t header_length = strlen(token) + 32;
    char *authorization = malloc(header_length);
    snprintf(authorization, header_length, "Authorization: Bearer %s", token);
    slot->headers = curl_slist_append(curl_slist_append(NULL, authorization), "Accept:");
    free(authorization);
    curl_easy_setopt(slot->easy, CURLOPT_URL, slot->url);
    curl_easy_setopt(slot->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(slot->easy, CURLOPT_HTTPHEADER, slot->headers);
    curl_easy_setopt(slot->easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(slot->easy, CURLOPT_PRIVATE, slot);
    return slot;
}

void floor_submit(floor_engine *engine, floor_slot *slot, void *context) {
    slot->context = context;
    pthread_mutex_lock(&engine->lock);
    slot->next = engine->incoming;
    engine->incoming = slot;
    if (engine->sleeping) {
        engine->sleeping = 0;
        curl_multi_wakeup(engine->multi);
    }
    pthread_mutex_unlock(&engine->lock);
}

static void *run(void *argument) {
    floor_engine *engine = argument;
    int running = 0;
    for (;;) {
        pthread_mutex_lock(&engine->lock);
        floor_slot *batch = engine->incoming;
        engine->incoming = NULL;
        engine->sleeping = 0;
        pthread_mutex_unlock(&engine->lock);
        for (; batch; batch = batch->next) curl_multi_add_handle(engine->multi, batch->easy);

        curl_multi_perform(engine->multi, &running);
        CURLMsg *message;
        int queued;
        while ((message = curl_multi_info_read(engine->multi, &queued))) {
            if (message->msg != CURLMSG_DONE) continue;
            floor_slot *slot;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&slot);
            long status = 0;
            curl_easy_getinfo(slot->easy, CURLINFO_RESPONSE_CODE, &status);
            int ok = message->data.result == CURLE_OK && status == 200;
            curl_multi_remove_handle(engine->multi, slot->easy);
            engine->done(slot->context, ok);
        }

        pthread_mutex_lock(&engine->lock);
        int idle = engine->incoming == NULL;
        engine->sleeping = idle;
        pthread_mutex_unlock(&engine->lock);
        if (idle) curl_multi_poll(engine->multi, NULL, 0, 1000, NULL);
    }
    return NULL;
}

floor_engine *floor_engine_start(long max_connections, floor_done done) {
    floor_engine *engine = calloc(1, sizeof *engine);
    if (!engine || !(engine->multi = curl_multi_init())) return NULL;
    curl_multi_setopt(engine->multi, CURLMOPT_MAXCONNECTS, max_connections);
    curl_multi_setopt(engine->multi, CURLMOPT_MAX_HOST_CONNECTIONS, max_connections);
    engine->done = done;
    pthread_mutex_init(&engine->lock, NULL);
    pthread_t thread;
    if (pthread_create(&thread, NULL, run, engine) != 0) return NULL;
    pthread_detach(thread);
    return engine;
}
