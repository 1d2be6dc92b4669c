/*
 * The router (see router.h): a trie of path segments. Each node has literal
 * children, at most one parameter child and at most one splat child, and
 * the routes that end there, one per method. Nodes and routes live until
 * mp_router_free; matching allocates nothing.
 *
 * A failed match collects two method masks: what routes without a splat
 * would serve at the path, and what splat routes would. Only the first
 * makes the answer 405; a path that only splat routes of other methods
 * cover is not found (a catch-all GET does not make every POST a 405).
 * The Allow list names both.
 */
#include "router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

typedef struct node node;

struct node {
  char *seg; /* literal text of this node's segment */
  size_t seglen;
  node **lits;
  unsigned nlits;
  node *param;
  node *splat;
  unsigned *routes; /* indexes into mp_router.routes */
  unsigned nroutes;
};

struct mp_router {
  node root;
  mp_route *routes;
  unsigned nroutes;
  uint64_t methods; /* every route's method, HEAD with GET's */
  mp_route fallback; /* runs for misses when fallback.handler >= 0 */
};

mp_router *mp_router_new(void) {
  mp_router *r = calloc(1, sizeof(mp_router));
  if (r != NULL) r->fallback.handler = -1;
  return r;
}

static void node_free(node *n) {
  if (n == NULL) return;
  for (unsigned i = 0; i < n->nlits; i++) {
    node_free(n->lits[i]);
    free(n->lits[i]);
  }
  free(n->lits);
  node_free(n->param);
  free(n->param);
  node_free(n->splat);
  free(n->splat);
  free(n->routes);
  free(n->seg);
}

void mp_router_free(mp_router *r) {
  if (r == NULL) return;
  node_free(&r->root);
  for (unsigned i = 0; i < r->nroutes; i++) {
    free(r->routes[i].pattern);
    for (unsigned k = 0; k < r->routes[i].nparams; k++)
      free(r->routes[i].param_names[k]);
  }
  free(r->routes);
  free(r);
}

static int method_id(const char *name) {
#define XX(num, id, str) \
  if (strcmp(name, #str) == 0) return num;
  HTTP_METHOD_MAP(XX)
#undef XX
  return -1;
}

static node *child_literal(node *n, const char *seg, size_t len) {
  for (unsigned i = 0; i < n->nlits; i++)
    if (n->lits[i]->seglen == len && memcmp(n->lits[i]->seg, seg, len) == 0)
      return n->lits[i];
  node **lits = realloc(n->lits, (n->nlits + 1) * sizeof(node *));
  if (lits == NULL) return NULL;
  n->lits = lits;
  node *c = calloc(1, sizeof(node));
  if (c == NULL) return NULL;
  c->seg = malloc(len + 1);
  if (c->seg == NULL) {
    free(c);
    return NULL;
  }
  memcpy(c->seg, seg, len);
  c->seg[len] = '\0';
  c->seglen = len;
  n->lits[n->nlits++] = c;
  return c;
}

static node *child_special(node **slot) {
  if (*slot == NULL) *slot = calloc(1, sizeof(node));
  return *slot;
}

static bool valid_param_name(const char *p, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

int mp_router_add(mp_router *r, const char *method, const char *pattern,
                  int handler, char *err, size_t errlen) {
  int m = method_id(method);
  if (r->fallback.handler >= 0) {
    snprintf(err, errlen, "route %s %s added after the fallback", method,
             pattern);
    return MP_INVALID;
  }
  if (m < 0) {
    snprintf(err, errlen, "unknown HTTP method '%s'", method);
    return MP_INVALID;
  }
  if (pattern[0] != '/') {
    snprintf(err, errlen, "pattern '%s' must start with '/'", pattern);
    return MP_INVALID;
  }

  mp_route route = {.method = (uint8_t)m, .handler = handler};
  node *n = &r->root;
  const char *p = pattern;
  int rc = MP_NOMEM;
  /* An empty pattern tail ("/") ends at the root. */
  while (*p == '/' && !(p[1] == '\0' && p == pattern)) {
    const char *s = p + 1;
    const char *e = strchr(s, '/');
    if (e == NULL) e = s + strlen(s);
    size_t len = (size_t)(e - s);
    if (len > 0 && (s[0] == ':' || s[0] == '*')) {
      if (!valid_param_name(s + 1, len - 1)) {
        snprintf(err, errlen,
                 "pattern '%s': parameter names are letters, digits and '_'",
                 pattern);
        rc = MP_INVALID;
        goto err;
      }
      if (route.nparams == MP_MAX_PARAMS) {
        snprintf(err, errlen, "pattern '%s': more than %d parameters", pattern,
                 MP_MAX_PARAMS);
        rc = MP_INVALID;
        goto err;
      }
      if (s[0] == '*' && *e != '\0') {
        snprintf(err, errlen, "pattern '%s': a splat must be the last segment",
                 pattern);
        rc = MP_INVALID;
        goto err;
      }
      char *name = strndup(s + 1, len - 1);
      if (name == NULL) goto err;
      route.param_names[route.nparams++] = name;
      n = child_special(s[0] == ':' ? &n->param : &n->splat);
    } else {
      n = child_literal(n, s, len);
    }
    if (n == NULL) goto err;
    p = e;
  }

  for (unsigned i = 0; i < n->nroutes; i++) {
    if (r->routes[n->routes[i]].method == m) {
      snprintf(err, errlen, "duplicate route %s %s (already declared as %s)",
               method, pattern, r->routes[n->routes[i]].pattern);
      rc = MP_INVALID;
      goto err;
    }
  }
  route.pattern = strdup(pattern);
  if (route.pattern == NULL) goto err;
  mp_route *routes = realloc(r->routes, (r->nroutes + 1) * sizeof(mp_route));
  if (routes == NULL) goto err;
  r->routes = routes;
  unsigned *idx = realloc(n->routes, (n->nroutes + 1) * sizeof(unsigned));
  if (idx == NULL) goto err;
  n->routes = idx;
  n->routes[n->nroutes++] = r->nroutes;
  route.index = r->nroutes;
  r->routes[r->nroutes++] = route;
  r->methods |= 1ull << m;
  if (m == HTTP_GET) r->methods |= 1ull << HTTP_HEAD;
  return 0;

err:
  free(route.pattern);
  for (unsigned k = 0; k < route.nparams; k++) free(route.param_names[k]);
  if (rc == MP_NOMEM) snprintf(err, errlen, "out of memory");
  return rc;
}

/* Does node n serve the method? Adds its methods to *allow either way. */
static bool serves(const mp_router *r, const node *n, uint8_t method,
                   mp_route_match *m, uint64_t *allow) {
  const mp_route *get = NULL;
  for (unsigned i = 0; i < n->nroutes; i++) {
    const mp_route *route = &r->routes[n->routes[i]];
    *allow |= 1ull << route->method;
    if (route->method == HTTP_GET) {
      *allow |= 1ull << HTTP_HEAD;
      get = route;
    }
    if (route->method == method) {
      m->route = route;
      m->head_from_get = false;
      return true;
    }
  }
  if (method == HTTP_HEAD && get != NULL) {
    m->route = get;
    m->head_from_get = true;
    return true;
  }
  return false;
}

/* A splat child of n takes the rest of the path from s (possibly empty).
 * Its methods go to m->splat_allow, which alone never makes a 405. */
static bool splat(const mp_router *r, const node *n, uint8_t method,
                  size_t s, size_t len, mp_route_match *m, uint64_t *allow) {
  (void)allow;
  if (n->splat == NULL || n->splat->nroutes == 0) return false;
  unsigned k = m->nparams++;
  m->params[k] = (mp_span){(uint32_t)s, (uint32_t)(len - s)};
  if (serves(r, n->splat, method, m, &m->splat_allow)) return true;
  m->nparams = k;
  return false;
}

/* pos is the index of the '/' before the next segment, or len. */
static bool walk(const mp_router *r, const node *n, uint8_t method,
                 const char *path, size_t len, size_t pos, mp_route_match *m,
                 uint64_t *allow) {
  if (pos == len) return n->nroutes > 0 && serves(r, n, method, m, allow);
  size_t s = pos + 1, e = s;
  while (e < len && path[e] != '/') e++;

  for (unsigned i = 0; i < n->nlits; i++) {
    const node *c = n->lits[i];
    if (c->seglen == e - s && memcmp(c->seg, path + s, e - s) == 0) {
      if (walk(r, c, method, path, len, e, m, allow)) return true;
      break;
    }
  }
  if (n->param != NULL && e > s) {
    unsigned k = m->nparams++;
    m->params[k] = (mp_span){(uint32_t)s, (uint32_t)(e - s)};
    if (walk(r, n->param, method, path, len, e, m, allow)) return true;
    m->nparams = k;
  }
  return splat(r, n, method, s, len, m, allow);
}

/* A miss: rc, with the fallback as the route when there is one. */
static int miss(const mp_router *r, mp_route_match *m, int rc) {
  m->miss = rc == MP_DECLINED ? 405 : 404;
  m->nparams = 0;
  if (r->fallback.handler >= 0) m->route = &r->fallback;
  return rc;
}

int mp_router_match(const mp_router *r, uint8_t method, const char *path,
                    size_t len, mp_route_match *m, uint64_t *allow) {
  *allow = 0;
  m->nparams = 0;
  m->route = NULL;
  m->miss = 0;
  m->allow = m->splat_allow = 0;
  if (len == 0 || path[0] != '/') return miss(r, m, MP_NOT_FOUND);
  if (len == 1) {
    /* "/" is the root itself, and the root's splat with nothing after
     * the '/', as "/files/" is for a splat after "/files". */
    if ((r->root.nroutes > 0 && serves(r, &r->root, method, m, allow)) ||
        splat(r, &r->root, method, 1, 1, m, allow))
      return 0;
  } else if (walk(r, &r->root, method, path, len, 0, m, allow)) {
    return 0;
  }
  if (*allow == 0) return miss(r, m, MP_NOT_FOUND);
  *allow |= m->splat_allow;
  m->allow = *allow;
  return miss(r, m, MP_DECLINED);
}

uint64_t mp_router_methods(const mp_router *r) { return r->methods; }

size_t mp_router_allow_list(uint64_t allow, char *out, size_t cap) {
  size_t o = 0;
  for (unsigned i = 0; i < 64; i++) {
    if (!(allow & (1ull << i))) continue;
    const char *name = llhttp_method_name((llhttp_method_t)i);
    size_t n = strlen(name);
    if (o + n + 2 >= cap) break;
    if (o > 0) {
      out[o++] = ',';
      out[o++] = ' ';
    }
    memcpy(out + o, name, n);
    o += n;
  }
  if (o < cap) out[o] = '\0';
  return o;
}

int mp_router_set_fallback(mp_router *r, int handler) {
  if (handler < 0) return MP_INVALID;
  r->fallback.handler = handler;
  r->fallback.index = r->nroutes;
  r->fallback.pattern = (char *)"(no route)"; /* never freed */
  r->fallback.fallback = true;
  return 0;
}

const mp_route *mp_router_fallback(const mp_router *r) {
  return r->fallback.handler >= 0 ? &r->fallback : NULL;
}

const char *mp_route_method_name(const mp_route *route, uint8_t method) {
  return llhttp_method_name(
      (llhttp_method_t)(route->fallback ? method : route->method));
}

unsigned mp_router_count(const mp_router *r) { return r->nroutes; }

const mp_route *mp_router_route(const mp_router *r, unsigned i) {
  return i < r->nroutes ? &r->routes[i] : NULL;
}
