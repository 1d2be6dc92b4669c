/*
 * libFuzzer target: the router (server/http/router.c), against a matcher
 * written the obvious way.
 *
 * The input is lines. Up to the first empty line, each declares a route:
 * its first byte picks the method (a few bytes pick a name llhttp does not
 * know, and '!' gives the router its fallback after the routes), the rest
 * is the pattern. Every later line is a request: the first byte picks the
 * method, the rest is the path, any bytes.
 *
 * Invariants, for every request:
 * - a match names a route of the request's method (or GET for a HEAD with
 *   no HEAD route of its own), with as many parameter spans as the
 *   route's pattern has parameters, and writing the spans into the
 *   pattern gives the path back byte for byte;
 * - the route is the one the documented precedence picks among all the
 *   routes that match (a literal segment beats a parameter, which beats a
 *   splat, from the left), found by trying every route in turn;
 * - a miss is 405 exactly when a route without a splat serves the path
 *   for another method, with the Allow mask of every route that matches
 *   the path, and otherwise 404; the fallback, when set, is the route of
 *   a miss;
 * - the Allow list fits any buffer it is given.
 */
#include "fuzz.h"

#include <stdbool.h>

#include "errors.h"
#include "router.h"

#define MAX_ROUTES 64
#define MAX_SEGS 4096 /* more than a line of the input can hold */

static const char *const METHODS[] = {"GET",     "HEAD",  "POST", "PUT",
                                      "DELETE",  "PATCH", "OPTIONS",
                                      "PURGE",   "get",   "BREW"};
#define NMETHODS (sizeof METHODS / sizeof METHODS[0])
#define NKNOWN 8 /* the first NKNOWN are llhttp's */

static int method_num(const char *name) {
  static const int nums[NKNOWN] = {HTTP_GET,    HTTP_HEAD,  HTTP_POST,
                                   HTTP_PUT,    HTTP_DELETE, HTTP_PATCH,
                                   HTTP_OPTIONS, HTTP_PURGE};
  for (unsigned i = 0; i < NKNOWN; i++)
    if (strcmp(METHODS[i], name) == 0) return nums[i];
  return -1;
}

/* A segment of a pattern: 0 literal, 1 parameter, 2 splat. */
typedef struct seg {
  int kind;
  const char *p;
  size_t n;
} seg;

typedef struct pat {
  int method;
  unsigned index; /* the route's, in the router */
  const mp_route *route; /* set once every route is in */
  seg segs[MAX_SEGS];
  unsigned nsegs;
} pat;

static void split_pattern(const char *pattern, pat *out) {
  out->nsegs = 0;
  if (strcmp(pattern, "/") == 0) return; /* the root: no segment */
  const char *p = pattern;
  while (*p == '/') {
    const char *s = p + 1, *e = strchr(s, '/');
    if (e == NULL) e = s + strlen(s);
    seg g = {0, s, (size_t)(e - s)};
    if (g.n > 0 && (s[0] == ':' || s[0] == '*')) g.kind = s[0] == ':' ? 1 : 2;
    FUZZ_CHECK(out->nsegs < MAX_SEGS, "too many segments");
    out->segs[out->nsegs++] = g;
    p = e;
  }
}

/* Does pattern q match path[0, len)? Fills the rank of each segment. */
static bool naive_match(const pat *q, const char *path, size_t len,
                        int *rank) {
  if (len == 0 || path[0] != '/') return false;
  if (q->nsegs == 0) return len == 1;
  if (len == 1) return q->nsegs == 1 && q->segs[0].kind == 2 && (rank[0] = 2);
  size_t pos = 0; /* at a '/' */
  for (unsigned i = 0; i < q->nsegs; i++) {
    if (pos == len) return false;
    const seg *g = &q->segs[i];
    size_t s = pos + 1, e = s;
    while (e < len && path[e] != '/') e++;
    rank[i] = g->kind;
    if (g->kind == 2) return true; /* the rest, possibly empty */
    if (g->kind == 1 && e == s) return false;
    if (g->kind == 0 && (g->n != e - s || memcmp(g->p, path + s, g->n) != 0))
      return false;
    pos = e;
  }
  return pos == len;
}

static bool has_splat(const pat *q) {
  return q->nsegs > 0 && q->segs[q->nsegs - 1].kind == 2;
}

/* Lexicographic, a prefix first. */
static int rank_cmp(const int *a, unsigned na, const int *b, unsigned nb) {
  for (unsigned i = 0; i < na && i < nb; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return na < nb ? -1 : na > nb;
}

/* The pattern with the parameter spans written in. */
static void rebuild(const pat *q, const char *path, const mp_route_match *m,
                    fuzz_log *out) {
  if (q->nsegs == 0) {
    fuzz_put(out, "/", 1);
    return;
  }
  unsigned k = 0;
  for (unsigned i = 0; i < q->nsegs; i++) {
    fuzz_put(out, "/", 1);
    if (q->segs[i].kind == 0) {
      fuzz_put(out, q->segs[i].p, q->segs[i].n);
    } else {
      FUZZ_CHECK(k < m->nparams, "fewer spans than parameters");
      fuzz_put(out, path + m->params[k].off, m->params[k].len);
      k++;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_exact(data, size);
  mp_router *r = mp_router_new();
  FUZZ_CHECK(r != NULL, "out of memory");
  static pat pats[MAX_ROUTES];
  unsigned npats = 0;
  bool fallback = false;
  size_t i = 0;
  char err[96];
  /* Routes. */
  while (i < size && text[i] != '\n') {
    size_t e = i;
    while (e < size && text[e] != '\n') e++;
    char *line = strndup(text + i + 1, e - i - 1); /* stops at a NUL */
    unsigned char pick = (unsigned char)text[i];
    i = e < size ? e + 1 : e;
    if (pick == '!') {
      fallback = true;
      free(line);
      continue;
    }
    const char *method = METHODS[pick % NMETHODS];
    err[0] = '\0';
    int rc = mp_router_add(r, method, line, (int)npats, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == MP_INVALID, "add answered %d", rc);
    FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL, "err not terminated");
    if (rc == 0) {
      FUZZ_CHECK(npats < MAX_ROUTES || method_num(method) >= 0, "unexpected");
      if (npats < MAX_ROUTES) {
        pat *q = &pats[npats++];
        q->method = method_num(method);
        FUZZ_CHECK(q->method >= 0, "%s accepted", method);
        q->index = mp_router_count(r) - 1;
      } else {
        npats = MAX_ROUTES + 1; /* stop checking: more routes than we hold */
      }
    } else {
      FUZZ_CHECK(err[0] != '\0', "a refusal without a message");
    }
    free(line);
    if (npats > MAX_ROUTES) break;
  }
  if (npats > MAX_ROUTES) goto out;
  /* The routes stay where they are from now on. */
  for (unsigned k = 0; k < npats; k++) {
    pat *q = &pats[k];
    q->route = mp_router_route(r, q->index);
    FUZZ_CHECK(q->route != NULL && q->route->index == q->index, "route %u",
               q->index);
    split_pattern(q->route->pattern, q);
    unsigned params = 0;
    for (unsigned s = 0; s < q->nsegs; s++) params += q->segs[s].kind != 0;
    FUZZ_CHECK(params == q->route->nparams, "%u parameters, %u names", params,
               q->route->nparams);
  }
  if (fallback) FUZZ_CHECK(mp_router_set_fallback(r, 1000) == 0, "fallback");
  if (i < size) i++; /* the empty line */

  /* Requests. */
  while (i < size) {
    size_t e = i;
    while (e < size && text[e] != '\n') e++;
    if (e == i) {
      i++;
      continue;
    }
    unsigned char pick = (unsigned char)text[i];
    int method = method_num(METHODS[pick % NKNOWN]);
    const char *path = text + i + 1;
    size_t len = e - i - 1;
    i = e < size ? e + 1 : e;
    char *exact = fuzz_exact(path, len); /* a read past it is caught */
    mp_route_match m;
    uint64_t allow;
    int rc = mp_router_match(r, (uint8_t)method, exact, len, &m, &allow);

    /* The obvious way: every route in turn. */
    static int rank[MAX_SEGS], best_rank[MAX_SEGS];
    const pat *best = NULL;
    unsigned best_n = 0;
    bool best_exact = false;
    uint64_t plain = 0, splats = 0;
    for (unsigned k = 0; k < npats; k++) {
      const pat *q = &pats[k];
      if (!naive_match(q, exact, len, rank)) continue;
      uint64_t bit = 1ull << q->method;
      if (q->method == HTTP_GET) bit |= 1ull << HTTP_HEAD;
      if (has_splat(q)) splats |= bit;
      else plain |= bit;
      bool same = q->method == method;
      bool via_get = method == HTTP_HEAD && q->method == HTTP_GET;
      if (!same && !via_get) continue;
      int c = best ? rank_cmp(rank, q->nsegs, best_rank, best_n) : -1;
      /* At the same node a route of the method itself beats GET for HEAD. */
      if (c < 0 || (c == 0 && same && !best_exact)) {
        best = q;
        best_n = q->nsegs;
        best_exact = same;
        memcpy(best_rank, rank, sizeof(int) * q->nsegs);
      }
    }

    if (best != NULL) {
      FUZZ_CHECK(rc == 0, "the router missed (%d) what route %u matches", rc,
                 best->route->index);
      FUZZ_CHECK(m.route == best->route,
                 "the router chose %s, precedence says %s", m.route->pattern,
                 best->route->pattern);
      FUZZ_CHECK(m.miss == 0 && m.head_from_get == !best_exact, "match flags");
      FUZZ_CHECK(m.nparams == m.route->nparams, "%u spans, %u parameters",
                 m.nparams, m.route->nparams);
      for (unsigned k = 0; k < m.nparams; k++)
        FUZZ_CHECK((uint64_t)m.params[k].off + m.params[k].len <= len,
                   "a span past the path");
      fuzz_log back = {0};
      rebuild(best, exact, &m, &back);
      FUZZ_CHECK(back.len == len && memcmp(back.p, exact, len) == 0,
                 "the spans written into %s do not give the path back",
                 best->route->pattern);
      fuzz_log_free(&back);
    } else if (plain != 0) {
      FUZZ_CHECK(rc == MP_DECLINED && m.miss == 405, "want 405, got %d/%u", rc,
                 m.miss);
      FUZZ_CHECK(allow == (plain | splats) && m.allow == allow,
                 "Allow %llx, want %llx", (unsigned long long)allow,
                 (unsigned long long)(plain | splats));
    } else {
      FUZZ_CHECK(rc == MP_NOT_FOUND && m.miss == 404, "want 404, got %d/%u",
                 rc, m.miss);
    }
    if (best == NULL) {
      FUZZ_CHECK(m.route == mp_router_fallback(r), "the fallback");
      FUZZ_CHECK(m.nparams == 0, "spans on a miss");
      char list[32];
      size_t n = mp_router_allow_list(m.allow | mp_router_methods(r), list,
                                      1 + pick % sizeof list);
      FUZZ_CHECK(n < 1 + pick % sizeof list, "the Allow list overflows");
    }
    free(exact);
  }
out:
  mp_router_free(r);
  free(text);
  return 0;
}
