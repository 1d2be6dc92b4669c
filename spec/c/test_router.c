/*
 * The router on strings: precedence (literal, parameter, splat), backtracking,
 * parameter spans, 404 versus 405 and its Allow list (splat routes alone
 * never make a 405), HEAD served by GET, the fallback that misses match,
 * and the patterns it refuses.
 */
#include <stdlib.h>

#include "check.h"
#include "errors.h"
#include "router.h"

static mp_router *r;

static void add(const char *method, const char *pattern, int handler) {
  char err[256];
  int rc = mp_router_add(r, method, pattern, handler, err, sizeof err);
  CHECK_EQ_INT(rc, 0);
  if (rc != 0) fprintf(stderr, "  %s\n", err);
}

/* The handler matched for method and path, or -404 / -405. */
static int match(uint8_t method, const char *path, mp_route_match *m) {
  uint64_t allow;
  int rc = mp_router_match(r, method, path, strlen(path), m, &allow);
  if (rc == MP_NOT_FOUND) return -404;
  if (rc == MP_DECLINED) return -405;
  return m->route->handler;
}

static void param_is(const char *path, mp_route_match *m, unsigned i,
                     const char *name, const char *value) {
  CHECK(i < m->nparams);
  if (i >= m->nparams) return;
  CHECK(strcmp(m->route->param_names[i], name) == 0);
  CHECK_SPAN(path + m->params[i].off, m->params[i].len, value);
}

static void test_precedence(void) {
  mp_route_match m;
  add("GET", "/files/special", 1);
  add("GET", "/files/:name", 2);
  add("GET", "/files/*rest", 3);
  add("GET", "/files/:name/meta", 4);
  add("GET", "/", 5);
  add("GET", "/users/:id", 6);
  add("POST", "/users/:id", 7);
  add("GET", "/users/:id/posts/:post", 8);
  add("DELETE", "/users/me", 9);

  CHECK_EQ_INT(match(HTTP_GET, "/files/special", &m), 1);
  CHECK_EQ_INT(match(HTTP_GET, "/files/other", &m), 2);
  param_is("/files/other", &m, 0, "name", "other");
  CHECK_EQ_INT(match(HTTP_GET, "/files/a/b/c", &m), 3);
  param_is("/files/a/b/c", &m, 0, "rest", "a/b/c");
  CHECK_EQ_INT(match(HTTP_GET, "/files/x/meta", &m), 4);
  CHECK_EQ_INT(match(HTTP_GET, "/files/special/meta", &m), 4); /* backtracks */
  CHECK_EQ_INT(match(HTTP_GET, "/files/", &m), 3);             /* empty splat */
  param_is("/files/", &m, 0, "rest", "");
  CHECK_EQ_INT(match(HTTP_GET, "/", &m), 5);
  CHECK_EQ_INT(match(HTTP_GET, "/files", &m), -404); /* a splat needs its '/' */
  CHECK_EQ_INT(match(HTTP_GET, "/users/42/posts/7", &m), 8);
  param_is("/users/42/posts/7", &m, 0, "id", "42");
  param_is("/users/42/posts/7", &m, 1, "post", "7");
  CHECK_EQ_INT(match(HTTP_POST, "/users/42", &m), 7);
  /* /users/me exists for DELETE only, but GET falls back to /users/:id. */
  CHECK_EQ_INT(match(HTTP_GET, "/users/me", &m), 6);
  CHECK_EQ_INT(match(HTTP_DELETE, "/users/me", &m), 9);
}

static void test_not_found_and_not_allowed(void) {
  mp_route_match m;
  uint64_t allow;
  CHECK_EQ_INT(match(HTTP_GET, "/nope", &m), -404);
  CHECK_EQ_INT(match(HTTP_GET, "/users", &m), -404);
  CHECK_EQ_INT(match(HTTP_GET, "/users/", &m), -404); /* a parameter is never empty */
  CHECK_EQ_INT(match(HTTP_GET, "*", &m), -404);
  CHECK_EQ_INT(match(HTTP_GET, "", &m), -404);
  int rc = mp_router_match(r, HTTP_PUT, "/users/42", 9, &m, &allow);
  CHECK_EQ_INT(rc, MP_DECLINED);
  char list[128];
  size_t n = mp_router_allow_list(allow, list, sizeof list);
  CHECK_SPAN(list, n, "GET, HEAD, POST");
  rc = mp_router_match(r, HTTP_PUT, "/users/me", 9, &m, &allow);
  n = mp_router_allow_list(allow, list, sizeof list);
  CHECK_SPAN(list, n, "DELETE, GET, HEAD, POST");
}

static void test_head(void) {
  mp_route_match m;
  CHECK_EQ_INT(match(HTTP_HEAD, "/files/x", &m), 2);
  CHECK(m.head_from_get);
  add("HEAD", "/only-head", 10);
  CHECK_EQ_INT(match(HTTP_HEAD, "/only-head", &m), 10);
  CHECK(!m.head_from_get);
  CHECK_EQ_INT(match(HTTP_GET, "/only-head", &m), -405);
}

static void allow_is(uint8_t method, const char *path, const char *list) {
  mp_route_match m;
  uint64_t allow;
  CHECK_EQ_INT(mp_router_match(r, method, path, strlen(path), &m, &allow),
               MP_DECLINED);
  char out[128];
  size_t n = mp_router_allow_list(allow, out, sizeof out);
  CHECK_SPAN(out, n, list);
}

/* A splat right after the root takes "/" too, with an empty value, as a
 * splat after "/files" takes "/files/"; another method is not found there,
 * as on any other path only the splat covers, until a route without a
 * splat serves the path: then 405, with the splat's methods in Allow. */
static void test_root_splat(void) {
  mp_router *outer = r;
  r = mp_router_new();
  mp_route_match m;
  add("GET", "/*path", 1);
  add("OPTIONS", "/*path", 2);
  CHECK_EQ_INT(match(HTTP_GET, "/", &m), 1);
  param_is("/", &m, 0, "path", "");
  CHECK_EQ_INT(match(HTTP_HEAD, "/", &m), 1);
  CHECK(m.head_from_get);
  CHECK_EQ_INT(match(HTTP_OPTIONS, "/", &m), 2);
  CHECK_EQ_INT(match(HTTP_GET, "/a/b", &m), 1);
  param_is("/a/b", &m, 0, "path", "a/b");
  CHECK_EQ_INT(match(HTTP_GET, "//", &m), 1);
  param_is("//", &m, 0, "path", "/");
  CHECK_EQ_INT(match(HTTP_POST, "/", &m), -404);
  CHECK_EQ_INT(m.miss, 404);
  CHECK_EQ_INT(match(HTTP_POST, "/x", &m), -404);
  /* A route for "/" itself beats the splat for its method only. */
  add("POST", "/", 3);
  CHECK_EQ_INT(match(HTTP_POST, "/", &m), 3);
  CHECK_EQ_INT(m.nparams, 0);
  CHECK_EQ_INT(match(HTTP_GET, "/", &m), 1);
  CHECK_EQ_INT(m.nparams, 1);
  allow_is(HTTP_DELETE, "/", "GET, HEAD, POST, OPTIONS");
  CHECK_EQ_INT(mp_router_methods(r), (1ull << HTTP_GET) | (1ull << HTTP_HEAD) |
                                         (1ull << HTTP_OPTIONS) | (1ull << HTTP_POST));
  mp_router_free(r);
  r = outer;
}

/* 405 only where a route without a splat serves the path for another
 * method; a path that splat routes of other methods alone cover is not
 * found, and their methods join the Allow of a 405. */
static void test_splats_never_make_405(void) {
  mp_router *outer = r;
  r = mp_router_new();
  mp_route_match m;
  add("GET", "/*rest", 1);
  add("POST", "/items", 2);
  add("DELETE", "/items/:id", 3);
  add("PUT", "/files/*path", 4);
  CHECK_EQ_INT(match(HTTP_POST, "/nothing", &m), -404);
  CHECK_EQ_INT(m.miss, 404);
  CHECK_EQ_INT(match(HTTP_POST, "/files/a", &m), -404);
  CHECK_EQ_INT(match(HTTP_GET, "/files/a", &m), 1); /* backtracks to the root's */
  allow_is(HTTP_DELETE, "/items", "GET, HEAD, POST");
  allow_is(HTTP_PATCH, "/items/5", "DELETE, GET, HEAD");
  CHECK_EQ_INT(match(HTTP_PATCH, "/items/5", &m), -405);
  CHECK_EQ_INT(m.miss, 405);
  CHECK_EQ_INT(m.allow, (1ull << HTTP_GET) | (1ull << HTTP_HEAD) |
                            (1ull << HTTP_DELETE));
  mp_router_free(r);
  r = outer;
}

/* A router with a fallback hands it out for every miss, keeping the
 * miss's status and Allow; it is no route of the count's, and no route
 * may follow it. */
static void test_fallback(void) {
  mp_router *outer = r;
  r = mp_router_new();
  mp_route_match m;
  uint64_t allow;
  add("GET", "/*rest", 1);
  add("POST", "/items", 2);
  CHECK(mp_router_fallback(r) == NULL);
  CHECK_EQ_INT(mp_router_match(r, HTTP_POST, "/nothing", 8, &m, &allow),
               MP_NOT_FOUND);
  CHECK(m.route == NULL);
  CHECK_EQ_INT(mp_router_set_fallback(r, -1), MP_INVALID);
  CHECK_EQ_INT(mp_router_set_fallback(r, 99), 0);
  CHECK_EQ_INT(mp_router_match(r, HTTP_POST, "/nothing", 8, &m, &allow),
               MP_NOT_FOUND);
  CHECK(m.route == mp_router_fallback(r));
  CHECK_EQ_INT(m.route->handler, 99);
  CHECK(m.route->fallback);
  CHECK_EQ_INT(m.miss, 404);
  CHECK_EQ_INT(m.nparams, 0);
  CHECK_EQ_INT(mp_router_match(r, HTTP_PUT, "/items", 6, &m, &allow),
               MP_DECLINED);
  CHECK_EQ_INT(m.route->handler, 99);
  CHECK_EQ_INT(m.miss, 405);
  CHECK_EQ_INT(m.allow, allow);
  CHECK_EQ_INT(match(HTTP_GET, "/x", &m), 1);
  CHECK_EQ_INT(m.miss, 0);
  CHECK_EQ_INT(mp_router_count(r), 2);
  CHECK_EQ_INT(mp_router_fallback(r)->index, 2);
  CHECK(strcmp(mp_route_method_name(mp_router_fallback(r), HTTP_PUT), "PUT") == 0);
  CHECK(strcmp(mp_route_method_name(mp_router_route(r, 1), HTTP_HEAD), "POST") == 0);
  char err[128];
  CHECK_EQ_INT(mp_router_add(r, "GET", "/late", 3, err, sizeof err), MP_INVALID);
  mp_router_free(r);
  r = outer;
}

static void refuse(const char *method, const char *pattern, const char *why) {
  char err[256];
  int rc = mp_router_add(r, method, pattern, 0, err, sizeof err);
  CHECK_EQ_INT(rc, MP_INVALID);
  CHECK(strstr(err, why) != NULL);
  if (strstr(err, why) == NULL) fprintf(stderr, "  got: %s\n", err);
}

static void test_refusals(void) {
  refuse("GET", "/files/:other", "duplicate route");
  refuse("GET", "/users/:id", "duplicate route");
  refuse("FETCH", "/x", "unknown HTTP method");
  refuse("GET", "x", "must start with '/'");
  refuse("GET", "/a/*rest/b", "splat must be the last");
  refuse("GET", "/a/:", "parameter names");
  refuse("GET", "/a/:b-c", "parameter names");
  CHECK_EQ_INT(mp_router_count(r), 10);
}

int main(void) {
  r = mp_router_new();
  test_precedence();
  test_not_found_and_not_allowed();
  test_head();
  test_refusals();
  test_splats_never_make_405();
  test_fallback();
  test_root_splat();
  mp_router_free(r);
  return check_report("router");
}
