/*
 * Static files (see static.h).
 *
 * A file goes out in three steps, each on its own loop callback, while
 * its request counts as running, so the connection parses nothing after
 * it and pipelined answers stay in order:
 *
 *   1. look-up, on the thread pool (one uv_queue_work: realpath, the
 *      confinement check, open and fstat, the .br/.gz siblings, and the
 *      bytes of a small file), so that
 *      a slow disk holds a pool thread, never the loop;
 *   2. the head, into the connection's output like any response's: the
 *      conditionals (304), Range (206, multipart/byteranges, 416) and the
 *      validators are decided here (h1file.c has the rules);
 *   3. the body: once the connection's output is empty (the request's
 *      wait is ready then, and its resume brings us back), each part goes
 *      out: a file range with uv_fs_sendfile on the thread pool, a
 *      multipart boundary through the connection's output. sendfile
 *      writes into a nonblocking socket, so it returns when the socket's
 *      buffer is full; then a uv_poll on our descriptor waits until the
 *      socket can take more. A file of at most SMALL_FILE bytes is read
 *      whole by the look-up instead, and its parts go through the
 *      connection's output with the head: one trip through the pool.
 *
 * The sender writes through a descriptor of its own (a dup of the
 * connection's socket): a sendfile in flight on the pool can never write
 * into another connection that took the closed socket's number. A sender
 * is freed only when nothing of it is in flight; a request that ends
 * first (its client left, the worker stops) cuts it loose, and the
 * sender's last callback frees it.
 *
 * Confinement: the URL path is percent-decoded once, then refused before
 * any file-system call if it holds a NUL, a backslash, a "." or ".."
 * segment (or a dotfile, unless allowed); the joined name is then
 * resolved with realpath and must lie inside the resolved root on a
 * component boundary, which catches symbolic links leading out. The
 * resolved path is checked for dot segments again. Siblings are opened
 * with O_NOFOLLOW, so a linked .gz cannot lead out either.
 *
 * A stalled client: each bit of progress restarts the request's timer at
 * --write-timeout; when it fires, the response is cut off and the
 * connection ends.
 */
#define _GNU_SOURCE
#include "static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "errors.h"
#include "h1file.h"
#include "http1.h"
#include "log.h"
#include "response.h"
#include "str.h"
#include "wait.h"

#define MAX_RANGES 32
#define CACHE_CONTROL_MAX 256
/* One sendfile call's most: the pool thread comes back at least this
 * often, so that a fast client does not hold it for a whole big file. */
#define SEND_CHUNK (16u * 1024 * 1024)
#define BOUNDARY "moonport-5a1e3f0b9c7d"
/* Files up to this size are read whole by the look-up (still on the pool)
 * and go out with their head in one write: one trip through the pool
 * instead of two, and no sendfile for a few kilobytes. */
#define SMALL_FILE (32u * 1024)

typedef struct mount {
  char *prefix; /* without a trailing '/': "" for "/" */
  size_t plen;
  char *root;   /* resolved */
  char *cache_control;
  char *index;
  bool dotfiles;
  bool precompressed;
} mount;

struct mp_static {
  mount *mounts;
  unsigned n;
};

/* What the look-up found. */
enum { FOUND, NOT_FOUND, OUTSIDE, DIRECTORY };
enum { ENC_NONE, ENC_GZIP, ENC_BR };
/* Where the body stands. */
enum { LOOKING_UP, WAIT_OUT, SENDING, POLLING, OVER };
enum { PART_MEM, PART_FILE };

typedef struct part {
  int kind;
  uint64_t off; /* in the file, or in the sender's mem */
  uint64_t len;
} part;

typedef struct sender {
  mp_request *r; /* NULL once cut loose */
  uv_loop_t *loop;
  int phase;
  bool busy;     /* a pool job is in flight */
  bool stalled;  /* the client took nothing for --write-timeout */

  /* Set on the loop before the look-up. */
  bool confine;  /* name is a URL path under root (else a path to open) */
  bool resolve_root; /* root is as the caller gave it, not resolved yet */
  bool dotfiles;
  bool redirect; /* a directory without its slash gets a 301 */
  bool want_gzip;
  bool want_br;
  bool vary;
  char root[PATH_MAX];
  char name[PATH_MAX]; /* decoded */
  size_t nlen;
  char index[NAME_MAX + 1]; /* "" for none */
  char cache_control[CACHE_CONTROL_MAX];

  /* Set by the look-up. */
  int found;
  int err; /* errno of a failed open, for the log */
  uv_file fd;
  uint64_t size;
  int64_t mtime;
  int encoding;
  bool indexed; /* the index file of the directory named */
  char *data;   /* a small file's bytes (SMALL_FILE), or NULL */

  /* The body. */
  int sock; /* our descriptor of the client's socket, or -1 */
  uv_poll_t poll;
  bool poll_open;
  uv_work_t work;
  uv_fs_t fs;
  size_t asked; /* bytes the sendfile in flight was asked for */
  mp_buf mem;   /* multipart part heads and the closing boundary */
  part parts[2 * MAX_RANGES + 1];
  unsigned nparts, next;
} sender;

/* ---- Mounts ---- */

mp_static *mp_static_new(void) { return calloc(1, sizeof(mp_static)); }

static void free_mount(mount *m) {
  free(m->prefix);
  free(m->root);
  free(m->cache_control);
  free(m->index);
}

void mp_static_free(mp_static *st) {
  if (st == NULL) return;
  for (unsigned i = 0; i < st->n; i++) free_mount(&st->mounts[i]);
  free(st->mounts);
  free(st);
}

unsigned mp_static_count(const mp_static *st) { return st ? st->n : 0; }

static char *copy(const char *s) { return s ? strdup(s) : NULL; }

int mp_static_add(mp_static *st, const char *prefix, const char *root,
                  const mp_static_opts *opts, char *err, size_t errlen) {
  char real[PATH_MAX];
  struct stat sb;
  mount m = {0};
  if (prefix[0] != '/') {
    snprintf(err, errlen, "prefix %s must start with '/'", prefix);
    return MP_INVALID;
  }
  if (opts->cache_control != NULL &&
      (strlen(opts->cache_control) >= CACHE_CONTROL_MAX ||
       !mp_http1_valid_value(opts->cache_control,
                             strlen(opts->cache_control)))) {
    snprintf(err, errlen, "cache_control is too long or not a field value");
    return MP_INVALID;
  }
  if (opts->index != NULL &&
      (opts->index[0] == '\0' || strlen(opts->index) > NAME_MAX ||
       strchr(opts->index, '/') != NULL)) {
    snprintf(err, errlen, "index must be a file name");
    return MP_INVALID;
  }
  if (realpath(root, real) == NULL || stat(real, &sb) != 0 ||
      !S_ISDIR(sb.st_mode)) {
    snprintf(err, errlen, "root %s is not a directory", root);
    return MP_INVALID;
  }
  size_t plen = strlen(prefix);
  while (plen > 0 && prefix[plen - 1] == '/') plen--;
  m.prefix = strndup(prefix, plen);
  m.plen = plen;
  m.root = strdup(real);
  m.cache_control = copy(opts->cache_control);
  m.index = copy(opts->index);
  m.dotfiles = opts->dotfiles;
  m.precompressed = opts->precompressed;
  mount *grown = realloc(st->mounts, (st->n + 1) * sizeof *grown);
  if (m.prefix == NULL || m.root == NULL || grown == NULL ||
      (opts->cache_control && m.cache_control == NULL) ||
      (opts->index && m.index == NULL))
    goto err;
  st->mounts = grown;
  st->mounts[st->n++] = m;
  return 0;

err:
  if (grown != NULL) st->mounts = grown;
  free_mount(&m);
  snprintf(err, errlen, "out of memory");
  return MP_NOMEM;
}

/* The mount whose prefix is the longest that path lies under, or NULL. */
static const mount *find_mount(const mp_static *st, const char *path,
                               size_t plen) {
  const mount *best = NULL;
  for (unsigned i = 0; i < st->n; i++) {
    const mount *m = &st->mounts[i];
    if (m->plen > plen || memcmp(path, m->prefix, m->plen) != 0) continue;
    if (m->plen < plen && path[m->plen] != '/') continue;
    if (best == NULL || m->plen > best->plen) best = m;
  }
  return best;
}

/* ---- Names ---- */

static int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Whether a decoded name has a segment no served file may have: ".",
 * "..", or one starting with '.' when dotfiles are off. */
static bool bad_segment(const char *name, size_t n, bool dotfiles) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && name[j] != '/') j++;
    size_t len = j - i;
    if (len > 0 && name[i] == '.') {
      if (len == 1 || (len == 2 && name[i + 1] == '.')) return true;
      if (!dotfiles) return true;
    }
    i = j + 1;
  }
  return false;
}

/* Percent-decodes the URL path p into out (cap bytes). Returns its
 * length, or MP_DECLINED for a name no file may have (a NUL, a
 * backslash, a bad segment), MP_INVALID when it does not fit. */
static int decode_name(const char *p, size_t n, bool dotfiles, char *out,
                       size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c == '%' && i + 2 < n && hex(p[i + 1]) >= 0 && hex(p[i + 2]) >= 0) {
      c = (char)(hex(p[i + 1]) * 16 + hex(p[i + 2]));
      i += 2;
    }
    if (c == '\0' || c == '\\') return MP_DECLINED;
    if (k + 1 >= cap) return MP_INVALID;
    out[k++] = c;
  }
  out[k] = '\0';
  if (bad_segment(out, k, dotfiles)) return MP_DECLINED;
  return (int)k;
}

/* ---- The look-up, on a pool thread ---- */

/* Whether real lies inside root (both resolved) on a component boundary:
 * "/srv/files" does not hold "/srv/files-secret/x"; "/" holds all. */
static bool inside(const char *root, const char *real) {
  size_t n = strlen(root);
  if (n == 1) return real[0] == '/';
  return strncmp(real, root, n) == 0 && (real[n] == '/' || real[n] == '\0');
}

/* Resolves name under f->root into real: FOUND with st filled, or
 * NOT_FOUND, OUTSIDE. */
static int resolve(sender *f, const char *name, char *real, struct stat *st) {
  char joined[PATH_MAX];
  int n = snprintf(joined, sizeof joined, "%s/%s", f->root, name);
  if (n < 0 || (size_t)n >= sizeof joined) return NOT_FOUND;
  if (realpath(joined, real) == NULL) return NOT_FOUND;
  if (!inside(f->root, real)) return OUTSIDE;
  size_t rlen = strlen(f->root) == 1 ? 0 : strlen(f->root);
  if (bad_segment(real + rlen, strlen(real + rlen), f->dotfiles))
    return OUTSIDE;
  if (stat(real, st) != 0) return NOT_FOUND;
  return FOUND;
}

/* Opens path as a regular file: its descriptor with st filled, or -1. */
static int open_regular(const char *path, int flags, struct stat *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(fd);
    return -1;
  }
  return fd;
}

static void look_up(uv_work_t *w) {
  sender *f = w->data;
  char real[PATH_MAX];
  struct stat st;
  f->fd = -1;
  f->found = NOT_FOUND;
  if (!f->confine) {
    snprintf(real, sizeof real, "%s", f->name);
  } else {
    if (f->resolve_root) {
      char root[PATH_MAX];
      if (realpath(f->root, root) == NULL) return;
      memcpy(f->root, root, strlen(root) + 1);
    }
    int rc = resolve(f, f->name, real, &st);
    if (rc != FOUND) {
      f->found = rc;
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      bool slash = f->nlen > 0 && f->name[f->nlen - 1] == '/';
      if (!slash) {
        f->found = f->redirect ? DIRECTORY : NOT_FOUND;
        return;
      }
      if (f->index[0] == '\0') return;
      char name[PATH_MAX];
      if ((size_t)snprintf(name, sizeof name, "%s%s", f->name, f->index) >=
          sizeof name)
        return;
      rc = resolve(f, name, real, &st);
      if (rc != FOUND) {
        f->found = rc;
        return;
      }
      f->indexed = true;
    }
  }
  /* A compressed sibling, when the client takes it. */
  static const struct {
    int enc;
    const char *suffix;
  } siblings[] = {{ENC_BR, ".br"}, {ENC_GZIP, ".gz"}};
  for (size_t i = 0; i < 2; i++) {
    bool want = siblings[i].enc == ENC_BR ? f->want_br : f->want_gzip;
    char sib[PATH_MAX];
    if (!want || (size_t)snprintf(sib, sizeof sib, "%s%s", real,
                                  siblings[i].suffix) >= sizeof sib)
      continue;
    int fd = open_regular(sib, O_NOFOLLOW, &st);
    if (fd >= 0) {
      f->fd = fd;
      f->encoding = siblings[i].enc;
      break;
    }
  }
  if (f->fd < 0) {
    f->fd = open_regular(real, 0, &st);
    if (f->fd < 0) {
      f->err = errno;
      return;
    }
  }
  f->size = (uint64_t)st.st_size;
  f->mtime = (int64_t)st.st_mtim.tv_sec;
  f->found = FOUND;
  if (f->size == 0 || f->size > SMALL_FILE) return;
  /* Plain malloc: the core's counting allocator is the loop thread's. */
  char *data = malloc(f->size);
  size_t got = 0;
  while (data != NULL && got < f->size) {
    ssize_t n = pread(f->fd, data + got, f->size - got, (off_t)got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  if (got == f->size) {
    f->data = data;
  } else {
    free(data); /* sendfile will tell what went wrong */
  }
}

/* ---- The sender's life ---- */

static void on_poll_closed(uv_handle_t *h) {
  sender *f = h->data;
  if (f->sock >= 0) close(f->sock);
  free(f);
}

/* Frees f, now or once its job in flight returns (its callback sees
 * f->r NULL and comes back here). */
static void release(sender *f) {
  if (f->busy) return;
  if (f->fd >= 0) close(f->fd); /* a read-only file: close does not block */
  f->fd = -1;
  mp_buf_release(&f->mem);
  free(f->data);
  f->data = NULL;
  if (f->poll_open) {
    uv_close((uv_handle_t *)&f->poll, on_poll_closed);
    return;
  }
  if (f->sock >= 0) close(f->sock);
  free(f);
}

/* Cuts f and its request apart. */
static void cut_loose(sender *f) {
  if (f->r != NULL) f->r->file = NULL;
  f->r = NULL;
  if (f->phase == POLLING) uv_poll_stop(&f->poll);
  f->phase = OVER;
}

/* The request's sending is over (rc: 0 sent, or why not): a request the
 * core answers is done; a handler is resumed, with rc to read. */
static void end_request(mp_request *r, int rc) {
  if (r->core_answers) {
    mp_request_answered(r);
    return;
  }
  r->file_rc = rc;
  mp_wait_end_soon(r);
}

/* The body could not be sent whole: the connection ends with it. */
static void fail(sender *f) {
  mp_request *r = f->r;
  cut_loose(f);
  release(f);
  if (r->res != MP_RES_NEW) {
    r->res = MP_RES_DONE;
    r->keep_alive = false;
    if (r->conn != NULL) mp_conn_close_after_flush(r->conn);
  } else {
    mp_response_error(r, 500, "internal server error");
  }
  end_request(r, MP_CLOSED);
}

static void done(sender *f) {
  mp_request *r = f->r;
  cut_loose(f);
  release(f);
  if (r->res == MP_RES_STREAMING) {
    r->sent = r->declared; /* a HEAD or a 304 has no body to count */
    mp_response_finish(r);
  }
  end_request(r, 0);
}

static void on_stall(uv_timer_t *t) {
  mp_request *r = t->data;
  sender *f = r->file;
  if (f == NULL) return;
  mp_log(MP_LOG_WARN, "static file: the client took nothing for "
         "--write-timeout; response cut off");
  if (f->busy) { /* the job's callback ends it */
    f->stalled = true;
    return;
  }
  fail(f);
}

static void progress(sender *f) {
  mp_request *r = f->r;
  uv_timer_start(&r->timer, on_stall, r->srv->cfg->write_timeout_ms, 0);
}

static void pump(sender *f);

static void on_writable(uv_poll_t *h, int status, int events) {
  sender *f = h->data;
  (void)events;
  uv_poll_stop(h);
  if (f->r == NULL) return;
  f->phase = SENDING;
  if (status < 0)
    fail(f);
  else
    pump(f);
}

static void wait_writable(sender *f) {
  if (!f->poll_open) {
    if (uv_poll_init(f->loop, &f->poll, f->sock) != 0) {
      fail(f);
      return;
    }
    f->poll.data = f;
    f->poll_open = true;
  }
  if (uv_poll_start(&f->poll, UV_WRITABLE, on_writable) != 0) {
    fail(f);
    return;
  }
  f->phase = POLLING;
}

static void on_sent(uv_fs_t *req) {
  sender *f = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  f->busy = false;
  if (f->r == NULL) {
    release(f);
    return;
  }
  if (f->stalled || (n <= 0 && n != UV_EAGAIN)) {
    /* n == 0: the file shrank under us; n < 0: the client has gone. */
    fail(f);
    return;
  }
  if (n > 0) {
    part *p = &f->parts[f->next];
    p->off += (uint64_t)n;
    p->len -= (uint64_t)n;
    f->r->sent += n;
    if (p->len == 0) f->next++;
    progress(f);
    if ((size_t)n == f->asked) {
      pump(f);
      return;
    }
  }
  wait_writable(f); /* the socket's buffer is full */
}

/* Sends what is left, part by part, until it must wait. */
static void pump(sender *f) {
  mp_request *r = f->r;
  while (f->next < f->nparts) {
    mp_conn *c = r->conn;
    if (c == NULL) {
      fail(f);
      return;
    }
    part *p = &f->parts[f->next];
    if (p->kind == PART_MEM || f->data != NULL) {
      const char *from = p->kind == PART_MEM ? f->mem.data : f->data;
      if (mp_buf_append(mp_conn_out(c), from + p->off, p->len) != 0) {
        fail(f);
        return;
      }
      r->sent += (int64_t)p->len;
      f->next++;
      continue;
    }
    /* A file part goes out once everything before it has. A flush that
     * fails closes the connection, which cuts f loose and frees it. */
    if (mp_conn_unsent(c) > 0) {
      mp_conn_flush(c);
      if (r->file != f) return;
    }
    if (mp_conn_unsent(c) > 0) {
      f->phase = WAIT_OUT;
      return;
    }
    if (f->sock < 0) {
      f->sock = mp_conn_socket_dup(c);
      if (f->sock < 0) {
        fail(f);
        return;
      }
    }
    f->asked = p->len < SEND_CHUNK ? (size_t)p->len : SEND_CHUNK;
    f->fs.data = f;
    int rc = uv_fs_sendfile(f->loop, &f->fs, f->sock, f->fd, (int64_t)p->off,
                            f->asked, on_sent);
    if (rc != 0) {
      fail(f);
      return;
    }
    f->busy = true;
    f->phase = SENDING;
    return;
  }
  if (r->conn != NULL) {
    mp_conn_flush(r->conn);
    if (r->file != f) return;
  }
  done(f);
}

/* ---- The request's wait ---- */

static bool out_empty(const mp_request *r) {
  const sender *f = r->file;
  return f != NULL && f->phase == WAIT_OUT &&
         (r->conn == NULL || mp_conn_unsent(r->conn) == 0);
}

static void go_on(mp_request *r) {
  sender *f = r->file;
  if (f != NULL && f->phase == WAIT_OUT) {
    f->phase = SENDING;
    pump(f);
  }
}

/* Nobody reads what is left: stop. */
static bool gone(const mp_request *r) {
  (void)r;
  return true;
}

static void stop(mp_request *r) {
  sender *f = r->file;
  if (f == NULL) return;
  cut_loose(f);
  release(f);
}

static const mp_wait_ops sending = {
    .name = "file",
    .ready = out_empty,
    .client_gone = gone,
    .cleanup = stop,
    .resume = go_on,
};

/* ---- The answer ---- */

/* The value of r's header field called name, or NULL. */
static const char *header(const mp_request *r, const char *name, size_t *len) {
  size_t nlen = strlen(name);
  for (unsigned i = 0; i < r->msg.nfields; i++) {
    const mp_hfield *h = &r->msg.fields[i];
    if (h->name.len == nlen && mp_str_ieq(r->head + h->name.off, name, nlen)) {
      *len = h->value.len;
      return r->head + h->value.off;
    }
  }
  return NULL;
}

static int add(mp_request *r, const char *name, const char *value, size_t n) {
  return mp_response_header(r, name, strlen(name), value, n);
}

/* 301 to the directory's name with its slash, the query kept. */
static void redirect(mp_request *r) {
  size_t plen;
  const char *path = mp_request_path(r, &plen);
  const mp_span *q = &r->msg.query;
  char line[PATH_MAX + 64];
  int n = snprintf(line, sizeof line, "Location: %.*s/%s%.*s\r\n", (int)plen,
                   path, q->len ? "?" : "", (int)q->len, r->head + q->off);
  if (n < 0 || (size_t)n >= sizeof line) {
    mp_response_error(r, 404, "not found");
    return;
  }
  mp_response_error_with(r, 301, "moved permanently", line, (size_t)n);
}

/* Lays out a multipart/byteranges body; returns its length, or -1. */
static int64_t multipart(sender *f, const mp_h1file_range *rg, int n,
                         const char *type) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "%s--" BOUNDARY "\r\nContent-Type: %s\r\n"
                      "Content-Range: bytes %llu-%llu/%llu\r\n\r\n",
                      i ? "\r\n" : "", type, (unsigned long long)rg[i].first,
                      (unsigned long long)(rg[i].first + rg[i].len - 1),
                      (unsigned long long)f->size);
    f->parts[f->nparts++] = (part){PART_MEM, f->mem.len, (uint64_t)hn};
    if (mp_buf_append(&f->mem, head, (size_t)hn) != 0) return -1;
    f->parts[f->nparts++] = (part){PART_FILE, rg[i].first, rg[i].len};
    total += hn + (int64_t)rg[i].len;
  }
  static const char end[] = "\r\n--" BOUNDARY "--\r\n";
  f->parts[f->nparts++] = (part){PART_MEM, f->mem.len, sizeof end - 1};
  if (mp_buf_append(&f->mem, end, sizeof end - 1) != 0) return -1;
  return total + (int64_t)(sizeof end - 1);
}

/* The file is open: decides the status, writes the head and starts the
 * body. */
static void respond(sender *f) {
  mp_request *r = f->r;
  char etag[MP_H1FILE_ETAG_MAX], date[40];
  size_t elen = mp_h1file_etag(etag, f->mtime, f->size);
  size_t dlen = mp_h1file_date(date, (time_t)f->mtime);
  const char *type = f->indexed ? mp_h1file_type(f->index, strlen(f->index))
                                : mp_h1file_type(f->name, f->nlen);
  /* A handler's own status (a mock's stub) gets the file as its body,
   * nothing conditional. */
  bool plain = r->status != 200;
  int status = 200;
  mp_h1file_range rg[MAX_RANGES];
  int nranges = 0;
  size_t n;
  const char *v;
  if (!plain) {
    if ((v = header(r, "If-None-Match", &n)) != NULL) {
      if (mp_h1file_none_match(v, n, etag, elen)) status = 304;
    } else if ((v = header(r, "If-Modified-Since", &n)) != NULL) {
      time_t since;
      if (mp_h1file_parse_date(v, n, &since) && f->mtime <= since)
        status = 304;
    }
    size_t iflen = 0;
    const char *ifr = header(r, "If-Range", &iflen);
    if (status == 200 && r->msg.method == HTTP_GET &&
        (v = header(r, "Range", &n)) != NULL &&
        (ifr == NULL || mp_h1file_if_range(ifr, iflen, etag, elen,
                                           (time_t)f->mtime))) {
      nranges = mp_h1file_ranges(v, n, f->size, rg, MAX_RANGES);
      if (nranges == MP_H1FILE_RANGE_UNSATISFIABLE) {
        char line[80];
        int ln = snprintf(line, sizeof line, "Content-Range: bytes */%llu\r\n",
                          (unsigned long long)f->size);
        mp_response_error_with(r, 416, "range not satisfiable", line,
                               (size_t)ln);
        f->nparts = 0;
        done(f);
        return;
      }
      if (nranges > 0) status = 206;
    }
  }
  int rc = 0;
  if (!plain) {
    rc = add(r, "ETag", etag, elen);
    if (rc == 0) rc = add(r, "Last-Modified", date, dlen);
    if (rc == 0 && status != 304) rc = add(r, "Accept-Ranges", "bytes", 5);
  }
  if (rc == 0 && f->cache_control[0])
    rc = add(r, "Cache-Control", f->cache_control, strlen(f->cache_control));
  if (rc == 0 && f->vary) rc = add(r, "Vary", "Accept-Encoding", 15);
  if (rc == 0 && f->encoding != ENC_NONE && status != 304)
    rc = add(r, "Content-Encoding", f->encoding == ENC_BR ? "br" : "gzip",
             f->encoding == ENC_BR ? 2 : 4);
  int64_t length = (int64_t)f->size;
  const char *content_type = status == 304 ? NULL : type;
  f->nparts = 0;
  if (status == 206 && nranges == 1) {
    char cr[100];
    int cn = snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu",
                      (unsigned long long)rg[0].first,
                      (unsigned long long)(rg[0].first + rg[0].len - 1),
                      (unsigned long long)f->size);
    if (rc == 0) rc = add(r, "Content-Range", cr, (size_t)cn);
    f->parts[f->nparts++] = (part){PART_FILE, rg[0].first, rg[0].len};
    length = (int64_t)rg[0].len;
  } else if (status == 206) {
    static const char mtype[] = "multipart/byteranges; boundary=" BOUNDARY;
    length = multipart(f, rg, nranges, type);
    if (rc == 0 && length < 0) rc = MP_NOMEM;
    if (rc == 0) rc = add(r, "Content-Type", mtype, sizeof mtype - 1);
  } else if (status == 200 && f->size > 0) {
    f->parts[f->nparts++] = (part){PART_FILE, 0, f->size};
  }
  if (status == 304) length = 0;
  if (rc == 0 && status != 200) rc = mp_response_status(r, status);
  if (rc != 0) {
    fail(f);
    return;
  }
  rc = mp_response_head(r, content_type, length);
  if (rc != 0) {
    fail(f);
    return;
  }
  if (r->head_only || status == 304) f->nparts = 0;
  f->phase = SENDING;
  progress(f);
  pump(f);
}

static void looked_up(uv_work_t *w, int status) {
  sender *f = w->data;
  f->busy = false;
  mp_request *r = f->r;
  if (r == NULL || status != 0) {
    if (r != NULL) fail(f);
    else release(f);
    return;
  }
  switch (f->found) {
  case FOUND:
    respond(f);
    return;
  case DIRECTORY:
    redirect(r);
    done(f);
    return;
  default: {
    int rc = f->found == OUTSIDE ? MP_DECLINED : MP_NOT_FOUND;
    cut_loose(f);
    release(f);
    if (r->core_answers) {
      mp_request_route(r);
    } else {
      r->file_rc = rc;
      mp_wait_end_soon(r);
    }
  }
  }
}

/* ---- Starting ---- */

static sender *new_sender(mp_request *r) {
  sender *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->found = NOT_FOUND;
  f->fd = -1;
  f->sock = -1;
  f->loop = r->srv->loop;
  f->phase = LOOKING_UP;
  return f;
}

/* Which codings of a sibling the request takes: none for a Range request
 * (its ranges are of the file as it is). */
static void encodings(sender *f, const mp_request *r) {
  size_t n, rn;
  if (header(r, "Range", &rn) != NULL) return;
  const char *ae = header(r, "Accept-Encoding", &n);
  if (ae == NULL) return;
  f->want_br = mp_h1file_accepts(ae, n, "br");
  f->want_gzip = mp_h1file_accepts(ae, n, "gzip");
}

/* Queues f's look-up and makes r wait on it. Returns MP_AGAIN or a
 * negative code (f freed). */
static int start(sender *f, mp_request *r) {
  f->work.data = f;
  int rc = uv_queue_work(f->loop, &f->work, look_up, looked_up);
  if (rc != 0) {
    free(f);
    return rc;
  }
  f->busy = true;
  f->r = r;
  r->file = f;
  r->wait = &sending;
  return MP_AGAIN;
}

int mp_static_serve(mp_server *s, mp_request *r) {
  const mp_static *st = s->files;
  if (r->msg.method != HTTP_GET && r->msg.method != HTTP_HEAD)
    return MP_DECLINED;
  size_t plen;
  const char *path = mp_request_path(r, &plen);
  const mount *m = find_mount(st, path, plen);
  if (m == NULL) return MP_DECLINED;
  sender *f = new_sender(r);
  if (f == NULL) {
    mp_response_error(r, 500, "out of memory");
    return 0;
  }
  int n = decode_name(path + m->plen, plen - m->plen, m->dotfiles, f->name,
                      sizeof f->name);
  if (n < 0) {
    free(f);
    return MP_DECLINED;
  }
  f->nlen = (size_t)n;
  f->confine = true;
  f->dotfiles = m->dotfiles;
  f->redirect = true;
  f->vary = m->precompressed;
  memcpy(f->root, m->root, strlen(m->root) + 1);
  if (m->index != NULL) memcpy(f->index, m->index, strlen(m->index) + 1);
  if (m->cache_control != NULL)
    memcpy(f->cache_control, m->cache_control, strlen(m->cache_control) + 1);
  if (m->precompressed) encodings(f, r);
  r->core_answers = true;
  r->running = true;
  int rc = start(f, r);
  if (rc != MP_AGAIN) {
    r->core_answers = r->running = false;
    mp_response_error(r, 500, "cannot queue the file's look-up");
    return 0;
  }
  return MP_AGAIN;
}

int mp_static_send_file(mp_request *r, const char *root, const char *name,
                        size_t nlen, const char *cache_control, int flags) {
  if (r->res != MP_RES_NEW || r->conn == NULL || !r->running ||
      r->wait != NULL || mp_request_waiter(r) != r)
    return MP_STATE;
  if (cache_control != NULL &&
      (strlen(cache_control) >= CACHE_CONTROL_MAX ||
       !mp_http1_valid_value(cache_control, strlen(cache_control))))
    return MP_INVALID;
  sender *f = new_sender(r);
  if (f == NULL) return MP_NOMEM;
  bool dotfiles = (flags & MP_FILE_DOTFILES) != 0;
  int n;
  if (root != NULL) {
    n = decode_name(name, nlen, dotfiles, f->name, sizeof f->name);
    /* A name under root comes from a request: one too long for a path
     * names no file, as a bad one does. */
    if (n == MP_INVALID) n = MP_DECLINED;
    if (n >= 0 && strlen(root) >= sizeof f->root) n = MP_INVALID;
    if (n >= 0) memcpy(f->root, root, strlen(root) + 1);
    f->resolve_root = true;
  } else {
    n = nlen < sizeof f->name && memchr(name, '\0', nlen) == NULL
            ? (int)nlen : MP_INVALID;
    if (n >= 0) {
      memcpy(f->name, name, nlen);
      f->name[nlen] = '\0';
    }
  }
  if (n < 0) {
    free(f);
    return n;
  }
  f->nlen = (size_t)n;
  f->confine = root != NULL;
  f->dotfiles = dotfiles;
  if (flags & MP_FILE_INDEX) memcpy(f->index, "index.html", 11);
  if (cache_control != NULL)
    memcpy(f->cache_control, cache_control, strlen(cache_control) + 1);
  f->vary = (flags & MP_FILE_PRECOMPRESSED) != 0;
  if (f->vary) encodings(f, r);
  r->file_rc = 0;
  return start(f, r);
}

int mp_static_result(const mp_request *r) { return r->file_rc; }
