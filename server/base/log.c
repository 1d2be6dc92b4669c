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

void mp_log(mp_log_level level, const char *fmt, ...) {
  char line[8192];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);
  int k = snprintf(line + n, sizeof line - n, "[%s] %s: ", level_names[level],
                   process_name);
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
static char access_stamp[80];

int mp_access_log_open(const char *path) {
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

/* Copies src into dst as nginx writes a quoted log field: '"', '\\',
 * control bytes and bytes from 0x7f up as \xHH, so the field stays one
 * quoted string whatever the request held. Stops before an escape that
 * would pass cap. Returns the bytes written. */
static size_t escape_field(char *dst, size_t cap, const char *src, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)src[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      if (o + 1 > cap) break;
      dst[o++] = (char)c;
    } else {
      if (o + 4 > cap) break;
      dst[o++] = '\\';
      dst[o++] = 'x';
      dst[o++] = hex[c >> 4];
      dst[o++] = hex[c & 15];
    }
  }
  return o;
}

void mp_access_log(const char *host, const char *request, size_t reqlen,
                   int status, uint64_t bytes, double seconds,
                   uint64_t lua_bytes, uint64_t c_bytes) {
  if (access_fd < 0) return;
  time_t now = time(NULL);
  if (now != access_sec) {
    struct tm tm;
    gmtime_r(&now, &tm);
    /* CLF wants English month names, like the Date header. */
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};
    snprintf(access_stamp, sizeof access_stamp,
             "%02d/%s/%04d:%02d:%02d:%02d +0000", tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
             tm.tm_sec);
    access_sec = now;
  }
  if (access_len + ACCESS_LINE_MAX > ACCESS_BUF) mp_access_log_flush();
  /* The line in three parts: up to the request's quote, the request, and
   * the figures after it, which always fit in the 256 bytes left. */
  char *p = access_buf + access_len;
  int n = snprintf(p, 256, "%s - - [%s] \"", host, access_stamp);
  if (n <= 0) return;
  size_t len = (size_t)n < 256 ? (size_t)n : 255;
  len += escape_field(p + len, ACCESS_LINE_MAX - 256 - len, request, reqlen);
  n = snprintf(p + len, 256, "\" %d %llu %.6f %llu %llu %u\n", status,
               (unsigned long long)bytes, seconds,
               (unsigned long long)lua_bytes, (unsigned long long)c_bytes,
               process_worker);
  if (n > 0 && n < 256) access_len += len + (size_t)n;
}

void mp_access_log_close(void) {
  mp_access_log_flush();
  if (access_fd > STDERR_FILENO) close(access_fd);
  access_fd = -1;
  access_path = NULL;
}
