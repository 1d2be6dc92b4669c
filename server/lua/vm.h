/*
 * The worker's Lua VM: loading the app, and running handlers in pooled
 * coroutines.
 *
 * Every entry into Lua goes through lua_pcall or lua_resume, so a Lua error
 * never unwinds through C frames. A handler runs inside the runner of
 * lua/moonport/core.lua, which catches its errors with a traceback and
 * yields a DONE marker when it returns; the coroutine then goes back to the
 * pool. A handler waits by yielding core.WAIT from any depth of user
 * coroutines (core.lua routes their resumes). A coroutine that is
 * abandoned mid-handler (stopped after its client left, or at shutdown)
 * is left to the garbage collector, never resumed.
 */
#ifndef MP_LUA_VM_H
#define MP_LUA_VM_H

#include <stddef.h>

#include "worker.h"

enum {
  MP_VM_DONE = 0,    /* the handler returned */
  MP_VM_FAILED = 1,  /* it raised (logged; see mp_vm_error) */
  MP_VM_WAITING = 2  /* it is suspended in a wait (sleep, read, write) */
};

/* Creates the VM, loads `app` and builds its router. The VM starts with
 * one reference (its creator's). Every file the app loads is passed to
 * w->on_load_file when set, whether the load succeeds or not. On failure
 * returns NULL with one line in err: "file:line: message" where Lua gives
 * a line, "file: message" otherwise. */
mp_vm *mp_vm_open(mp_worker *w, const char *app, char *err, size_t errlen);
/* Closes the state and frees the router. Only when nothing holds it. */
void mp_vm_close(mp_vm *vm);

/* Where moonport's Lua library is: the source tree's lua/ when it is
 * there, else the installed copy. */
const char *mp_vm_library_dir(void);

/* The router built from this VM's app. */
mp_router *mp_vm_router(const mp_vm *vm);

/* A request running on the VM holds it; the worker holds its current one.
 * mp_vm_release returns the references left: at 0 the VM may be closed. */
void mp_vm_hold(mp_vm *vm);
unsigned mp_vm_release(mp_vm *vm);

/* Runs the handler (a registry reference) for r. Returns MP_VM_*. */
int mp_vm_start(mp_vm *vm, mp_request *r, int handler);
/* Resumes r's suspended handler; its wait returns true, the request's
 * context when the client has just gone (told once). Returns MP_VM_*. */
int mp_vm_resume(mp_vm *vm, mp_request *r);
/* Drops r's suspended coroutine without resuming it. */
void mp_vm_abandon(mp_vm *vm, mp_request *r);

/* Bytes live in the Lua heap. */
size_t mp_vm_heap_size(const mp_vm *vm);

/* The message of the last handler failure (for --debug responses). */
const char *mp_vm_error(const mp_vm *vm);

#endif
