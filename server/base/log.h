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

/* Opens the access log: a path (appended to) or "-" for stdout. Returns 0
 * or a negative errno-style code. */
int mp_access_log_open(const char *path);

/* True when an access log is open. */
int mp_access_log_enabled(void);

/* Queues one line: Common Log Format ("host - - [time] \"request\"
 * status bytes"), then the seconds the request took, its Lua and C bytes
 * and the id of the worker that served it. request is the request line
 * without its CRLF, or "-"; in the line, '"', '\\', control bytes and
 * bytes from 0x7f up are written \xHH, as nginx does, and it is cut to
 * fit a line of 4 KiB. Lines are written in batches
 * (mp_access_log_flush). */
void mp_access_log(const char *host, const char *request, size_t reqlen,
                   int status, uint64_t bytes, double seconds,
                   uint64_t lua_bytes, uint64_t c_bytes);

/* Writes out what is queued. Called once per loop turn and at exit. */
void mp_access_log_flush(void);
void mp_access_log_close(void);

#endif
