/*
 * The contract between Lua and the core: every C function that
 * lua/moonport/core/ calls through the LuaJIT FFI, and every number the two
 * sides share. This file is the one place to read it.
 *
 * Functions come in sections, one per Lua-facing API, each implemented in
 * server/lua/ffi/<api>.c and declared again, word for word, in the ffi.cdef
 * of the lua/moonport/core/ module that uses it (spec/unit/ffi_cdef_spec.lua
 * holds the two to the same types). The binary exports these functions and
 * nothing else: cmake/ffi_exports.cmake makes the export list from this
 * file.
 *
 * Constants (MP_FFI_CONSTANTS, and the return codes of errors.h) are
 * defined once, in C, in the header of the layer they belong to.
 * lua/moonport/core/base.lua declares them from the text
 * mp_ffi_constants() makes of their values, and Lua reads them as
 * C.MP_AGAIN, C.MP_FAULT_RESET, ...: no number is written on both sides.
 *
 * Every mp_req_* and mp_res_* function names its request by a handle (the
 * req or res number a handler holds; its layout is request.h's MP_CTX_*):
 * mp_req_* take a req, mp_res_* a res. Every function returns an int: a
 * length or 0 on success, or a negative code from errors.h (MP_BAD_CONTEXT
 * when the request has finished or the handle is not the right one), unless
 * its comment says otherwise. None raises, none calls back into Lua, none
 * keeps a pointer it was given. Strings come back as a pointer and a length
 * that stay valid only until the next call: into the request's head
 * (slices), or into the FFI's scratch buffer (ffi/scratch.h: decoded
 * values).
 */
#ifndef MP_LUA_FFI_H
#define MP_LUA_FFI_H

#include <stddef.h>
#include <stdint.h>

/* ---- The contract's constants (ffi/contract.c) ---- */

/* mp_req_target's `which`. */
enum { MP_TARGET_PATH = 0, MP_TARGET_QUERY = 1, MP_TARGET_WHOLE = 2 };

/* mp_phase's answers: what runs Lua now. */
enum { MP_PHASE_INIT = 0, MP_PHASE_CONTENT = 1, MP_PHASE_TIMER = 2 };

/* mp_regex_compile's flags, and what mp_regex_match answers. */
enum { MP_REGEX_CASELESS = 1, MP_REGEX_PARTIAL = 2 };
enum { MP_REGEX_NOMATCH = 0, MP_REGEX_MATCH = 1, MP_REGEX_LIMIT = 2 };

/* mp_re_compile's flags: OpenResty's ngx.re options i m s x a u D J, and
 * j (JIT-compile) and d (DFA matching: the longest match, no groups). */
enum {
  MP_RE_CASELESS = 1, MP_RE_MULTILINE = 2, MP_RE_DOTALL = 4,
  MP_RE_EXTENDED = 8, MP_RE_ANCHORED = 16, MP_RE_UTF = 32,
  MP_RE_DUPNAMES = 64, MP_RE_JAVASCRIPT = 128, MP_RE_JIT = 256,
  MP_RE_DFA = 512
};

/* mp_digest's algorithms, and the longest digest any of them makes. */
enum {
  MP_DIGEST_MD5 = 0, MP_DIGEST_SHA1 = 1, MP_DIGEST_SHA224 = 2,
  MP_DIGEST_SHA256 = 3, MP_DIGEST_SHA384 = 4, MP_DIGEST_SHA512 = 5,
  MP_DIGEST_MAX = 64
};

/* What mp_xpath_eval found: nodes, a number, or a string or boolean. */
enum { MP_XPATH_NODES = 0, MP_XPATH_NUMBER = 1, MP_XPATH_TEXT = 2 };

/* mp_base64_encode's and mp_base64_decode's flags. */
enum { MP_BASE64_NO_PADDING = 1, MP_BASE64_URL = 2 };

/* The constants Lua reads besides errors.h's return codes, each defined
 * where its layer needs it: the handle layout (request.h), fault kinds
 * (response.h), value types, stores and the longest key (shared.h), log
 * levels (log.h), receive patterns (socket.h) and socket options
 * (stream.h), the response parser's answers and field limit (h1resp.h),
 * res:send_file's flags (static.h), and this file's own. */
#define MP_FFI_CONSTANTS(XX)                                                \
  XX(MP_CTX_REQ) XX(MP_CTX_RES) XX(MP_CTX_TAG_BIT) XX(MP_CTX_GEN_SHIFT)     \
  XX(MP_CTX_GEN_BITS)                                                       \
  XX(MP_FAULT_RESET) XX(MP_FAULT_EMPTY) XX(MP_FAULT_MALFORMED_CHUNK)        \
  XX(MP_FAULT_RANDOM_DATA)                                                  \
  XX(MP_SHARED_NIL) XX(MP_SHARED_STRING) XX(MP_SHARED_NUMBER)               \
  XX(MP_SHARED_BOOLEAN) XX(MP_SHARED_KEY_MAX)                               \
  XX(MP_STORE_SHARED) XX(MP_STORE_MOCK) XX(MP_STORE_JOURNAL)                \
  XX(MP_LOG_ERROR) XX(MP_LOG_WARN) XX(MP_LOG_INFO)                          \
  XX(MP_TARGET_PATH) XX(MP_TARGET_QUERY) XX(MP_TARGET_WHOLE)                \
  XX(MP_REGEX_CASELESS) XX(MP_REGEX_PARTIAL) XX(MP_REGEX_NOMATCH)           \
  XX(MP_REGEX_MATCH) XX(MP_REGEX_LIMIT)                                     \
  XX(MP_PHASE_INIT) XX(MP_PHASE_CONTENT) XX(MP_PHASE_TIMER)                 \
  XX(MP_RECV_SIZE) XX(MP_RECV_LINE) XX(MP_RECV_ALL) XX(MP_RECV_ANY)         \
  XX(MP_RECV_UNTIL) XX(MP_STREAM_KEEPALIVE) XX(MP_STREAM_NODELAY)           \
  XX(MP_STREAM_SNDBUF) XX(MP_STREAM_RCVBUF)                                 \
  XX(MP_RE_CASELESS) XX(MP_RE_MULTILINE) XX(MP_RE_DOTALL)                   \
  XX(MP_RE_EXTENDED) XX(MP_RE_ANCHORED) XX(MP_RE_UTF) XX(MP_RE_DUPNAMES)    \
  XX(MP_RE_JAVASCRIPT) XX(MP_RE_JIT) XX(MP_RE_DFA)                          \
  XX(MP_DIGEST_MD5) XX(MP_DIGEST_SHA1) XX(MP_DIGEST_SHA224)                 \
  XX(MP_DIGEST_SHA256) XX(MP_DIGEST_SHA384) XX(MP_DIGEST_SHA512)            \
  XX(MP_DIGEST_MAX) XX(MP_BASE64_NO_PADDING) XX(MP_BASE64_URL)              \
  XX(MP_HTTPC_MORE) XX(MP_HTTPC_HEAD) XX(MP_HTTPC_BODY) XX(MP_HTTPC_DONE)   \
  XX(MP_HTTPC_ERROR) XX(MP_HTTPC_MAX_FIELDS)                                \
  XX(MP_FILE_INDEX) XX(MP_FILE_DOTFILES) XX(MP_FILE_PRECOMPRESSED)         \
  XX(MP_XPATH_NODES) XX(MP_XPATH_NUMBER) XX(MP_XPATH_TEXT)

/* Every return code of errors.h and every MP_FFI_CONSTANTS entry with its
 * value, as one C enum declaration ("enum { MP_AGAIN = -30001, ... };")
 * for ffi.cdef. The text is static. */
const char *mp_ffi_constants(void);

/* ---- req: the request (ffi/req.c) ---- */

int mp_req_method(uint64_t ctx, const char **out);
/* which: MP_TARGET_PATH, _QUERY (without '?') or _WHOLE. */
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
/* How many path parameters; MP_BAD_CONTEXT once the request's handler has
 * returned, as mp_req_running: Lua keeps the decoded table for the
 * handler. */
int mp_req_param_count(uint64_t ctx);
/* Path parameter i: its name (NUL-terminated) and decoded value. */
int mp_req_param_at(uint64_t ctx, int i, const char **name,
                    const char **value);
/* The next body bytes (their length), 0 at the end of the body,
 * MP_CLOSED when the client left before sending the rest, or MP_AGAIN:
 * the caller must yield, and try again when resumed. */
int mp_req_read(uint64_t ctx, const char **out);
/* 0 while the request's handler has not returned (it may be waiting);
 * MP_BAD_CONTEXT once it has, or the request is over. What Lua keeps for
 * a request (its body, params, ctx) lives no longer than its handler. */
int mp_req_running(uint64_t ctx);
/* 1 once the handler has been told that its client left (its on_abort
 * functions have run), else 0. */
int mp_req_abort_told(uint64_t ctx);
int mp_req_remote_addr(uint64_t ctx, const char **out);
/* The request's id (mp_request_id: the client's X-Request-Id when it is a
 * short token, else one made now and kept). */
int mp_req_id(uint64_t ctx, const char **out);
/* The trailer fields kept so far, as "name: value\n" lines. */
int mp_req_trailers(uint64_t ctx, const char **out);

/* ---- What runs now (ffi/current.c) ---- */

/* The req handle of the request whose code runs now (a light thread's is
 * the request that spawned it), or 0 when no request's code runs (the app
 * loading, a timer). A double: handles are integers below 2^53. */
double mp_req_current(void);
/* MP_PHASE_INIT while the app loads, MP_PHASE_CONTENT in a request's
 * handler and its light threads, MP_PHASE_TIMER in a timer. */
int mp_phase(void);

/* ---- res: the response (ffi/res.c) ---- */

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
/* kind: MP_FAULT_*. */
int mp_res_fault(uint64_t ctx, int kind);
/* The header lines the handler set ("Name: value\r\n" each, without
 * Content-Length) in *out: returns their length, or MP_STATE once the
 * head has gone out. Valid until the next mp_res_* call. */
int mp_res_headers(uint64_t ctx, const char **out);
/* Forgets the header fields and the reason phrase set so far (another
 * answer takes the response's place). Returns 0 or MP_STATE. */
int mp_res_reset(uint64_t ctx);

/* ---- Response compression (ffi/compress.c) ---- */

/* Registers a compression rule for this worker (server/req/compress.h):
 * types (comma-separated types or "type/" prefixes; NULL for the default
 * list), the least body length, level 1 to 9. Returns its number (1 up),
 * MP_INVALID, or MP_NOMEM past MP_COMPRESS_MAX_RULES rules. */
int mp_compress_rule_new(const char *types, double min_length, int level);
/* Compresses res's body by rule (a number from mp_compress_rule_new)
 * where the client accepts gzip. Returns 0, MP_STATE once its head has
 * gone out, MP_INVALID for a number out of range. */
int mp_res_compress(uint64_t ctx, int rule);

/* ---- res:send_file: a file as the response (ffi/static.c) ---- */

/* Sends a file as the response, by the core (handlers/static.h's
 * mp_static_send_file): with root (not NULL), name is a URL path confined
 * to root; without, name is the file's path. cache_control: a
 * Cache-Control value, or NULL. flags: MP_FILE_*. Returns MP_AGAIN: the
 * caller must yield until the core resumes it, then read
 * mp_res_file_result. Or at once MP_DECLINED (a name no file may have),
 * MP_STATE, MP_INVALID, MP_NOMEM. */
int mp_res_send_file(uint64_t ctx, const char *root, const char *name,
                     size_t nlen, const char *cache_control, int flags);
/* How the last mp_res_send_file ended: 0 (sent), MP_NOT_FOUND or
 * MP_DECLINED (nothing sent), MP_CLOSED (cut off). */
int mp_res_file_result(uint64_t ctx);

/* ---- moonport.sleep (ffi/sleep.c) ---- */

/* Suspends the running handler for ms milliseconds (capped at 2^53); the
 * caller must yield right after a 0 return. MP_BAD_CONTEXT outside a
 * handler, MP_INVALID for a negative or NaN ms. */
int mp_sleep(double ms);

/* ---- moonport.socket (ffi/socket.c) ---- */

/* Outbound TCP and Unix-domain sockets (upstream/socket.h), for the code
 * of the running request; MP_BAD_CONTEXT when none runs (the app
 * loading). Sockets are named by handles (numbers), which go stale when
 * the socket is closed, pooled or its request ends; a stale handle
 * answers MP_CLOSED. Calls that answer MP_AGAIN made the request wait: the
 * caller must yield, and, once resumed, fetch the outcome with
 * mp_sock_result (connect, send) or call receive again. */

/* host: a name, an IP literal or "unix:/path"; pool: the pool's name or
 * NULL; pool_size 0 for the default; backlog -1 for none. 0 (connected at
 * once, from the pool) or MP_AGAIN with *handle set; MP_DECLINED when the
 * pool's backlog is full. */
int mp_sock_connect(const char *host, int port, const char *pool,
                    int pool_size, int backlog, double timeout_ms,
                    double *handle);
/* The outcome of the connect or send waited for: 0, MP_TIMEOUT,
 * MP_CLOSED, or a libuv code (UV_EAI_* when the host did not resolve). */
int mp_sock_result(double handle);
/* pattern: MP_RECV_*. 0 with the data in *out, *len; MP_DECLINED when an
 * UNTIL read with a size reached its boundary; or an error with the
 * partial data in *out, *len. */
int mp_sock_receive(double handle, int pattern, size_t n, const char *until,
                    size_t ulen, int inclusive, double timeout_ms,
                    const char **out, size_t *len);
int mp_sock_send(double handle, const char *data, size_t len,
                 double timeout_ms);
/* MP_DECLINED: unread data in the buffer; MP_STATE: an operation is in
 * progress. */
int mp_sock_keepalive(double handle, double idle_ms, int pool_size);
int mp_sock_close(double handle);
/* How many times the connection was reused, or MP_CLOSED. */
int mp_sock_reused(double handle);
/* option: MP_STREAM_*. */
int mp_sock_option(double handle, int option, int value);
/* TLS over the connection: server_name (SNI and the name checked) or
 * NULL, verify 0 or 1, a client certificate and key as PEM text or NULL.
 * 0 (done, or a pooled connection already TLS with these settings),
 * MP_AGAIN, UV_EPROTO with the reason in mp_sock_tls_error, MP_STATE when
 * the connection is TLS with other settings. */
int mp_sock_handshake(double handle, const char *server_name, int verify,
                      const char *cert, size_t cert_len, const char *key,
                      size_t key_len, double timeout_ms);
/* Why the last handshake on handle failed, or "". Static until the next
 * call. */
const char *mp_sock_tls_error(double handle);
/* 1 when the handshake resumed an earlier session, else 0; MP_CLOSED. */
int mp_sock_tls_resumed(double handle);
/* Datagram sockets (moonport.socket.udp): host "unix:/path" for a
 * Unix-domain one. MP_AGAIN with *handle set: wait, then mp_sock_result. */
int mp_udp_open(const char *host, int port, double timeout_ms,
                double *handle);
int mp_udp_send(double handle, const char *data, size_t len);
/* The next datagram (at most max bytes): 0, MP_AGAIN (wait, ask again),
 * MP_TIMEOUT or an error. Close with mp_sock_close. */
int mp_udp_receive(double handle, size_t max, double timeout_ms,
                   const char **out, size_t *len);
/* The worker's outbound connections: in use by requests, and idle in
 * pools. Returns 0. */
int mp_sock_counts(int *in_use, int *idle);
/* The words for a libuv code, as OpenResty words socket errors
 * ("connection refused", "connection reset by peer"). Static text. */
const char *mp_sock_strerror(int rc);

/* ---- Timers, light threads and semaphores (ffi/task.c) ---- */

/* The code running now is a request's handler or a task (a light thread,
 * a timer's run: req/task.h), named to Lua by a handle of the same form
 * as a req. Lua parks and unparks such records to build
 * moonport.thread.wait and moonport.semaphore on (req/park.h); the
 * classic functions lua/vm.c registers as moonport.core.native spawn and
 * kill light threads, since starting one runs Lua. */

/* The handle of the record whose code runs now (a request or a task), or
 * 0 when none (the app loading). */
double mp_task_self(void);
/* Parks the record whose code runs now for at most ms milliseconds (a
 * negative ms: until unparked); children = 1: the end of one of its light
 * threads unparks it too. The caller must yield right after a 0 return;
 * it is resumed when unparked, when ms pass, or when its request's client
 * leaves (the wait then answers "closed"). MP_BAD_CONTEXT when no record's
 * code runs, MP_STATE when it cannot wait now, MP_INVALID for a NaN ms. */
int mp_task_park(double ms, int children);
/* Resumes the parked record `handle` names on the next loop turn. 0, or
 * MP_STATE when it is not parked, MP_BAD_CONTEXT when it has ended. */
int mp_task_unpark(double handle);
/* 1 while the record `handle` names lives, else 0. */
int mp_task_alive(double handle);
/* How many light threads of the record whose code runs now are live. */
int mp_task_children(void);
/* A timer of the code running now (or loading): the function that code
 * keeps as id runs after delay_ms, then every interval_ms when that is
 * over 0 (both capped at 2^53). 0, MP_STATE when the worker is stopping,
 * MP_DECLINED when the code running has been replaced by a reload,
 * MP_INVALID for a negative or NaN delay or interval, MP_NOMEM. Outside a
 * worker (the master's check of the app, --check) it is accepted and
 * never runs. */
int mp_timer_start(double id, double delay_ms, double interval_ms);
/* Timers of this worker pending or running now. */
int mp_timer_count(void);

/* ---- moonport.pg (ffi/pg.c) ---- */

/* PostgreSQL (upstream/pg.h). Clients are numbers (made at load time as
 * well as later; no I/O until the first query), queries are operations
 * named by handles. A request sends queries, then waits once for all of
 * them (mp_pg_await), then reads each result and lets it go. */

/* The client for conninfo with pool_size pipelined connections: its id,
 * or MP_NOMEM. */
int mp_pg_open(const char *conninfo, int pool_size);
/* --pg's connection string, or NULL. */
const char *mp_pg_default(void);
/* A connection of its own for a transaction: a pin id, or an error. */
int mp_pg_pin_open(int client);
void mp_pg_pin_close(int pin);
/* Sends sql with nparams text parameters (values[i] NULL for NULL) on
 * client, or on pin when pin >= 0: 0 with *op set. MP_STATE: too many
 * queries queued on the connection. timeout_ms <= 0: --pg-timeout. */
int mp_pg_query(int client, int pin, const char *sql, int nparams,
                const char **values, const int *lengths, double timeout_ms,
                double *op);
/* 0 when every query the running request sent has ended, else MP_AGAIN
 * (the caller yields, and asks again once resumed). */
int mp_pg_await(void);
/* An ended query: 0, or MP_TIMEOUT, MP_CLOSED (the connection failed; the
 * message in *msg), MP_DECLINED (the server's error: mp_pg_error_field),
 * MP_NOMEM (the result is larger than --request-memory-limit). Its result
 * memory is charged to the running request. On 0, shape[0] is the count
 * of rows and shape[1] of columns. */
int mp_pg_result(double op, const char **msg, int *shape);
/* Column col's name (static until the op is released) and type OID. */
const char *mp_pg_fname(double op, int col);
int mp_pg_ftype(double op, int col);
/* The value's length with its text in *out, or -1 for NULL. */
int mp_pg_value(double op, int row, int col, const char **out);
/* The rows a command affected ("" when none said). */
const char *mp_pg_affected(double op);
/* A field of the server's error (libpq's PG_DIAG_* codes: 'C' SQLSTATE,
 * 'M' message, 'D' detail, 'H' hint, 'P' position), or NULL. */
const char *mp_pg_error_field(double op, int field);
void mp_pg_release(double op);
/* LISTEN channel on client: 0 with the listener's id in *id (no I/O
 * yet). */
int mp_pg_listen_open(int client, const char *channel, double *id);
/* The next notification's payload for the listener: 0, MP_AGAIN (yield,
 * then ask again), MP_DECLINED (replaced by a later listen: stop). */
int mp_pg_listen_next(double id, const char **payload, size_t *len);

/* ---- The app's files (ffi/app.c) ---- */

/* The app loaded the file at path: a worker tells the master, which
 * watches it for reloads. Nothing outside a serving worker. */
void mp_lua_file_loaded(const char *path, size_t len);

/* ---- Middleware and hooks (ffi/middleware.c) ---- */

/* Whether the request's path is prefix or lies under it (prefix followed
 * by '/'), compared as sent: 1 or 0. prefix is "/..." without a trailing
 * '/'; "" matches every path. */
int mp_req_under(uint64_t ctx, const char *prefix, size_t len);
/* What routing made of the request: 0 (a route matched), 404 or 405 (no
 * route did: the app's fallback runs). */
int mp_req_miss(uint64_t ctx);
/* Where the response stands: 0 (nothing written yet), 1 (the head is
 * out, the body streams), 2 (complete); its status in *status. */
int mp_res_stage(uint64_t ctx, int *status);
/* Answers a request no route serves as the core would have: 404, or 405
 * with Allow, with a JSON body, keeping the headers set so far. MP_STATE
 * when the response has begun, MP_DECLINED when a route matched the
 * request. */
int mp_res_miss(uint64_t ctx);

/* ---- Regular expressions (ffi/regex.c) ---- */

/* PCRE2 patterns for the mock library, compiled to match a whole subject
 * (with MP_REGEX_PARTIAL, for mp_regex_prefix only). NULL with a message
 * in err when the pattern is bad. */
void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen);
/* MP_REGEX_MATCH when re matches all of subject, MP_REGEX_NOMATCH when
 * not, MP_REGEX_LIMIT when the match was given up at PCRE2's match, depth
 * or heap limit (neither a match nor a mismatch), MP_INVALID on another
 * error. */
int mp_regex_match(void *re, const char *subject, size_t len);
/* The length of the longest start of subject that re (compiled with
 * MP_REGEX_PARTIAL) matches or could match were more to follow: how near
 * subject came. MP_INVALID when a match hit a limit or failed. */
int mp_regex_prefix(void *re, const char *subject, size_t len);
void mp_regex_free(void *re);

/* ---- Regular expressions for ngx.re (ffi/regex.c) ---- */

/* A PCRE2 pattern for ngx.re, compiled with MP_RE_* flags, matched
 * anywhere in a subject. NULL with a message in err when the pattern is
 * bad ("pcre2_compile() failed: ... in \"(\" at offset 1"). Free with
 * mp_re_free. */
void *mp_re_compile(const char *pattern, size_t len, int flags, char *err,
                    size_t errlen);
/* The number of capture groups in *ncaptures, and the group names: the
 * result is how many; *names points to that many entries of *entry_size
 * bytes each, a group number (two bytes, most significant first) and the
 * name, NUL-terminated. The table lives as long as re. */
int mp_re_info(void *re, int *ncaptures, const unsigned char **names,
               int *entry_size);
/* Looks for re in subject from byte offset on, within the limits of
 * mp_regex_match. MP_REGEX_MATCH with ov (2 * (ncaptures + 1) ints)
 * holding each group's start and end byte offsets (-1 and -1 for a group
 * that took no part); MP_REGEX_NOMATCH; MP_REGEX_LIMIT when the match was
 * given up at a limit; MP_INVALID with a message in err on another error
 * (an offset past the subject, invalid UTF-8 with MP_RE_UTF). */
int mp_re_exec(void *re, const char *subject, size_t len, size_t offset,
               int *ov, char *err, size_t errlen);
void mp_re_free(void *re);

/* ---- Files (ffi/fs.c) ---- */

/* The entries of a directory (not "." and ".."), each as a type byte ('d'
 * for a directory, 'f' otherwise), the name and a NUL, in the scratch
 * buffer (*out, *len). Returns how many, or a negative errno. */
int mp_dir_list(const char *path, const char **out, size_t *len);

/* Makes the directory path (its parent must exist; the umask applies).
 * Returns 0, also when a directory is already there, or a negative errno. */
int mp_dir_make(const char *path);

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

/* ---- The mock's settings (ffi/mock.c) ---- */

typedef struct mp_mock_config {
  const char *dir;         /* --mock DIR, or NULL */
  const char *listen_host; /* the host of --listen */
  const char *admin_hosts; /* --admin-host (comma-separated), or NULL */
  int cors;                /* not --no-cors */
  int admin_cors;          /* --admin-cors */
  int journal_size;        /* --journal-size */
  const char *proxy_all;   /* --proxy-all URL, or NULL */
  int record_mappings;     /* --record-mappings */
  const char *json_db;     /* --json-db FILE, or NULL */
  const char *store;       /* --mock-store URL, or NULL */
  const char *json_routes; /* --routes FILE, or NULL */
  const char *json_static; /* --static DIR, or NULL */
  const char *json_id;     /* --id NAME, or NULL */
  const char *json_fks;    /* --foreign-key-suffix, or NULL */
  int json_read_only;      /* --read-only */
  int json_delay_ms;       /* --delay MS */
  int wiremock_404;        /* --wiremock-404 */
  const char *openapi;     /* --openapi FILE when the mock serves it, or NULL */
  int openapi_dynamic;     /* --dynamic */
  const char *openapi_seed; /* --seed N (digits), or NULL */
  int check;               /* --check: loading to check, not to serve */
} mp_mock_config;

/* Fills *out from the command line. Returns 0. */
int mp_mock_settings(mp_mock_config *out);

/* ---- Time (ffi/time.c) ---- */

/* The wall-clock time in seconds since the epoch, to the microsecond. */
double mp_clock_wall(void);

/* ---- moonport.log (ffi/log.c) ---- */

/* Writes msg (cut at 4 KiB) to the error log at level (MP_LOG_*; another
 * value logs at MP_LOG_INFO). */
void mp_lua_log(int level, const char *msg, size_t len);

/* ---- moonport.shared and the mock's stores (ffi/shared.c) ---- */

/* The stores every worker sees (shared.h). `store` is an MP_STORE_* index;
 * another gives MP_INVALID. Value types are MP_SHARED_*; a boolean is the
 * number 0 or 1. */

/* The value's type (MP_SHARED_NIL when absent or expired), with the number
 * in *num or the string in *str and *len (in the scratch buffer). */
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

/* ---- Hashes, HMAC, base64, hex and CRC-32 (ffi/crypto.c) ---- */

/* The digest of data with alg (MP_DIGEST_*) into out (MP_DIGEST_MAX
 * bytes); returns its length, or MP_INVALID for an unknown alg. */
int mp_digest(int alg, const char *data, size_t len, unsigned char *out);
/* HMAC of data under key with alg, as mp_digest. */
int mp_hmac(int alg, const char *key, size_t klen, const char *data,
            size_t len, unsigned char *out);
/* A running digest with alg, or NULL (an unknown alg, no memory). Free
 * with mp_digest_free. */
void *mp_digest_new(int alg);
/* MP_STATE once the digest's value was taken (mp_digest_reset starts
 * again). */
int mp_digest_update(void *d, const char *data, size_t len);
/* The digest into out (MP_DIGEST_MAX bytes); returns its length, or
 * MP_STATE when it was taken already. */
int mp_digest_final(void *d, unsigned char *out);
int mp_digest_reset(void *d);
void mp_digest_free(void *d);
/* Base64 of in into out (cap bytes; MP_INVALID when it does not fit),
 * flags MP_BASE64_*: returns the length written. */
int mp_base64_encode(const char *in, size_t len, int flags, char *out,
                     size_t cap);
/* Decodes base64 as nginx does (padding optional, nothing after the first
 * '=' read); MP_INVALID for a byte outside the alphabet or a length no
 * encoding has, or when the result does not fit in cap. */
int mp_base64_decode(const char *in, size_t len, int flags, char *out,
                     size_t cap);
/* Lower-case hex of in into out (2 * len bytes, within cap). */
int mp_hex_encode(const char *in, size_t len, char *out, size_t cap);
/* The CRC-32 (zlib's, as nginx's ngx_crc32_short and _long) of data in
 * *out. Returns 0. */
int mp_crc32(const char *data, size_t len, uint32_t *out);

/* ---- The worker process (ffi/worker.c) ---- */

/* This worker's number, from 0; MP_NOT_FOUND in a process that is no
 * worker (--check). */
int mp_worker_id(void);
/* How many workers the server runs (1 in a process that is no worker). */
int mp_worker_count(void);
int mp_worker_pid(void);

/* ---- moonport.http's response parser (ffi/httpc.c) ---- */

/* http/h1resp.h's parser for the Lua client, in memory Lua allocates: no
 * call keeps a pointer past its return but p, which the caller keeps alive
 * for the connection. The answers of mp_httpc_feed and mp_httpc_eof are
 * MP_HTTPC_* (h1resp.h), not errors.h's codes. */

/* The memory one parser needs, for the caller to allocate (Lua: ffi.new),
 * 8-byte aligned. */
size_t mp_httpc_size(void);
/* Readies p for a connection: head bytes at most max_head (status line
 * and fields; chunk extensions and trailers together have the same
 * limit), at most max_fields fields (and at most MP_HTTPC_MAX_FIELDS). */
void mp_httpc_init(void *p, size_t max_head, unsigned max_fields);
/* Readies p for the next response on the connection; head_only: the
 * request was HEAD, so no body whatever the head says. */
void mp_httpc_start(void *p, int head_only);
/* Parses buf[*pos .. len): buf holds the current response from its first
 * byte (the caller keeps the head bytes contiguous and in place until the
 * head is complete; body bytes may be dropped after they were returned).
 * Advances *pos past what it consumed. Returns:
 *   MP_HTTPC_MORE  every byte consumed (but a CR that ends a head's
 *                  bytes: *pos stays before it until the next byte
 *                  comes), nothing complete yet
 *   MP_HTTPC_HEAD  a final (non-1xx) head is complete: status, fields
 *   MP_HTTPC_BODY  body bytes: mp_httpc_body gives them (a pointer into
 *                  buf, chunked framing removed); call again
 *   MP_HTTPC_DONE  the response ended; bytes after *pos belong to the
 *                  next response on the connection (mp_httpc_start first)
 *   MP_HTTPC_ERROR mp_httpc_error says why
 * After HEAD and BODY, call again even with no bytes left: a response
 * without a body ends without needing one. 1xx responses (100 Continue,
 * 103 Early Hints) are skipped: their bytes are consumed and parsing goes
 * on with the next head in buf, at mp_httpc_head_start. 101 is an error
 * ("unexpected 101"). */
int mp_httpc_feed(void *p, const char *buf, size_t len, size_t *pos);
/* The offset in buf where the final head begins (after any 1xx heads);
 * spans are relative to it. */
uint32_t mp_httpc_head_start(const void *p);
/* The connection closed at buf's end: MP_HTTPC_DONE when the response is
 * complete or its body runs to the close (no Content-Length, not chunked,
 * a body allowed), else MP_HTTPC_ERROR ("closed"). */
int mp_httpc_eof(void *p);
/* The final head's status code, from MP_HTTPC_HEAD on. */
int mp_httpc_status(const void *p);
/* Spans are offsets from the final head's first byte (see head_start). */
void mp_httpc_reason(const void *p, uint32_t *off, uint32_t *len);
unsigned mp_httpc_nfields(const void *p);
void mp_httpc_field(const void *p, unsigned i, uint32_t *name_off,
                    uint32_t *name_len, uint32_t *value_off,
                    uint32_t *value_len);
/* The body piece of the last MP_HTTPC_BODY, its length in *len. */
const char *mp_httpc_body(const void *p, size_t *len);
/* Whether the connection may carry another request after this response
 * (HTTP/1.1 without Connection: close, HTTP/1.0 with keep-alive; never
 * when the body runs to the close). Valid from MP_HTTPC_HEAD on. */
int mp_httpc_keep_alive(const void *p);
/* Content-Length, or -1 when absent; whether chunked. Both as the head
 * says, also where there is no body (HEAD, 204, 304). */
int64_t mp_httpc_content_length(const void *p);
int mp_httpc_chunked(const void *p);
/* Why the last MP_HTTPC_ERROR, or NULL. Static text: "bare CR in response
 * head", "obsolete line folding in response head", "NUL byte in response
 * head", "response head too large", "too many header fields",
 * "conflicting Content-Length", "Content-Length and Transfer-Encoding",
 * "bad chunk", "closed", "unexpected 101", "invalid response", ... */
const char *mp_httpc_error(const void *p);
/* Inflates a gzip or zlib body (len bytes at in) into out, cap bytes:
 * 0 with *outlen the bytes written; MP_AGAIN when it inflates to more than
 * cap (call again with a larger out); MP_INVALID when it is neither, is
 * corrupt or is cut short. */
int mp_httpc_gunzip(const char *in, size_t len, char *out, size_t cap,
                    size_t *outlen);

/* ---- Percent-decoding for moonport.url (ffi/url.c) ---- */

/* Percent-decodes len bytes of src into dst (at least len bytes), as
 * req:query decodes its values: a malformed escape stays as it is, and
 * with plus_space non-zero '+' becomes ' '. Returns the decoded length,
 * or MP_INVALID when len is over INT_MAX. */
int mp_url_unescape(const char *src, size_t len, int plus_space, char *dst);

/* ---- XML documents and XPath for the mock (ffi/xml.c) ---- */

/* Parses len bytes of text as an XML document (libxml2; nothing fetched,
 * no external entity read). Returns the document, to be freed with
 * mp_xml_free, or NULL with a message in err (errlen bytes). */
void *mp_xml_parse(const char *text, size_t len, char *err, size_t errlen);
void mp_xml_free(void *doc);
/* The document in the normalized form ffi/xml.c describes (what
 * WireMock's equalToXml compares: no comments, no white space between
 * elements, text trimmed, names as "{uri}local", attributes sorted), in
 * the scratch buffer. Returns its length, or MP_NOMEM. */
int mp_xml_canonical(void *doc, const char **out);
/* Compiles an XPath 1.0 expression; NULL with a message in err when it
 * is not one. Free it with mp_xpath_free. */
void *mp_xpath_compile(const char *expr, size_t len, char *err,
                       size_t errlen);
void mp_xpath_free(void *xp);
/* Evaluates xp on doc, its prefixes bound by ns (nslen bytes of
 * "prefix\0uri\0" pairs). *kind: MP_XPATH_NODES, with the text of each
 * node it selects, followed by a NUL (an element written out as XML, an
 * attribute or a text node its text); MP_XPATH_NUMBER, with the number
 * ("%.17g"); MP_XPATH_TEXT, with a string or "true" or "false"; all in
 * the scratch buffer (*out, *len). Returns how many values; MP_INVALID
 * when the evaluation failed (an unbound prefix, a bad function call),
 * MP_NOMEM. */
int mp_xpath_eval(void *doc, void *xp, const char *ns, size_t nslen,
                  int *kind, const char **out, size_t *len);

#endif
