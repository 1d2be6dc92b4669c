/*
 * Requests (see request.h): the slot table and handles, routing, the
 * handler's run and its waits on the body, and requests whose client has
 * gone. The response is response.c's.
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cidr.h"
#include "compress.h"
#include "conn.h"
#include "errors.h"
#include "log.h"
#include "publish.h"
#include "response.h"
#include "stats.h"
#include "str.h"
#include "task.h"

/* Buffers bigger than these go back to malloc when a request ends. */
#define KEEP_BODY (64 * 1024)
#define KEEP_HEADERS (4 * 1024)


mp_request *mp_request_acquire(mp_server *s, mp_conn *c) {
  mp_request *r;
  if (s->nfree_slots > 0) {
    r = s->reqs[s->free_slots[--s->nfree_slots]];
  } else {
    if (s->nreqs == MP_MAX_SLOTS) return NULL;
    if ((s->nreqs & (s->nreqs - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
      uint32_t cap = s->nreqs ? s->nreqs * 2 : 1;
      mp_request **reqs = mp_realloc(s->reqs, s->nreqs * sizeof *reqs,
                                     cap * sizeof *reqs);
      if (reqs == NULL) return NULL;
      s->reqs = reqs;
      uint32_t *slots = mp_realloc(s->free_slots, s->nreqs * sizeof *slots,
                                   cap * sizeof *slots);
      if (slots == NULL) return NULL;
      s->free_slots = slots;
    }
    size_t size = sizeof *r + s->limits.max_headers * sizeof(mp_hfield);
    r = mp_alloc(size);
    if (r == NULL) return NULL;
    memset(r, 0, size);
    r->slot = s->nreqs;
    r->srv = s;
    uv_timer_init(s->loop, &r->timer);
    r->timer.data = r;
    s->reqs[s->nreqs++] = r;
  }
  r->conn = c;
  r->live = true;
  r->aborted = r->abort_told = false;
  r->client_known = false;
  r->msg.fields = r->fields;
  r->status = 200;
  r->reason_len = 0;
  r->res = MP_RES_NEW;
  r->head_only = r->keep_alive = r->type_set = r->length_set = false;
  r->server_set = false;
  r->chunked = false;
  r->declared = -1;
  r->sent = 0;
  r->body_bytes = 0;
  r->body.len = 0;
  r->headers.len = 0;
  r->handler.co = NULL;
  r->running = false;
  r->core_answers = false;
  r->file = NULL;
  r->file_rc = 0;
  r->wait = NULL;
  r->upstream_ops = r->awaiting = 0;
  r->started = r->body_done = r->draining = r->continue_sent = false;
  r->trailers.len = 0;
  r->in_trailer = r->trailer_value = false;
  r->task = r->timer_run = r->park_children = false;
  r->parent = r->kids = r->sib_prev = r->sib_next = NULL;
  r->nkids = 0;
  r->charge = (mp_charge){.owner = r};
  return r;
}

static void unlink_detached(mp_request *r);

void mp_request_release(mp_request *r) {
  mp_server *s = r->srv;
  if (r->kids != NULL) mp_task_kill_kids(r); /* none outlives its parent */
  if (r->task)
    mp__task_unlink(r);
  else if (r->live && r->conn == NULL)
    unlink_detached(r);
  if ((r->outbound != NULL || r->upstream_ops > 0) &&
      s->release_outbound != NULL)
    s->release_outbound(r);
  mp_compress_stream_free(r);
  r->gen++;
  r->conn = NULL;
  r->live = false;
  if (r->code != NULL) {
    mp_server_release_code(s, r->code);
    r->code = NULL;
  }
  if (r->body.cap > KEEP_BODY) mp_buf_release(&r->body);
  if (r->saved_head.cap > 0) mp_buf_release(&r->saved_head);
  if (r->headers.cap > KEEP_HEADERS) mp_buf_release(&r->headers);
  if (r->trailers.cap > KEEP_HEADERS) mp_buf_release(&r->trailers);
  s->free_slots[s->nfree_slots++] = r->slot;
}

/* The handle layout (request.h). */
#define CTX_GEN_MASK ((1ull << MP_CTX_GEN_BITS) - 1)
#define CTX_SLOT_MASK ((1ull << (MP_CTX_GEN_SHIFT - MP_CTX_SLOT_SHIFT)) - 1)
_Static_assert(MP_MAX_SLOTS <= CTX_SLOT_MASK, "slots outgrow their bits");
_Static_assert(MP_CTX_GEN_BITS == 8 * sizeof(uint32_t),
               "the generation is mp_request's gen, whole");
_Static_assert(MP_CTX_GEN_SHIFT + MP_CTX_GEN_BITS < MP_CTX_TAG_BIT &&
                   MP_CTX_TAG_BIT < 53,
               "a handle must be an integer a double holds exactly");

uint64_t mp_request_ctx(const mp_request *r, int kind) {
  return (1ull << MP_CTX_TAG_BIT) | ((uint64_t)r->gen << MP_CTX_GEN_SHIFT) |
         ((uint64_t)r->slot << MP_CTX_SLOT_SHIFT) | (uint64_t)kind;
}

/* The live record, request or task, a handle of kind `kind` names. */
static mp_request *lookup(uint64_t ctx, int kind) {
  mp_server *s = mp_server_self;
  /* The tag bit set, and the bits between it and the generation clear. */
  uint64_t top = ctx >> (MP_CTX_GEN_SHIFT + MP_CTX_GEN_BITS);
  if (top != 1ull << (MP_CTX_TAG_BIT - MP_CTX_GEN_SHIFT - MP_CTX_GEN_BITS) ||
      (int)(ctx & 1) != kind || s == NULL)
    return NULL;
  uint32_t slot = (uint32_t)((ctx >> MP_CTX_SLOT_SHIFT) & CTX_SLOT_MASK);
  uint32_t gen = (uint32_t)((ctx >> MP_CTX_GEN_SHIFT) & CTX_GEN_MASK);
  if (slot >= s->nreqs) return NULL;
  mp_request *r = s->reqs[slot];
  return r->gen == gen && r->live ? r : NULL;
}

mp_request *mp_request_from_ctx(uint64_t ctx, int kind) {
  mp_request *r = lookup(ctx, kind);
  return r != NULL && !r->task ? r : NULL;
}

mp_request *mp_request_record(uint64_t ctx) { return lookup(ctx, MP_CTX_REQ); }

mp_request *mp_request_waiter(mp_request *r) {
  mp_request *cur = mp_request_current();
  return cur != NULL && mp_task_root(cur) == r ? cur : NULL;
}

static void free_on_close(uv_handle_t *h) { free(h->data); }

void mp_request_free_all(mp_server *s) {
  for (uint32_t i = 0; i < s->nreqs; i++) {
    mp_request *r = s->reqs[i];
    mp_buf_release(&r->body);
    mp_buf_release(&r->headers);
    mp_buf_release(&r->trailers);
    mp_buf_release(&r->saved_head);
    uv_close((uv_handle_t *)&r->timer, free_on_close);
  }
  free(s->reqs);
  free(s->free_slots);
  s->reqs = NULL;
  s->free_slots = NULL;
  s->nreqs = s->nfree_slots = 0;
}

/* ---- Running the handler ---- */

/* Completes r after its handler stopped with `outcome`. Returns true when
 * the request is over, false while the handler waits. */
static bool settle(mp_request *r, int outcome) {
  if (outcome == MP_CODE_WAITING) return false;
  r->running = false;
  /* A handler that returned has waited for its light threads; one that
   * failed leaves them behind, and they die with it. */
  if (r->kids != NULL) mp_task_kill_kids(r);
  if (outcome == MP_CODE_FAILED) {
    const char *text = r->srv->cfg->debug ? r->srv->code_ops->error(r->code)
                                        : "internal server error";
    mp_response_error(r, 500, text);
  }
  if (r->res != MP_RES_DONE && mp_response_finish(r) != 0) {
    r->keep_alive = false;
    if (r->conn != NULL) mp_conn_close_after_flush(r->conn);
  }
  return true;
}

const char *mp_request_path(const mp_request *r, size_t *len) {
  if (r->msg.path.len == 0) { /* an absolute-form target without a path */
    *len = 1;
    return "/";
  }
  *len = r->msg.path.len;
  return r->head + r->msg.path.off;
}

void mp_request_answer_miss(mp_request *r) {
  if (r->match.miss != 405) {
    mp_response_error(r, 404, "not found");
    return;
  }
  char line[512];
  memcpy(line, "Allow: ", 7);
  size_t n = 7 + mp_router_allow_list(r->match.allow, line + 7, sizeof line - 9);
  memcpy(line + n, "\r\n", 2);
  mp_response_error_with(r, 405, "method not allowed", line, n + 2);
}

/* OPTIONS * asks about the server as a whole (RFC 9110 section 9.3.7):
 * the methods the app's routes serve. */
static void send_server_options(mp_request *r) {
  char allow[512];
  size_t n = mp_router_allow_list(mp_router_methods(r->srv->router), allow,
                                  sizeof allow);
  mp_response_header(r, "Allow", 5, allow, n);
  mp_response_send(r, "", 0, NULL);
}

/* The value of the first field named name (lower case, nlen bytes), or
 * NULL. */
static const char *field_value(const mp_request *r, const char *name,
                               size_t nlen, size_t *len) {
  for (unsigned i = 0; i < r->msg.nfields; i++) {
    const mp_hfield *f = &r->msg.fields[i];
    if (f->name.len == nlen && mp_str_ieq(r->head + f->name.off, name, nlen)) {
      *len = f->value.len;
      return r->head + f->value.off;
    }
  }
  return NULL;
}

/* One X-Forwarded-For entry, p[0..n), as an address: spaces trimmed, and
 * the port of "1.2.3.4:80" or "[2001:db8::1]:80" dropped (some proxies add
 * it). Returns whether it is one; *start and *len give its text. */
static bool forwarded_addr(const char *p, size_t n, const char **start,
                           size_t *len, uint8_t *family, uint8_t addr[16]) {
  while (n > 0 && (*p == ' ' || *p == '\t')) p++, n--;
  while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
  if (n > 0 && *p == '[') {
    const char *close = memchr(p, ']', n);
    if (close == NULL) return false;
    n = (size_t)(close - p - 1);
    p++;
  } else {
    const char *colon = memchr(p, ':', n);
    if (colon != NULL && memchr(colon + 1, ':', n - (size_t)(colon + 1 - p)) == NULL)
      n = (size_t)(colon - p);
  }
  *start = p;
  *len = n;
  return mp_cidr_addr(p, n, family, addr);
}

const char *mp_request_client(mp_request *r) {
  if (r->conn == NULL || r->client_known) return r->peer;
  const char *peer = mp_conn_peer_name(r->conn);
  const mp_cidr_list *trusted = &r->srv->cfg->trusted_proxies;
  uint8_t family, addr[16];
  if (trusted->n == 0 || !mp_cidr_addr(peer, strlen(peer), &family, addr) ||
      !mp_cidr_list_has(trusted, family, addr))
    return peer;
  const char *client = peer;
  size_t client_len = strlen(peer);
  /* From the last entry of the last field leftwards, while the hop that
   * sent it is trusted. */
  for (unsigned i = r->msg.nfields; i-- > 0;) {
    const mp_hfield *f = &r->msg.fields[i];
    if (f->name.len != 15 ||
        !mp_str_ieq(r->head + f->name.off, "x-forwarded-for", 15))
      continue;
    const char *v = r->head + f->value.off;
    size_t end = f->value.len;
    for (;;) {
      size_t start = end;
      while (start > 0 && v[start - 1] != ',') start--;
      const char *a;
      size_t alen;
      if (end > start) {
        if (!forwarded_addr(v + start, end - start, &a, &alen, &family, addr))
          goto done;
        client = a;
        client_len = alen;
        if (!mp_cidr_list_has(trusted, family, addr)) goto done;
      }
      if (start == 0) break;
      end = start - 1;
    }
  }
done:
  snprintf(r->peer, sizeof r->peer, "%.*s", (int)client_len, client);
  r->client_known = true;
  return r->peer;
}

static bool id_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
         c == '-' || c == '_' || c == '.' || c == ':';
}

const char *mp_request_id(mp_request *r, size_t *len) {
  if (r->id_len == 0) {
    size_t n = 0;
    const char *v = field_value(r, "x-request-id", 12, &n);
    bool ok = v != NULL && n > 0 && n <= MP_REQUEST_ID_MAX;
    for (size_t i = 0; ok && i < n; i++) ok = id_byte((unsigned char)v[i]);
    if (ok) {
      memcpy(r->id, v, n);
      r->id_len = (uint8_t)n;
    } else {
      /* A prefix per process (made again in a child), then a counter. */
      static uint64_t prefix, counter;
      static pid_t owner;
      if (owner != getpid()) {
        owner = getpid();
        if (getrandom(&prefix, sizeof prefix, 0) != sizeof prefix)
          prefix = uv_hrtime() ^ ((uint64_t)owner << 32);
        counter = 0;
      }
      char hex[33];
      snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)prefix,
               (unsigned long long)++counter);
      memcpy(r->id, hex, 32);
      r->id_len = 32;
    }
  }
  *len = r->id_len;
  return r->id;
}

/* Routes r and runs its handler. Returns true when r finished before
 * returning (as mp_request_start). */
static bool route(mp_request *r) {
  mp_server *s = r->srv;
  uint64_t allow;
  size_t plen;
  const char *path = mp_request_path(r, &plen);
  mp_router_match(s->router, r->msg.method, path, plen, &r->match, &allow);
  /* A miss runs the app's fallback when it has one (its middleware and
   * hooks), and is answered here otherwise, without entering Lua. */
  if (r->match.route == NULL) {
    mp_request_answer_miss(r);
    return true;
  }
  /* The request runs on the code current now, and keeps it alive until it
   * is released, whatever reloads happen meanwhile. */
  r->code = s->code;
  s->code_ops->hold(r->code);
  r->running = true;
  if (s->cfg->request_id) mp_log_set_context(r->id, r->id_len);
  int outcome = s->code_ops->start(r->code, r, r->match.route->handler);
  mp_log_set_context(NULL, 0);
  return settle(r, outcome);
}

bool mp_request_start(mp_request *r, const char *head, bool body_done) {
  mp_server *s = r->srv;
  r->head = head;
  r->body_done = body_done;
  r->started = true;
  r->head_only = r->msg.method == HTTP_HEAD;
  r->keep_alive = r->msg.keep_alive;
  r->match.route = NULL;
  r->id_len = 0;
  r->compress = 0;
  r->answered_by = MP_BY_ROUTER;
  if (s->cfg->stats || s->cfg->metrics || mp_access_log_enabled())
    r->start_ns = uv_hrtime();
  if (s->cfg->request_id) {
    size_t n;
    const char *id = mp_request_id(r, &n);
    mp_response_header(r, "X-Request-Id", 12, id, n);
  }
  size_t plen;
  const char *path = mp_request_path(r, &plen);
  if (s->intercept != NULL && s->intercept(s, r)) {
    r->answered_by = MP_BY_CORE;
    return true;
  }
  if (plen == 1 && path[0] == '*') { /* the parser lets only OPTIONS have it */
    send_server_options(r);
    return true;
  }
  if (s->files != NULL && s->serve_file != NULL) {
    int rc = s->serve_file(s, r);
    if (rc == 0 || rc == MP_AGAIN) r->answered_by = MP_BY_FILES;
    if (rc == 0) return true;
    if (rc == MP_AGAIN) return false;
  }
  return route(r);
}

/* The core stopped answering r itself: r runs nothing now. */
static void core_over(mp_request *r) {
  r->core_answers = false;
  r->running = false;
  r->wait = NULL;
  uv_timer_stop(&r->timer);
}

static void finish_detached(mp_request *r);

void mp_request_answered(mp_request *r) {
  core_over(r);
  if (r->res != MP_RES_DONE && mp_response_finish(r) != 0) {
    r->keep_alive = false;
    if (r->conn != NULL) mp_conn_close_after_flush(r->conn);
  }
  if (r->conn == NULL)
    finish_detached(r);
  else
    mp_conn_request_done(r->conn);
}

void mp_request_route(mp_request *r) {
  core_over(r);
  mp_conn *c = r->conn;
  if (c == NULL) { /* its client has gone: nothing to route for */
    finish_detached(r);
    return;
  }
  r->answered_by = MP_BY_ROUTER; /* the files declined it after all */
  mp_charge *was = mp_charge_switch(&r->charge);
  bool over = route(r);
  mp_charge_switch(was);
  if (over) mp_conn_request_done(c);
}

void mp_request_account(mp_request *r) {
  mp_server *s = r->srv;
  s->stats.requests++;
  bool log = mp_access_log_enabled();
  if (!s->cfg->stats && !s->cfg->metrics && !log) return;
  uint64_t ns = uv_hrtime() - r->start_ns;
  /* Published before the response's last bytes are flushed (publish.h). */
  if (s->cfg->metrics) mp_publish_request(r, ns);
  if (s->cfg->stats || s->cfg->metrics) mp_publish_worker(s);
  /* Per-route figures are the current code's: a request that finished on
   * code since replaced is counted in the totals only. */
  if (r->match.route != NULL && r->code == s->code)
    mp_stats_record(&s->stats, r->match.route->index, r->charge.lua_bytes,
                    r->charge.c_bytes,
                    ns);
  if (log) {
    /* The request line as it came: method, target and version. */
    char line[512];
    const char *method = llhttp_method_name((llhttp_method_t)r->msg.method);
    int n = snprintf(line, sizeof line, "%s %.*s HTTP/1.%d", method,
                     (int)(r->msg.target.len < 400 ? r->msg.target.len : 400),
                     r->head + r->msg.target.off, r->msg.http_minor);
    uint64_t bytes = r->head_only ? 0 : r->body_bytes + (uint64_t)r->sent;
    /* A request whose client left before its response was complete is
     * logged as 499, as nginx does. */
    mp_access_entry e = {
        .host = mp_request_client(r),
        .request = line, .request_len = n > 0 ? (size_t)n : 0,
        .method = method, .target = r->head + r->msg.target.off,
        .target_len = r->msg.target.len,
        .status = r->aborted ? 499 : r->status, .bytes = bytes,
        .seconds = (double)ns / 1e9, .lua_bytes = r->charge.lua_bytes,
        .c_bytes = r->charge.c_bytes,
        .id = r->id_len > 0 ? r->id : NULL, .id_len = r->id_len};
    if (mp_access_log_wants_agent()) {
      e.referer = field_value(r, "referer", 7, &e.referer_len);
      e.agent = field_value(r, "user-agent", 10, &e.agent_len);
    }
    mp_access_log(&e);
  }
}

static void finish_detached(mp_request *r) {
  mp_server *s = r->srv;
  mp_request_account(r);
  mp_request_release(r);
  mp_server_conn_closed(s); /* a draining worker may be done now */
}

void mp_request_wake(mp_request *r) {
  const mp_wait_ops *w = r->wait;
  if (w != NULL && w->resume != NULL) {
    w->resume(r);
    return;
  }
  r->wait = NULL;
  if (r->core_answers) { /* its wait was cut short: the client has gone */
    mp_request_answered(r);
    return;
  }
  if (r->task) {
    mp_task_resume(r);
    return;
  }
  mp_conn *c = r->conn;
  mp_charge *was = mp_charge_switch(&r->charge);
  if (r->id_len > 0 && r->srv->cfg->request_id)
    mp_log_set_context(r->id, r->id_len);
  int outcome = r->srv->code_ops->resume(r->code, r);
  mp_log_set_context(NULL, 0);
  bool over = settle(r, outcome);
  mp_charge_switch(was);
  if (c == NULL) {
    if (over) finish_detached(r);
  } else if (over) {
    mp_conn_request_done(c);
  } else {
    mp_conn_process(c); /* its body may need parsing, its output writing */
  }
}

/* Fields a sender must not put in a trailer (RFC 9110 section 6.5.1):
 * framing, routing, request modifiers, authentication, content handling. */
static const char *const not_trailers[] = {
    "authorization", "cache-control", "connection", "content-encoding",
    "content-length", "content-range", "content-type", "cookie", "expect",
    "host", "keep-alive", "max-forwards", "pragma", "proxy-authorization",
    "range", "set-cookie", "te", "trailer", "transfer-encoding", "upgrade"};

static bool may_trail(const char *name, size_t n) {
  for (size_t i = 0; i < sizeof not_trailers / sizeof not_trailers[0]; i++)
    if (strlen(not_trailers[i]) == n && mp_str_ieq(name, not_trailers[i], n))
      return false;
  return true;
}

int mp_request_trailer(mp_request *r, int what, const char *p, size_t n) {
  mp_buf *b = &r->trailers;
  if (what == MP_H1_TRAILER_NAME) {
    if (!r->in_trailer) {
      r->in_trailer = true;
      r->trailer_value = false;
      r->trailer_start = b->len;
    }
    return mp_buf_append(b, p, n);
  }
  if (!r->in_trailer) return 0;
  if (!r->trailer_value) {
    r->trailer_value = true;
    if (mp_buf_append(b, ": ", 2) != 0) return MP_NOMEM;
  }
  if (what == MP_H1_TRAILER_VALUE) return mp_buf_append(b, p, n);
  /* The field is whole: keep it, or not. */
  r->in_trailer = false;
  const char *name = b->data + r->trailer_start;
  const char *colon = memchr(name, ':', b->len - r->trailer_start);
  if (colon == NULL || !may_trail(name, (size_t)(colon - name))) {
    b->len = r->trailer_start;
    return 0;
  }
  size_t value = (size_t)(colon - b->data) + 2; /* past ": " */
  while (b->len > value && (b->data[b->len - 1] == ' ' || b->data[b->len - 1] == '\t'))
    b->len--;
  return mp_buf_append(b, "\n", 1);
}

/* A body read: the handler (or one of its light threads) waits for more
 * of its request's body. */
static bool body_ready(const mp_request *w) {
  const mp_request *r = mp_task_root((mp_request *)w);
  return r->body.len > 0 || r->body_done || r->conn == NULL;
}

static const mp_wait_ops reading = {
    .name = "body",
    .ready = body_ready,
    .client_gone = mp_wait_ends_when_gone,
    .awaits_input = true,
};

int mp_request_read(mp_request *r, const char **out) {
  if (r->body.len > 0) {
    *out = r->body.data;
    int n = (int)r->body.len;
    r->body.len = 0; /* the caller copies the bytes before anything else */
    return n;
  }
  if (r->body_done) return 0;
  if (r->conn == NULL) return MP_CLOSED;
  mp_request *w = mp_request_waiter(r);
  if (w == NULL) return MP_STATE;
  if (r->msg.expect_continue && r->res == MP_RES_NEW) {
    if (mp_conn_continue(r->conn) != 0) return MP_NOMEM;
    r->msg.expect_continue = false;
    r->continue_sent = true;
  }
  int rc = mp_wait_begin(w, &reading);
  return rc != 0 ? rc : MP_AGAIN;
}

void mp_request_drain_body(mp_request *r) {
  r->draining = true;
  r->body.len = 0;
}

/* ---- Requests whose client has gone ---- */

bool mp_request_tell_abort(mp_request *r) {
  if (!r->aborted || r->abort_told) return false;
  r->abort_told = true;
  return true;
}

static void unlink_detached(mp_request *r) {
  mp_server *s = r->srv;
  if (r->detached_prev != NULL)
    r->detached_prev->detached_next = r->detached_next;
  else
    s->detached = r->detached_next;
  if (r->detached_next != NULL)
    r->detached_next->detached_prev = r->detached_prev;
  r->detached_prev = r->detached_next = NULL;
  s->ndetached--;
}

void mp_request_detach(mp_request *r) {
  mp_server *s = r->srv;
  /* The client's address, from the peer the connection knows. */
  const char *client = mp_request_client(r);
  if (client != r->peer) snprintf(r->peer, sizeof r->peer, "%s", client);
  /* The head lives in the connection's read buffer, which goes with the
   * connection; the handler may still read the method, path or headers. */
  mp_charge *was = mp_charge_switch(&r->charge);
  int rc = mp_buf_append(&r->saved_head, r->head, r->msg.head_len);
  mp_charge_switch(was);
  if (rc == 0) {
    r->head = r->saved_head.data;
  } else {
    r->msg.nfields = 0; /* out of memory: better no headers than freed ones */
    r->msg.target = r->msg.path = r->msg.query = r->msg.authority =
        (mp_span){0, 0};
    r->head = "";
  }
  r->conn = NULL;
  r->aborted = r->res != MP_RES_DONE;
  r->detached_at = uv_now(s->loop);
  r->detached_prev = NULL;
  r->detached_next = s->detached;
  if (s->detached != NULL) s->detached->detached_prev = r;
  s->detached = r;
  s->ndetached++;
  /* Waits on the client end now; so does a sleep when the handler still
   * owes an answer, so that it learns at once that nobody waits for it.
   * Its light threads are told alike. */
  mp_wait_client_gone(r);
  if (r->kids != NULL) mp_task_client_gone(r);
}

/* Ends a detached handler without resuming it. */
static void stop_detached(mp_request *r) {
  if (r->kids != NULL) mp_task_kill_kids(r);
  mp_wait_cancel(r);
  if (r->code != NULL) r->srv->code_ops->abandon(r->code, r);
  r->running = r->core_answers = false;
  finish_detached(r);
}

void mp_request_sweep(mp_server *s) {
  uint64_t now = uv_now(s->loop);
  uint64_t grace = s->cfg->shutdown_timeout_ms;
  mp_request *r = s->detached;
  while (r != NULL) {
    mp_request *next = r->detached_next;
    /* Only a waiting handler can be stopped; one running is on the stack. */
    if (now - r->detached_at >= grace && r->wait != NULL &&
        mp_request_current() != r) {
      const mp_route *route = r->match.route;
      mp_log(MP_LOG_WARN, "%s %s: %s stopped %.1f s after its client "
             "left (--shutdown-timeout)",
             route != NULL ? mp_route_method_name(route, r->msg.method)
                           : llhttp_method_name((llhttp_method_t)r->msg.method),
             route != NULL ? route->pattern : "(static file)",
             route != NULL ? "handler" : "sending",
             (double)(now - r->detached_at) / 1000.0);
      stop_detached(r);
    }
    r = next;
  }
}

void mp_request_close_all(mp_server *s) {
  while (s->detached != NULL) stop_detached(s->detached);
  mp_task_kill_all(s);
  for (uint32_t i = 0; i < s->nreqs; i++) uv_timer_stop(&s->reqs[i]->timer);
}
