/*
 * The router: method and path to a route, built once from the app's
 * declarations at load time and read-only afterwards.
 *
 * Patterns are '/'-separated segments: a literal ("users"), a parameter
 * (":id", one non-empty segment) or, as the last segment only, a splat
 * ("*rest", the remainder of the path, possibly empty: a splat right
 * after the root matches "/" as one after "/files" matches "/files/").
 * When several routes could match, a literal segment beats a parameter,
 * which beats a splat, segment by segment from the left, backtracking when
 * a branch dead-ends.
 *
 * Paths are matched as sent (still percent-encoded); parameter values are
 * spans of the path, decoded by whoever reads them. HEAD is served by a GET
 * route when the path has no HEAD route of its own.
 */
#ifndef MP_ROUTER_H
#define MP_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http1.h"

#define MP_MAX_PARAMS 16

typedef struct mp_router mp_router;

typedef struct mp_route {
  unsigned index; /* its place in declaration order */
  uint8_t method; /* llhttp_method_t */
  char *pattern;
  int handler; /* the caller's handle (a Lua registry reference) */
  unsigned nparams;
  char *param_names[MP_MAX_PARAMS];
} mp_route;

typedef struct mp_route_match {
  const mp_route *route;
  bool head_from_get; /* a HEAD request matched a GET route */
  unsigned nparams;
  mp_span params[MP_MAX_PARAMS]; /* offsets from the start of the path */
} mp_route_match;

/* A new empty router, or NULL when out of memory. */
mp_router *mp_router_new(void);
void mp_router_free(mp_router *r);

/* Adds a route. method is a name llhttp knows ("GET", "PURGE", ...).
 * Returns 0, or MP_INVALID with a message in err (a bad pattern, an unknown
 * method, a duplicate), or MP_NOMEM. */
int mp_router_add(mp_router *r, const char *method, const char *pattern,
                  int handler, char *err, size_t errlen);

/* Finds the route for method and path. Returns 0 and fills m; MP_NOT_FOUND
 * when no route matches the path (404); MP_DECLINED when routes match the
 * path but not the method (405), with *allow set to the bitmask of methods
 * (1 << llhttp_method_t) that would match. */
int mp_router_match(const mp_router *r, uint8_t method, const char *path,
                    size_t len, mp_route_match *m, uint64_t *allow);

/* The methods the routes serve, as an allow mask: HEAD where GET is. */
uint64_t mp_router_methods(const mp_router *r);

/* Writes the methods of an allow mask as "GET, HEAD, POST" into out;
 * returns the length. */
size_t mp_router_allow_list(uint64_t allow, char *out, size_t cap);

unsigned mp_router_count(const mp_router *r);
const mp_route *mp_router_route(const mp_router *r, unsigned i);

#endif
