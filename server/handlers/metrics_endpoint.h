/*
 * The metrics endpoint: GET /__moonport/metrics (with --metrics), answered
 * by the core in the Prometheus text exposition format 0.0.4, for every
 * worker at once (the figures each publishes to the shared segment,
 * metrics.h), to clients on this machine and those --metrics-allow names.
 * Other clients get whatever the app answers for the path.
 */
#ifndef MP_METRICS_ENDPOINT_H
#define MP_METRICS_ENDPOINT_H

#include <stdbool.h>

#include "pool.h"
#include "request.h"
#include "server.h"

/* A server's intercept (server.h): answers r when it asks for the metrics
 * endpoint and may, and returns true then. Runs no Lua. */
bool mp_metrics_endpoint(mp_server *s, mp_request *r);

/* Appends the exposition for every worker of s's segment to out. Returns
 * 0 or MP_NOMEM. */
int mp_metrics_text(mp_server *s, mp_buf *out);

#endif
