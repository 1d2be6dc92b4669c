/*
 * moonport.log's door (see ../ffi.h): a line from Lua into the error log
 * (base/log.c), which adds the time, the level and the process.
 */
#include "ffi.h"

#include "log.h"

/* The longest message a line takes; the rest is cut. */
#define MAX_MESSAGE 4096

void mp_lua_log(int level, const char *msg, size_t len) {
  if (level < MP_LOG_ERROR || level > MP_LOG_INFO) level = MP_LOG_INFO;
  if (len > MAX_MESSAGE) len = MAX_MESSAGE;
  mp_log((mp_log_level)level, "%.*s", (int)len, msg);
}
