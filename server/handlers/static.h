/*
 * Static files: the app's mounts (app:static(prefix, root, opts)) served
 * by the core, and the same sending for a handler's res:send_file. Files
 * are looked up and opened on libuv's thread pool and sent with sendfile
 * from it, so the loop never waits on the disk; a mount's request runs no
 * Lua unless its file is missing, when it goes to the routes.
 */
#ifndef MP_STATIC_H
#define MP_STATIC_H

#include <stdbool.h>
#include <stddef.h>

#include "request.h"
#include "server.h"

/* A set of mounts: one per loaded app version (lua/vm.c owns it). */
typedef struct mp_static mp_static;

typedef struct mp_static_opts {
  const char *cache_control; /* the Cache-Control value, or NULL for none */
  const char *index;  /* the file served for a directory, or NULL for none */
  bool dotfiles;      /* names with a segment starting with '.' are served */
  bool precompressed; /* NAME.br / NAME.gz served to clients that take them */
} mp_static_opts;

/* An empty set, or NULL when out of memory. */
mp_static *mp_static_new(void);
void mp_static_free(mp_static *st);

/* Adds a mount: URL paths under prefix ("/assets"; "/" for every path)
 * are files under root (a directory, resolved now, symbolic links
 * included). The strings are copied. Returns 0, or MP_INVALID (a prefix
 * not starting with '/', an option too long, a root that is not a
 * directory: err says which) or MP_NOMEM. */
int mp_static_add(mp_static *st, const char *prefix, const char *root,
                  const mp_static_opts *opts, char *err, size_t errlen);

/* How many mounts st holds. */
unsigned mp_static_count(const mp_static *st);

/* The server's serve_file (server.h), for s->files (an mp_static): takes
 * a GET or HEAD whose path lies under a mount, unless its name can name
 * no file there (a NUL, a backslash, a "." or ".." segment, a dotfile
 * while those are off: then it is routed as any request). Answers it
 * later, from a loop callback: the file, a 304, a 206 or 416, a 301 for a
 * directory asked without its slash; or, when there is no such file (or
 * it resolves outside the root), hands it to the routes. Runs no Lua. */
int mp_static_serve(mp_server *s, mp_request *r);

/* res:send_file's flags. */
enum {
  MP_FILE_INDEX = 1,        /* a directory's name ending in '/': its index.html */
  MP_FILE_DOTFILES = 2,     /* dotfiles may be served */
  MP_FILE_PRECOMPRESSED = 4 /* NAME.br / NAME.gz when the client takes them */
};

/* Sends a file as r's response, for r's handler: with root, name is a URL
 * path (percent-encoded) confined to root as a mount's are; without, name
 * is the file's own path, which the caller has chosen. The response gets
 * the file's type (unless the handler set one), Content-Length, and, with
 * status 200, ETag, Last-Modified and the conditional and Range answers;
 * headers the handler set are kept. Returns MP_AGAIN: the handler must
 * yield until the core resumes it, then read mp_static_result. Or at once
 * MP_DECLINED (a name no file may have, under root also one too long for
 * a path: nothing sent), MP_STATE (the response has begun, or the code
 * running now is not r's handler), MP_INVALID (without root, a name too
 * long; a root too long) or MP_NOMEM. */
int mp_static_send_file(mp_request *r, const char *root, const char *name,
                        size_t nlen, const char *cache_control, int flags);

/* How r's last mp_static_send_file ended: 0 (sent), MP_NOT_FOUND (no such
 * file: nothing sent), MP_DECLINED (it resolves outside the root: nothing
 * sent) or MP_CLOSED (the client left, or the file could not be sent: the
 * connection ends). */
int mp_static_result(const mp_request *r);

#endif
