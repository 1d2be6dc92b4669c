/*
 * The logs. The error log: one line per event, on stderr or in the file
 * --error-log names, with a UTC timestamp, a level and the process
 * ("master" or "worker N"). The access log: one line per request, queued in
 * a fixed buffer and written in batches. Neither allocates nor runs Lua.
 * Both files are opened with O_APPEND and written a line (or a batch of
 * whole lines) per write(2), so several processes can share them.
 */
#ifndef MP_LOG_H
#define MP_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MP_LOG_ERROR, MP_LOG_WARN, MP_LOG_INFO } mp_log_level;

/* Names this process in every error-log line ("master", "worker 3") and
 * in the access log (the worker id, 0 for none). */
void mp_log_set_process(const char *name, unsigned worker_id);

/* Sends the error log to path (appended to) instead of stderr. Returns 0
 * or a negative errno-style code. */
int mp_error_log_open(const char *path);

/* Opens both log files again under their names (after logrotate moved
 * them: SIGUSR1). A file that cannot be opened keeps its old descriptor,
 * and the failure is logged. */
void mp_log_reopen(void);

/* Writes one line (a newline is added). Safe to call from any file. */
void mp_log(mp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- The access log ---- */

/* The request id the error log's lines carry while a request's code runs
 * ("worker 1 request=ID: message"), or NULL for none. The string must
 * stay valid until the context is cleared. */
void mp_log_set_context(const char *request_id, size_t len);

/* The access log's line formats (--access-log-format). */
typedef enum {
  MP_ACCESS_MOONPORT = 0, /* Common Log Format, then seconds, Lua and C
                           * bytes, the worker, and the request id if any */
  MP_ACCESS_COMMON,       /* Common Log Format */
  MP_ACCESS_COMBINED,     /* and "referer" "user-agent" (nginx's combined) */
  MP_ACCESS_JSON          /* one JSON object per line */
} mp_access_format;

/* The format named name ("moonport", "common", "combined", "json"), or -1. */
int mp_access_format_named(const char *name);

/* Opens the access log: a path (appended to) or "-" for stdout, its lines
 * in format. Returns 0 or a negative errno-style code. */
int mp_access_log_open(const char *path, mp_access_format format);

/* True when an access log is open. */
int mp_access_log_enabled(void);

/* True when the open access log's lines carry the referer and the user
 * agent (combined, json): only then are they looked up. */
int mp_access_log_wants_agent(void);

/* What one access log line says. request is the request line without its
 * CRLF ("-" for none); method and target its parts (method NULL for
 * none); referer, agent and id may be NULL. */
typedef struct mp_access_entry {
  const char *host;
  const char *request;
  size_t request_len;
  const char *method;
  const char *target;
  size_t target_len;
  int status;
  uint64_t bytes;
  double seconds;
  uint64_t lua_bytes, c_bytes;
  const char *referer;
  size_t referer_len;
  const char *agent;
  size_t agent_len;
  const char *id;
  size_t id_len;
} mp_access_entry;

/* Queues one line in the log's format. In the text formats, quoted
 * fields have '"', '\\', control bytes and bytes from 0x7f up written
 * \xHH, as nginx does; in JSON, strings escape them as \u00XX. Every
 * field is cut to fit a line of 4 KiB. Lines are written in batches
 * (mp_access_log_flush). */
void mp_access_log(const mp_access_entry *e);

/* Writes out what is queued. Called once per loop turn and at exit. */
void mp_access_log_flush(void);
void mp_access_log_close(void);

#endif
