/*
 * The stats endpoint: GET /__moonport/stats (with --stats), answered by
 * the core to clients on this machine, with the answering worker's
 * figures, every worker's and their sums (from the shared segment), the
 * stores' usage, the answering worker's per-route figures and what the
 * last reloads did, as JSON. Other clients get whatever the app answers for the path.
 */
#ifndef MP_STATS_ENDPOINT_H
#define MP_STATS_ENDPOINT_H

#include <stdbool.h>

#include "pool.h"
#include "request.h"
#include "response.h"
#include "server.h"

/* A server's intercept (server.h): answers r when it asks for the stats
 * endpoint, and returns true then. Runs no Lua. */
bool mp_stats_endpoint(mp_server *s, mp_request *r);

/* Appends the endpoint's JSON for s to out. Returns 0 or MP_NOMEM. */
int mp_stats_json(mp_server *s, mp_buf *out);

#endif
