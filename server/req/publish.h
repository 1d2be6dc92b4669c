/*
 * What a worker publishes to its block of the shared segment (metrics.h),
 * so that the stats and metrics endpoints of any worker answer for all of
 * them: its counters and gauges, and, with --metrics, every request
 * counted under its method and route label.
 *
 * A request is published as its handler ends (mp_request_account), before
 * the response's last bytes are flushed to the client: a scrape that
 * follows the response, on any connection and so on any worker, counts it.
 * Publishing is stores into the worker's own block: no lock, no syscall,
 * no allocation.
 */
#ifndef MP_PUBLISH_H
#define MP_PUBLISH_H

#include <stdint.h>

#include "request.h"
#include "server.h"

/* The route labels of requests no app route answered. */
#define MP_LABEL_UNMATCHED "(unmatched)" /* no route, or the app's fallback */
#define MP_LABEL_STATIC "(static)"       /* the app's static files */
#define MP_LABEL_CORE "(moonport)"       /* /__moonport/ endpoints */
#define MP_LABEL_INVALID "(invalid)"     /* heads that failed to parse */

/* Takes the worker's place in the segment: finds its block, and goes on
 * from the counters a worker before it left there. Call once, after
 * mp_server_init. */
void mp_publish_attach(mp_server *s);

/* Writes the worker's counters and the gauges that are cheap to read
 * (everything but unsent bytes). */
void mp_publish_worker(mp_server *s);

/* Writes everything, unsent bytes included (a walk over the
 * connections): for a timer, and before the worker answers an endpoint. */
void mp_publish_all(mp_server *s);

/* Counts r, which took ns nanoseconds, in its series (--metrics). */
void mp_publish_request(mp_request *r, uint64_t ns);

/* Counts a request whose head failed to parse, answered with status and
 * `sent` bytes (--metrics). */
void mp_publish_invalid(mp_server *s, int status, uint64_t received,
                        uint64_t sent);

#endif
