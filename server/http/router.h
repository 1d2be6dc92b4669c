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
 *
 * A path that no route serves for the method is a miss: 405 when a route
 * without a splat serves the path for another method, 404 otherwise (a
 * path covered only by splat routes of other methods is not found). An
 * app may give the router a fallback, a route of no method and no
 * pattern that a miss matches instead (its middleware and not-found hook
 * run there); the miss's status and Allow mask stay in the match.
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
  bool fallback; /* the router's fallback: any method, any path */
  unsigned nparams;
  char *param_names[MP_MAX_PARAMS];
} mp_route;

typedef struct mp_route_match {
  const mp_route *route;
  bool head_from_get; /* a HEAD request matched a GET route */
  unsigned nparams;
  mp_span params[MP_MAX_PARAMS]; /* offsets from the start of the path */
  uint16_t miss; /* 0 when a route matched; 404 or 405 on a miss */
  uint64_t allow; /* on a 405: the methods that would match */
  uint64_t splat_allow; /* scratch: the methods splat routes would serve */
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
 * when no route matches the path (404); MP_DECLINED when routes without a
 * splat match the path but not the method (405), with *allow set to the
 * bitmask of methods (1 << llhttp_method_t) that would match, splat
 * routes' included. On a miss, m->miss is 404 or 405, m->allow is *allow,
 * and m->route is the fallback, or NULL when the router has none. */
int mp_router_match(const mp_router *r, uint8_t method, const char *path,
                    size_t len, mp_route_match *m, uint64_t *allow);

/* The methods the routes serve, as an allow mask: HEAD where GET is. */
uint64_t mp_router_methods(const mp_router *r);

/* Writes the methods of an allow mask as "GET, HEAD, POST" into out;
 * returns the length. */
size_t mp_router_allow_list(uint64_t allow, char *out, size_t cap);

/* Gives the router its fallback (see above), after the last route:
 * handler is the caller's handle, >= 0. A route added afterwards is
 * refused. Returns 0, or MP_INVALID for a negative handler. The fallback
 * is no route of mp_router_count's: its index is that count. */
int mp_router_set_fallback(mp_router *r, int handler);

/* The fallback, or NULL. */
const mp_route *mp_router_fallback(const mp_router *r);

/* The method to name in a log line about a request of `method` that
 * route serves: the route's own, or the request's for the fallback. */
const char *mp_route_method_name(const mp_route *route, uint8_t method);

unsigned mp_router_count(const mp_router *r);
const mp_route *mp_router_route(const mp_router *r, unsigned i);

#endif
