/*
 * The C side of the narrow door between handlers and the core: plain C
 * functions that lua/moonport/core.lua calls through the LuaJIT FFI (its
 * ffi.cdef repeats these declarations; keep the two in step).
 *
 * Every function names its request by a context (the req or res number a
 * handler holds, see request.h): mp_req_* take a req, mp_res_* a res. Each
 * returns an int: a length or 0 on success, or a negative code from
 * errors.h (MP_BAD_CONTEXT when the request has finished or the context is
 * not the right one). None raises, none calls back into Lua,
 * none keeps a pointer it was given. Strings come back as a pointer and a
 * length that stay valid only until the next call: into the request's head
 * (slices), or into the worker's scratch buffer (decoded values).
 */
#ifndef MP_LUA_FFI_H
#define MP_LUA_FFI_H

#include <stddef.h>
#include <stdint.h>

int mp_req_method(uint64_t ctx, const char **out);
/* which: 0 path, 1 query string (without '?'), 2 whole target. */
int mp_req_target(uint64_t ctx, int which, const char **out);
/* The named header (case-insensitive); repeated fields joined by ", ".
 * MP_NOT_FOUND when absent. */
int mp_req_header(uint64_t ctx, const char *name, size_t nlen,
                  const char **out);
int mp_req_header_count(uint64_t ctx);
/* Field i (0-based): the name and its length through name/nlen, the value
 * as the result. */
int mp_req_header_at(uint64_t ctx, int i, const char **name,
                     int32_t *nlen, const char **value);
/* The first query parameter called name, percent-decoded with '+' as a
 * space; MP_NOT_FOUND when absent. */
int mp_req_query(uint64_t ctx, const char *name, size_t nlen,
                 const char **out);
int mp_req_param_count(uint64_t ctx);
/* Path parameter i: its name (NUL-terminated) and decoded value. */
int mp_req_param_at(uint64_t ctx, int i, const char **name,
                    const char **value);
/* The next body bytes (their length), 0 at the end of the body,
 * MP_CLOSED when the client left before sending the rest, or MP_AGAIN:
 * the caller must yield, and try again when resumed. */
int mp_req_read(uint64_t ctx, const char **out);
/* 1 once the handler has been told that its client left (its on_abort
 * functions have run), else 0. */
int mp_req_abort_told(uint64_t ctx);
int mp_req_remote_addr(uint64_t ctx, const char **out);
/* The trailer fields kept so far, as "name: value\n" lines. */
int mp_req_trailers(uint64_t ctx, const char **out);

int mp_res_status(uint64_t ctx, int status);
int mp_res_reason(uint64_t ctx, const char *text, size_t len);
int mp_res_header(uint64_t ctx, const char *name, size_t nlen,
                  const char *value, size_t vlen);
/* json: 1 for application/json, 0 for text/plain, when none was set. */
int mp_res_send(uint64_t ctx, const char *body, size_t len,
                int json);
/* Returns MP_AGAIN when the connection holds more than --write-high-water
 * unsent: the data is queued, and the caller must yield until the core
 * resumes it. MP_CLOSED once the client has gone. */
int mp_res_write(uint64_t ctx, const char *data, size_t len);
int mp_res_finish(uint64_t ctx);
/* kind: MP_FAULT_* (request.h). */
int mp_res_fault(uint64_t ctx, int kind);

/* Suspends the running handler for ms milliseconds (capped at 2^53); the
 * caller must yield right after a 0 return. MP_BAD_CONTEXT outside a
 * handler, MP_INVALID for a negative or NaN ms. */
int mp_sleep(double ms);

/* The app loaded the file at path: a worker tells the master, which
 * watches it for reloads. Nothing outside a serving worker. */
void mp_lua_file_loaded(const char *path, size_t len);

/* Regular expressions (PCRE2) for the mock library: compiled to match a
 * whole subject (with MP_REGEX_PARTIAL, for mp_regex_prefix only). NULL
 * with a message in err when the pattern is bad. */
enum { MP_REGEX_CASELESS = 1, MP_REGEX_PARTIAL = 2 };
void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen);
/* 1 when re matches all of subject, 0 when not, 2 when the match was given
 * up at PCRE2's match, depth or heap limit (neither a match nor a
 * mismatch), MP_INVALID on another error. */
int mp_regex_match(void *re, const char *subject, size_t len);
/* The length of the longest start of subject that re (compiled with
 * MP_REGEX_PARTIAL) matches or could match were more to follow: how near
 * subject came. MP_INVALID when a match hit a limit or failed. */
int mp_regex_prefix(void *re, const char *subject, size_t len);
void mp_regex_free(void *re);

/* The entries of a directory (not "." and ".."), each as a type byte ('d'
 * for a directory, 'f' otherwise), the name and a NUL, in the scratch
 * buffer (*out, *len). Returns how many, or a negative errno. */
int mp_dir_list(const char *path, const char **out, size_t *len);

/* Resolves name (nlen bytes) inside the directory root: joined to it, then
 * every ".." and symbolic link followed (realpath). Returns the length of
 * the resolved path, written with a NUL into out (cap bytes), and the
 * file's size in *size, when it is a regular file inside root (itself
 * resolved), on a path-component boundary. Otherwise MP_DECLINED when the
 * name or a link in it leads outside root (a name whose ".." parts climb
 * out is refused before the file system is asked), MP_NOT_FOUND when
 * there is no such regular file (or no root), MP_INVALID for a name with
 * a NUL byte or a path too long. Opens nothing. */
int mp_file_confine(const char *root, const char *name, size_t nlen,
                    char *out, size_t cap, double *size);

/* The mock settings from the command line. */
typedef struct mp_mock_config {
  const char *dir;         /* --mock DIR, or NULL */
  const char *listen_host; /* the host of --listen */
  const char *admin_hosts; /* --admin-host (comma-separated), or NULL */
  int cors;                /* not --no-cors */
  int admin_cors;          /* --admin-cors */
  int journal_size;        /* --journal-size */
} mp_mock_config;

/* Fills *out. Returns 0. */
int mp_mock_settings(mp_mock_config *out);

/* The wall-clock time in seconds since the epoch, to the microsecond. */
double mp_clock_wall(void);

/* Writes msg to the error log at level (0 error, 1 warn, 2 info). */
void mp_lua_log(int level, const char *msg, size_t len);

/* moonport.shared and the mock's stores, which every worker sees
 * (shared.h). `store` is an MP_STORE_* index (worker.h); another gives
 * MP_INVALID. Types: 0 nil (absent), 1 string, 2 number, 3 boolean (num
 * 0 or 1). */

/* The value's type (0 when absent or expired), with the number in *num or
 * the string in *str and *len (in the scratch buffer). */
int mp_store_get(int store, const char *key, size_t klen, double *num,
                 const char **str, size_t *len);
/* Stores a value with ttl seconds to live (0: no expiry); add: only when
 * absent. Returns 0, 1 when other entries were evicted to make room,
 * MP_DECLINED (add: present), MP_NOMEM (larger than the store, or no room
 * in a store that never evicts) or MP_INVALID. */
int mp_store_set(int store, const char *key, size_t klen, int type,
                 double num, const char *str, size_t len, double ttl,
                 int add);
/* Adds by to a number (an absent key starts at init, with ttl). Returns
 * 0 or 1 (evicted) with the sum in *result, or MP_INVALID when the value
 * is not a number, or MP_NOMEM. */
int mp_store_incr(int store, const char *key, size_t klen, double by,
                  double init, double ttl, double *result);
int mp_store_delete(int store, const char *key, size_t klen);
/* Seconds left in *ttl (0: no expiry). Returns 0 or MP_NOT_FOUND. */
int mp_store_ttl(int store, const char *key, size_t klen, double *ttl);
/* Up to max live keys (0: all), packed as 4-byte length and bytes in the
 * scratch buffer (*out, *len). Returns how many, or MP_NOMEM. */
int mp_store_keys(int store, unsigned max, const char **out, size_t *len);
/* Removes every entry. Returns 0 or MP_INVALID. */
int mp_store_flush(int store);

#endif
