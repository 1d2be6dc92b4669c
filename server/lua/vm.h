/*
 * The worker's Lua VM: loading the app, and running handlers in pooled
 * coroutines.
 *
 * Every entry into Lua goes through lua_pcall or lua_resume, so a Lua error
 * never unwinds through C frames. A handler runs inside core.run
 * (lua/moonport/core/runner.lua), which catches its errors with a
 * traceback and yields a DONE marker when it returns; the coroutine then
 * goes back to the pool. A handler waits by yielding core.WAIT from any
 * depth of user coroutines (runner.lua routes their resumes). A coroutine
 * that is abandoned mid-handler (stopped after its client left, or at
 * shutdown) is left to the garbage collector, never resumed; what Lua kept
 * for its request is dropped then (core.forget).
 */
#ifndef MP_LUA_VM_H
#define MP_LUA_VM_H

#include <stddef.h>

#include "config.h"
#include "router.h"
#include "server.h"
#include "shared.h"
#include "static.h"

typedef struct mp_vm mp_vm;

/* What a VM needs from the process that makes it: no more than this, so
 * a worker, the master's check process and --check make VMs alike. */
typedef struct mp_vm_host {
  const mp_config *cfg; /* the limits; the mock's settings */
  mp_shared *shared;    /* the stores; the code generation a load is */
  mp_worker_slot *slot; /* the heartbeat handlers beat, or NULL */
  /* When set, told every file an app loads (by require, dofile,
   * loadfile, or a mock mapping), whether the load succeeds or not, at
   * load time and later (a require inside a handler). */
  void (*on_load_file)(void *ud, const char *path);
  void *ud;
} mp_vm_host;

/* The host of the VMs of this process (the FFI functions reach it here):
 * the last one mp_vm_open was given. */
extern const mp_vm_host *mp_vm_host_self;

/* Creates the VM, loads `app` (under --load-memory-limit) and builds its
 * router. host must outlive the VM. The VM starts with one reference (its
 * creator's). On failure returns NULL with one line in err:
 * "file:line: message" where Lua gives a line, "file: message"
 * otherwise. */
mp_vm *mp_vm_open(const mp_vm_host *host, const char *app, char *err,
                  size_t errlen);
/* Closes the state and frees the router. Only when nothing holds it. */
void mp_vm_close(mp_vm *vm);

/* Where moonport's Lua library (the folder holding moonport/init.lua)
 * is, found from the executable's own path (uv_exepath), never from a
 * path compiled in, so an installed tree works wherever it is put:
 * PREFIX/share/lua/5.1 when the binary is PREFIX/bin/moonport (cmake
 * --install, the .deb), else lua/ at the top of a checkout when the
 * binary is in a build folder there (build/moonport). Looked up once per
 * process; the string is static. Returns NULL when neither folder holds
 * the library, and then, when why is not NULL, sets *why to a line saying
 * where it looked. */
const char *mp_vm_library_dir(const char **why);

/* The folder of the resty.* modules OpenResty's libraries require
 * (lua/resty/ in a checkout, so the library's own folder there):
 * PREFIX/share/moonport/lua when installed, where they do not clash with
 * Debian's lua-resty-core and lua-resty-lrucache in share/lua/5.1/resty/.
 * NULL when the library was not found. */
const char *mp_vm_compat_dir(void);

/* Calls require(module)[fn](args[0], ..., args[nargs - 1]) in the VM's
 * state, outside any request (its memory counted against
 * --load-memory-limit), and returns the number it returns (0 when it
 * returns none, or a negative one), or -1 with one line in err when it
 * raises. The state's stack is left empty. Runs Lua; for commands such as
 * --check, not for a serving worker. */
int mp_vm_call(mp_vm *vm, const char *module, const char *fn,
               const char *const *args, unsigned nargs, char *err,
               size_t errlen);

/* The router built from this VM's app. */
mp_router *mp_vm_router(const mp_vm *vm);

/* The app's static mounts (handlers/static.h), or NULL when it has none;
 * they live as long as vm. */
const mp_static *mp_vm_static(const mp_vm *vm);

/* How a server runs handlers on a VM (server.h): start, resume and
 * abandon handlers and tasks, run a timer's function, hold and release
 * the VM, its last error, its heap's size. Resuming a handler (or task)
 * makes its wait return true, and the request's context when the client
 * has just gone (told once). */
extern const mp_code_ops mp_vm_code_ops;

#endif
