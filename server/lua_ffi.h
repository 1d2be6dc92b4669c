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
/* The next body bytes (their length), 0 at the end of the body, or
 * MP_AGAIN: the caller must yield, and try again when resumed. */
int mp_req_read(uint64_t ctx, const char **out);
int mp_req_remote_addr(uint64_t ctx, const char **out);
/* The trailer fields kept so far, as "name: value\n" lines. */
int mp_req_trailers(uint64_t ctx, const char **out);

int mp_res_status(uint64_t ctx, int status);
int mp_res_header(uint64_t ctx, const char *name, size_t nlen,
                  const char *value, size_t vlen);
/* json: 1 for application/json, 0 for text/plain, when none was set. */
int mp_res_send(uint64_t ctx, const char *body, size_t len,
                int json);
/* Returns MP_AGAIN when the connection holds more than --write-high-water
 * unsent: the data is queued, and the caller must yield until the core
 * resumes it. */
int mp_res_write(uint64_t ctx, const char *data, size_t len);
int mp_res_finish(uint64_t ctx);

/* Suspends the running handler for ms milliseconds; the caller must yield
 * right after a 0 return. MP_BAD_CONTEXT outside a handler. */
int mp_sleep(double ms);

#endif
