/*
 * The logs (see log.h). An error-log line is formatted into one stack
 * buffer and written with a single write(2), so lines from several
 * processes do not interleave mid-line; longer messages are cut. Access-log
 * lines collect in a static buffer and go out in one write per loop turn
 * (or when the buffer fills): a blocking write per request would cost more
 * than the request. A batch is written in pieces of whole lines no longer
 * than PIPE_BUF, the most a pipe writes atomically, so workers sharing
 * stdout do not cut into each other's lines either.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const level_names[] = {"error", "warn", "info"};

static char process_name[32] = "moonport";
static unsigned process_worker;
static int error_fd = STDERR_FILENO;
static const char *error_path;

void mp_log_set_process(const char *name, unsigned worker_id) {
  snprintf(process_name, sizeof process_name, "%s", name);
  process_worker = worker_id;
}

static int open_append(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  return fd < 0 ? -errno : fd;
}

int mp_error_log_open(const char *path) {
  int fd = open_append(path);
  if (fd < 0) return fd;
  if (error_fd > STDERR_FILENO) close(error_fd);
  error_fd = fd;
  error_path = path;
  return 0;
}

static const char *context_id;
static size_t context_len;

void mp_log_set_context(const char *request_id, size_t len) {
  context_id = request_id;
  context_len = request_id != NULL ? len : 0;
}

void mp_log(mp_log_level level, const char *fmt, ...) {
  char line[8192];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);
  int k = context_id != NULL
              ? snprintf(line + n, sizeof line - n, "[%s] %s request=%.*s: ",
                         level_names[level], process_name, (int)context_len,
                         context_id)
              : snprintf(line + n, sizeof line - n, "[%s] %s: ",
                         level_names[level], process_name);
  if (k > 0) n += (size_t)k;

  va_list ap;
  va_start(ap, fmt);
  k = vsnprintf(line + n, sizeof line - n, fmt, ap);
  va_end(ap);
  if (k > 0) n += (size_t)k;
  if (n > sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';

  const char *p = line;
  while (n > 0) {
    ssize_t w = write(error_fd, p, n);
    if (w <= 0) break;
    p += w;
    n -= (size_t)w;
  }
}

/* ---- The access log ---- */

#define ACCESS_BUF (64 * 1024)
#define ACCESS_LINE_MAX 4096

static int access_fd = -1;
static const char *access_path;
static char access_buf[ACCESS_BUF];
static size_t access_len;
static time_t access_sec = (time_t)-1;
static char access_stamp[80]; /* 01/Dec/2026:15:40:00 +0000 */
static char access_iso[32];   /* 2026-12-01T15:40:00Z */
static mp_access_format access_format;

static const char *const format_names[] = {"moonport", "common", "combined",
                                           "json"};

int mp_access_format_named(const char *name) {
  for (int i = 0; i < 4; i++)
    if (strcmp(name, format_names[i]) == 0) return i;
  return -1;
}

int mp_access_log_open(const char *path, mp_access_format format) {
  access_format = format;
  if (strcmp(path, "-") == 0) {
    access_fd = STDOUT_FILENO;
    return 0;
  }
  int fd = open_append(path);
  if (fd < 0) return fd;
  access_fd = fd;
  access_path = path;
  return 0;
}

/* Opens path again and puts the new descriptor where *fd was. */
static void reopen(int *fd, const char *path, const char *what) {
  int nfd = open_append(path);
  if (nfd < 0) {
    mp_log(MP_LOG_ERROR, "reopening the %s '%s': %s", what, path,
           strerror(-nfd));
    return;
  }
  dup2(nfd, *fd);
  close(nfd);
}

void mp_log_reopen(void) {
  mp_access_log_flush();
  if (error_path != NULL) reopen(&error_fd, error_path, "error log");
  if (access_path != NULL) reopen(&access_fd, access_path, "access log");
}

int mp_access_log_enabled(void) { return access_fd >= 0; }

int mp_access_log_wants_agent(void) {
  return access_format == MP_ACCESS_COMBINED || access_format == MP_ACCESS_JSON;
}

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* a full disk must not stop the server */
    p += w;
    n -= (size_t)w;
  }
}

void mp_access_log_flush(void) {
  if (access_fd < 0 || access_len == 0) return;
  const char *p = access_buf;
  size_t left = access_len;
  while (left > 0) {
    size_t n = left;
    if (n > PIPE_BUF) {
      /* Lines are shorter than ACCESS_LINE_MAX, which may exceed PIPE_BUF:
       * a longer line goes out whole, alone. */
      n = PIPE_BUF;
      while (n > 0 && p[n - 1] != '\n') n--;
      if (n == 0) n = (size_t)((const char *)memchr(p, '\n', left) - p) + 1;
    }
    write_all(access_fd, p, n);
    p += n;
    left -= n;
  }
  access_len = 0;
}

/* Copies src into dst as a quoted field's contents: printable ASCII as
 * it is, and the rest escaped, so the field stays one string whatever the
 * request held. In a text format, as nginx writes them: '"', '\\',
 * control bytes and bytes from 0x7f up as \xHH. In JSON (json true): '"'
 * and '\\' behind a backslash, the others as \u00XX. Stops before an
 * escape that would pass cap. Returns the bytes written. */
static size_t escape_field(char *dst, size_t cap, const char *src, size_t n,
                           bool json) {
  static const char hex[] = "0123456789ABCDEF";
  static const char jhex[] = "0123456789abcdef";
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)src[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      if (o + 1 > cap) break;
      dst[o++] = (char)c;
    } else if (!json) {
      if (o + 4 > cap) break;
      dst[o++] = '\\';
      dst[o++] = 'x';
      dst[o++] = hex[c >> 4];
      dst[o++] = hex[c & 15];
    } else if (c == '"' || c == '\\') {
      if (o + 2 > cap) break;
      dst[o++] = '\\';
      dst[o++] = (char)c;
    } else {
      if (o + 6 > cap) break;
      memcpy(dst + o, "\\u00", 4);
      dst[o + 4] = jhex[c >> 4];
      dst[o + 5] = jhex[c & 15];
      o += 6;
    }
  }
  return o;
}

/* The stamps of this second, made once per second. */
static void stamp_now(void) {
  time_t now = time(NULL);
  if (now == access_sec) return;
  struct tm tm;
  gmtime_r(&now, &tm);
  /* CLF wants English month names, like the Date header. */
  static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                     "May", "Jun", "Jul", "Aug",
                                     "Sep", "Oct", "Nov", "Dec"};
  snprintf(access_stamp, sizeof access_stamp,
           "%02d/%s/%04d:%02d:%02d:%02d +0000", tm.tm_mday, months[tm.tm_mon],
           tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  strftime(access_iso, sizeof access_iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
  access_sec = now;
}

/* A line being written into the access buffer: where, its length, and
 * what is left of its ACCESS_LINE_MAX bytes. */
typedef struct line {
  char *p;
  size_t len;
} line;

static void put(line *l, const char *s, size_t n) {
  if (n > ACCESS_LINE_MAX - 1 - l->len) n = ACCESS_LINE_MAX - 1 - l->len;
  memcpy(l->p + l->len, s, n);
  l->len += n;
}

static void putf(line *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(line *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(l->p + l->len, ACCESS_LINE_MAX - 1 - l->len, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t room = ACCESS_LINE_MAX - 2 - l->len;
  l->len += (size_t)n < room ? (size_t)n : room;
}

/* A quoted field of a text format; at most max bytes of it, so that the
 * fields after it still fit. */
static void put_quoted(line *l, const char *s, size_t n, size_t max) {
  put(l, "\"", 1);
  if (s == NULL) {
    put(l, "-", 1);
  } else {
    size_t room = ACCESS_LINE_MAX - 1 - l->len;
    if (room > max) room = max;
    l->len += escape_field(l->p + l->len, room, s, n, false);
  }
  put(l, "\"", 1);
}

static void put_json(line *l, const char *key, const char *s, size_t n,
                     size_t max) {
  putf(l, ",\"%s\":", key);
  if (s == NULL) {
    put(l, "null", 4);
    return;
  }
  put(l, "\"", 1);
  size_t room = ACCESS_LINE_MAX - 1 - l->len;
  if (room > max) room = max;
  l->len += escape_field(l->p + l->len, room, s, n, true);
  put(l, "\"", 1);
}

void mp_access_log(const mp_access_entry *e) {
  if (access_fd < 0) return;
  stamp_now();
  if (access_len + ACCESS_LINE_MAX > ACCESS_BUF) mp_access_log_flush();
  line l = {access_buf + access_len, 0};
  /* Quoted fields are cut so the figures after them always fit. */
  if (access_format == MP_ACCESS_JSON) {
    putf(&l, "{\"time\":\"%s\",\"remote\":\"%s\"", access_iso, e->host);
    put_json(&l, "method", e->method, e->method ? strlen(e->method) : 0, 64);
    put_json(&l, "path", e->method ? e->target : NULL, e->target_len, 1600);
    putf(&l, ",\"status\":%d,\"bytes\":%llu,\"duration\":%.6f,"
             "\"lua_bytes\":%llu,\"c_bytes\":%llu,\"worker\":%u",
         e->status, (unsigned long long)e->bytes, e->seconds,
         (unsigned long long)e->lua_bytes, (unsigned long long)e->c_bytes,
         process_worker);
    put_json(&l, "request_id", e->id, e->id_len, 200);
    put_json(&l, "user_agent", e->agent, e->agent_len, 800);
    put_json(&l, "referer", e->referer, e->referer_len, 800);
    put(&l, "}", 1);
  } else {
    putf(&l, "%s - - [%s] ", e->host, access_stamp);
    put_quoted(&l, e->request, e->request_len,
               access_format == MP_ACCESS_COMBINED ? 2400 : 3700);
    putf(&l, " %d %llu", e->status, (unsigned long long)e->bytes);
    if (access_format == MP_ACCESS_COMBINED) {
      put(&l, " ", 1);
      put_quoted(&l, e->referer, e->referer_len, 700);
      put(&l, " ", 1);
      put_quoted(&l, e->agent, e->agent_len, 700);
    } else if (access_format == MP_ACCESS_MOONPORT) {
      putf(&l, " %.6f %llu %llu %u", e->seconds,
           (unsigned long long)e->lua_bytes, (unsigned long long)e->c_bytes,
           process_worker);
      if (e->id != NULL) putf(&l, " %.*s", (int)e->id_len, e->id);
    }
  }
  l.p[l.len++] = '\n';
  access_len += l.len;
}

void mp_access_log_close(void) {
  mp_access_log_flush();
  if (access_fd > STDERR_FILENO) close(access_fd);
  access_fd = -1;
  access_path = NULL;
}
