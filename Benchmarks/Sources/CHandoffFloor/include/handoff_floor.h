// The hand-off floor's libcurl side (Benchmarks/Sources/handoff-floor): the C
// baseline's multi-handle loop on a thread of its own, fed by Swift tasks.
#pragma once

#include <stddef.h>

/// Called on the engine thread when a transfer ends: `ok` is 1 for a 200.
typedef void (*floor_done)(void *context, int ok);

typedef struct floor_engine floor_engine;
typedef struct floor_slot floor_slot;

/// curl_global_init(CURL_GLOBAL_ALL).
void floor_global_init(void);

/// POSTs a client-credentials grant to BASE/token and returns the access token (malloc'ed), or NULL.
char *floor_fetch_token(const char *base);

/// Starts the engine thread, or returns NULL.
floor_engine *floor_engine_start(long max_connections, floor_done done);

/// A caller's easy handle for GET BASE/api/resource with the bearer token, set up once.
floor_slot *floor_slot_create(const char *base, const char *token);

/// Queues the slot's transfer for the engine thread, waking it when it sleeps; `done(context, ok)` follows.
void floor_submit(floor_engine *engine, floor_slot *slot, void *context);
