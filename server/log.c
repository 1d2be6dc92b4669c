/*
 * The error log. Each line is formatted into one stack buffer and written
 * with a single write(2), so lines from a later multi-process server do not
 * interleave mid-line. Messages longer than the buffer are cut.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static const char *const level_names[] = {"error", "warn", "info"};

void mp_log(mp_log_level level, const char *fmt, ...) {
  char line[8192];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);
  int k = snprintf(line + n, sizeof line - n, "[%s] ", level_names[level]);
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
    ssize_t w = write(STDERR_FILENO, p, n);
    if (w <= 0) break;
    p += w;
    n -= (size_t)w;
  }
}
