/*
 * The error log: one line per event on stderr, with a UTC timestamp and a
 * level. The log never allocates and never runs Lua.
 */
#ifndef MP_LOG_H
#define MP_LOG_H

typedef enum { MP_LOG_ERROR, MP_LOG_WARN, MP_LOG_INFO } mp_log_level;

/* Writes one line (a newline is added). Safe to call from any file. */
void mp_log(mp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
