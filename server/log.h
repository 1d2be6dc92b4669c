/*
 * The logs. The error log: one line per event on stderr, with a UTC
 * timestamp and a level. The access log: one line per request, queued in a
 * fixed buffer and written in batches. Neither allocates nor runs Lua.
 */
#ifndef MP_LOG_H
#define MP_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MP_LOG_ERROR, MP_LOG_WARN, MP_LOG_INFO } mp_log_level;

/* Writes one line (a newline is added). Safe to call from any file. */
void mp_log(mp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- The access log ---- */

/* Opens the access log: a path (appended to) or "-" for stdout. Returns 0
 * or a negative errno-style code. */
int mp_access_log_open(const char *path);

/* True when an access log is open. */
int mp_access_log_enabled(void);

/* Queues one line: Common Log Format ("host - - [time] \"request\"
 * status bytes"), then the seconds the request took and its Lua and C
 * bytes. request is the request line without its CRLF, or "-". Lines are
 * written in batches (mp_access_log_flush). */
void mp_access_log(const char *host, const char *request, size_t reqlen,
                   int status, uint64_t bytes, double seconds,
                   uint64_t lua_bytes, uint64_t c_bytes);

/* Writes out what is queued. Called once per loop turn and at exit. */
void mp_access_log_flush(void);
void mp_access_log_close(void);

#endif
