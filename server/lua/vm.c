/*
 * The worker's Lua VM (see vm.h).
 *
 * A VM is one loaded version of the app: its Lua state, the router built
 * from its routes and its pool of coroutines. A reload makes a new VM; the
 * old one lives on, counted, until its last request is released.
 *
 * Stack discipline: the main state's stack is empty between calls into this
 * file. A pooled coroutine is suspended inside core.run's yield with an
 * empty stack; starting a request pushes (handler, req, res) and resumes,
 * which makes that yield return them. req and res are numbers (request
 * contexts, see request.h), so a request allocates nothing in Lua to start. A fresh coroutine gets core.run
 * pushed below the same three values.
 *
 * Tasks (req/task.h) run in coroutines of their own, never pooled: a light
 * thread's runs the function moonport.thread.spawn passed to
 * moonport.core.native.spawn (below), a timer's runs core.timer_run; each
 * returns (ok, message) when it ends. Light threads start inside a Lua
 * call (spawn runs the new thread at once, until it first waits or ends),
 * so resume() nests: it restores the charge and the heartbeat it found.
 *
 * Every state's package.path starts with moonport's Lua library, found
 * once per process from the executable's own path, never from a path
 * compiled in (mp_vm_library_dir).
 */
#include "vm.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <uv.h>

#include "heap.h"
#include "log.h"
#include "json.h"
#include "yaml_module.h"
#include "request.h"
#include "router.h"
#include "static.h"
#include "task.h"
#include "timer.h"

#define MAX_POOLED 1024
/* Light threads started inside one another at once, at most: each start
 * nests a lua_resume on the C stack. A thread spawned deeper starts on
 * the next loop turn instead. */
#define MAX_NESTED_STARTS 100

const mp_vm_host *mp_vm_host_self;

struct mp_vm {
  lua_State *L;
  const mp_vm_host *host;
  mp_router *router;
  mp_static *files; /* its app:static mounts, or NULL for none */
  unsigned refs; /* the server's, while current, and one per request */
  uint64_t generation; /* the code version it loaded (mp_reload_status) */
  mp_lua_heap heap;
  int run_ref; /* core.run */
  int forget_ref; /* core.forget */
  int timer_ref; /* core.timer_run */
  void *wait_marker; /* core.WAIT: what a handler waiting on the core yields */
  lua_State *pool[MAX_POOLED];
  int pool_refs[MAX_POOLED];
  unsigned npool;
  char error[1024];
};

#ifdef MP_SANITIZE
static void *system_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}
#endif

/* core.run yields this light userdata's address when a handler is over. */
static char done_marker;

static const char *last_error(const void *code) {
  return ((const mp_vm *)code)->error;
}

static size_t heap_size(const void *code) {
  return ((const mp_vm *)code)->heap.in_use;
}

/* The library's folders, found once per process (mp_vm_library_dir). */
static char library_dir[PATH_MAX];
static char compat_dir[PATH_MAX];
static char library_why[2 * PATH_MAX];
static bool library_located;

/* Writes a then b into out; false when they do not fit. */
static bool join(char *out, size_t cap, const char *a, const char *b) {
  int n = snprintf(out, cap, "%s%s", a, b);
  return n >= 0 && (size_t)n < cap;
}

/* Puts a + b in out when that folder holds moonport/init.lua. */
static bool holds_library(char *out, size_t cap, const char *a,
                          const char *b) {
  char init[PATH_MAX];
  struct stat st;
  return join(out, cap, a, b) && join(init, sizeof init, out, "/moonport/init.lua") &&
         stat(init, &st) == 0 && S_ISREG(st.st_mode);
}

/* Fills library_dir and compat_dir from the executable's path, or leaves
 * library_dir empty and says why in library_why. */
static void locate_library(void) {
  library_located = true;
  char prefix[PATH_MAX];
  size_t len = sizeof prefix;
  int rc = uv_exepath(prefix, &len);
  if (rc != 0) {
    snprintf(library_why, sizeof library_why,
             "cannot find the executable's own path: %s", uv_strerror(rc));
    return;
  }
  /* PREFIX is the folder above the executable's: PREFIX/bin/moonport
   * installed, CHECKOUT/build/moonport in a checkout. The name /proc gives
   * an executable replaced on disk ends in " (deleted)", in its last part,
   * which goes. */
  for (int i = 0; i < 2; i++) {
    char *slash = strrchr(prefix, '/');
    if (slash == NULL) {
      snprintf(library_why, sizeof library_why,
               "the executable's path '%s' has no parent folder", prefix);
      return;
    }
    *slash = '\0';
  }
  if (holds_library(library_dir, sizeof library_dir, prefix,
                    "/share/lua/5.1") &&
      join(compat_dir, sizeof compat_dir, prefix, "/share/moonport/lua"))
    return;
  if (holds_library(library_dir, sizeof library_dir, prefix, "/lua")) {
    memcpy(compat_dir, library_dir, sizeof compat_dir);
    return;
  }
  library_dir[0] = '\0';
  snprintf(library_why, sizeof library_why,
           "no moonport/init.lua in %.2000s/share/lua/5.1 (installed) nor "
           "in %.2000s/lua (a build folder at the top of a checkout)",
           prefix, prefix);
}

const char *mp_vm_library_dir(const char **why) {
  if (!library_located) locate_library();
  if (library_dir[0] != '\0') return library_dir;
  if (why != NULL) *why = library_why;
  return NULL;
}

const char *mp_vm_compat_dir(void) {
  return mp_vm_library_dir(NULL) != NULL ? compat_dir : NULL;
}

/* [-0, +0, m] Puts moonport's library, the resty.* modules beside it and
 * the app's folder first on package.path. */
static void set_path(lua_State *L, const char *app) {
  const char *lib = mp_vm_library_dir(NULL);
  const char *compat = mp_vm_compat_dir();
  assert(lib != NULL && "main() checks that the library is there");
  const char *slash = strrchr(app, '/');
  int dirlen = slash ? (int)(slash - app) : 1;
  const char *dir = slash ? app : ".";
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", lib, lib);
  if (strcmp(compat, lib) != 0)
    lua_pushfstring(L, "%s/?.lua;", compat);
  else
    lua_pushliteral(L, "");
  lua_pushlstring(L, dir, (size_t)dirlen);
  lua_pushstring(L, "/?.lua;");
  lua_pushvalue(L, -5); /* the old path */
  lua_concat(L, 5);
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
}

static int native_spawn(lua_State *L);
static int native_kill(lua_State *L);

/* [-0, +0, m] Registers the functions lua/moonport/core/task.lua calls
 * through the classic API, as the module moonport.core.native: they run
 * Lua (a light thread starts at once), which an FFI call must not. */
static void register_native(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, native_spawn);
  lua_setfield(L, -2, "spawn");
  lua_pushcfunction(L, native_kill);
  lua_setfield(L, -2, "kill");
  lua_setfield(L, -2, "moonport.core.native");
  lua_pop(L, 2);
}

/* Copies a Lua error message into err as one line. */
static void error_line(char *err, size_t errlen, const char *msg) {
  snprintf(err, errlen, "%s", msg ? msg : "unknown error");
  for (char *p = err; *p; p++)
    if (*p == '\n') {
      *p = '\0';
      break;
    }
}

/* [-0, +0, m] Reads field name of the table on top as a string (NULL
 * when it is not one). */
static const char *string_field(lua_State *L, const char *name) {
  lua_getfield(L, -1, name);
  const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1); /* the table still holds it */
  return v;
}

static bool bool_field(lua_State *L, const char *name) {
  lua_getfield(L, -1, name);
  bool v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* [-0, +0, m] The app's static mounts, from the array on top of the stack
 * (nil for none) of {prefix=, root=, line=, cache_control=, index=,
 * dotfiles=, precompressed=} (lua/moonport/init.lua's app:static), into
 * vm->files. Returns 0 or -1 with err filled. */
static int add_statics(mp_vm *vm, const char *app, char *err, size_t errlen) {
  lua_State *L = vm->L;
  if (!lua_istable(L, -1)) return 0;
  int n = (int)lua_objlen(L, -1);
  if (n == 0) return 0;
  vm->files = mp_static_new();
  if (vm->files == NULL) {
    snprintf(err, errlen, "moonport: out of memory");
    return -1;
  }
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    mp_static_opts opts = {
        .cache_control = string_field(L, "cache_control"),
        .index = string_field(L, "index"),
        .dotfiles = bool_field(L, "dotfiles"),
        .precompressed = bool_field(L, "precompressed"),
    };
    const char *prefix = string_field(L, "prefix");
    const char *root = string_field(L, "root");
    lua_getfield(L, -1, "line");
    int line = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    char why[512];
    if (prefix == NULL || root == NULL ||
        mp_static_add(vm->files, prefix, root, &opts, why, sizeof why) != 0) {
      snprintf(err, errlen, "%s:%d: app:static: %s", app, line,
               prefix && root ? why : "bad mount");
      lua_pop(L, 1);
      return -1;
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* [-0, +0, -] Loads the app and adds its routes. Returns 0 or -1 with err
 * filled. */
static int load_app(mp_vm *vm, const char *app, char *err, size_t errlen) {
  lua_State *L = vm->L;
  FILE *f = fopen(app, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "%s: cannot open: %s", app, strerror(errno));
    return -1;
  }
  fclose(f);

  /* core.export(app) checks the script's result and returns its routes as
   * an array of {method, pattern, handler, line}, the function that
   * serves misses (the app's middleware and hooks) or nil, and its static
   * mounts (add_statics). */
  register_native(L);
  lua_getglobal(L, "require");
  lua_pushstring(L, "moonport.core");
  if (lua_pcall(L, 1, 1, 0) != 0) {
    error_line(err, errlen, lua_tostring(L, -1));
    lua_settop(L, 0);
    return -1;
  }
  lua_pushlightuserdata(L, &done_marker);
  lua_setfield(L, -2, "DONE");
  lua_getfield(L, -1, "WAIT");
  vm->wait_marker = lua_touserdata(L, -1); /* held by core; never moves */
  lua_pop(L, 1);
  lua_getfield(L, -1, "run");
  vm->run_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "forget");
  vm->forget_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "timer_run");
  vm->timer_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "track_loads");
  lua_call(L, 0, 0);
  lua_getfield(L, -1, "export");

  if (luaL_loadfile(L, app) != 0 || lua_pcall(L, 0, 1, 0) != 0) {
    error_line(err, errlen, lua_tostring(L, -1));
    lua_settop(L, 0);
    return -1;
  }
  lua_pushstring(L, app);
  if (lua_pcall(L, 2, 3, 0) != 0) {
    error_line(err, errlen, lua_tostring(L, -1));
    lua_settop(L, 0);
    return -1;
  }
  if (add_statics(vm, app, err, errlen) != 0) {
    lua_settop(L, 0);
    return -1;
  }
  lua_pop(L, 1);
  int fallback = lua_isfunction(L, -1) ? luaL_ref(L, LUA_REGISTRYINDEX) : -1;
  if (fallback < 0) lua_pop(L, 1);

  int n = (int)lua_objlen(L, -1);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    lua_rawgeti(L, -3, 4);
    const char *method = lua_tostring(L, -3);
    const char *pattern = lua_tostring(L, -2);
    int line = (int)lua_tointeger(L, -1);
    lua_rawgeti(L, -4, 3);
    int handler = luaL_ref(L, LUA_REGISTRYINDEX);
    char why[512];
    int rc = mp_router_add(vm->router, method, pattern, handler, why,
                           sizeof why);
    if (rc != 0) {
      snprintf(err, errlen, "%s:%d: %s", app, line, why);
      lua_settop(L, 0);
      return -1;
    }
    lua_pop(L, 4);
  }
  lua_settop(L, 0);
  if (fallback >= 0 && mp_router_set_fallback(vm->router, fallback) != 0) {
    snprintf(err, errlen, "%s: cannot set the app's fallback", app);
    return -1;
  }
  return 0;
}

mp_vm *mp_vm_open(const mp_vm_host *host, const char *app, char *err,
                  size_t errlen) {
  const mp_config *cfg = host->cfg;
  mp_vm *vm = calloc(1, sizeof *vm);
  if (vm == NULL) {
    snprintf(err, errlen, "moonport: out of memory");
    return NULL;
  }
  vm->host = host;
  mp_vm_host_self = host;
  vm->refs = 1;
  vm->generation = host->shared ? mp_shared_reload(host->shared)->generation : 0;
  vm->router = mp_router_new();
  if (vm->router == NULL) {
    snprintf(err, errlen, "moonport: out of memory");
    goto err;
  }
  /* A state with LuaJIT's own allocator, which then goes under the
   * counting one. Only the state's first few hundred bytes predate the
   * swap; in_use starts from LuaJIT's own count of them. Sanitizer builds
   * use the C library's allocator instead, which AddressSanitizer sees. */
#ifdef MP_SANITIZE
  vm->L = lua_newstate(system_alloc, NULL);
#else
  vm->L = luaL_newstate();
#endif
  if (vm->L == NULL) {
    snprintf(err, errlen, "moonport: cannot create a Lua state");
    goto err;
  }
  vm->heap.base = lua_getallocf(vm->L, &vm->heap.base_ud);
  vm->heap.in_use = (size_t)lua_gc(vm->L, LUA_GCCOUNT, 0) * 1024 +
                    (size_t)lua_gc(vm->L, LUA_GCCOUNTB, 0);
  lua_setallocf(vm->L, mp_lua_alloc, &vm->heap);
  /* Loading counts like a request, against --load-memory-limit: a script
   * that builds gigabytes while it loads fails its load. */
  mp_charge load = {0};
  mp_charge *was = mp_charge_switch(&load);
  vm->heap.limit = cfg->load_memory_limit;
  luaL_openlibs(vm->L);
  mp_lua_json_preload(vm->L);
  mp_lua_yaml_preload(vm->L);
  set_path(vm->L, app);
  int rc = load_app(vm, app, err, errlen);
  mp_charge_switch(was);
  vm->heap.limit = cfg->request_memory_limit;
  if (load.lua_exceeded) {
    snprintf(err, errlen,
             "%s: loading needs more than --load-memory-limit (%zu bytes): "
             "an allocation of %llu bytes would have made it hold %lld",
             cfg->mock_dir ? cfg->mock_dir : app, cfg->load_memory_limit,
             (unsigned long long)load.refused_size,
             (long long)load.refused_live);
    goto err;
  }
  if (rc != 0) goto err;
  return vm;

err:
  /* Timers the app made while it loaded belong to code that never was. */
  if (mp_server_self != NULL) mp_timer_discard_unbound(mp_server_self);
  mp_vm_close(vm);
  return NULL;
}

void mp_vm_close(mp_vm *vm) {
  /* Give the state its own allocator back first: lua_close releases
   * LuaJIT's whole arena only when the state still uses LuaJIT's
   * allocator, and frees object by object (leaving the arena mapped)
   * otherwise. One state per process hid that; one per reload would leak
   * the arena each time. */
  if (vm->L != NULL) {
    lua_setallocf(vm->L, vm->heap.base, vm->heap.base_ud);
    lua_close(vm->L);
  }
  mp_router_free(vm->router);
  mp_static_free(vm->files);
  free(vm);
}

int mp_vm_call(mp_vm *vm, const char *module, const char *fn,
               const char *const *args, unsigned nargs, char *err,
               size_t errlen) {
  lua_State *L = vm->L;
  const mp_config *cfg = vm->host->cfg;
  /* Counted as a load is, against --load-memory-limit. */
  mp_charge charge = {0};
  mp_charge *was = mp_charge_switch(&charge);
  size_t limit = vm->heap.limit;
  vm->heap.limit = cfg->load_memory_limit;
  int rc = -1;
  lua_getglobal(L, "require");
  lua_pushstring(L, module);
  if (lua_pcall(L, 1, 1, 0) != 0) goto fail;
  lua_getfield(L, -1, fn);
  if (!lua_isfunction(L, -1)) {
    snprintf(err, errlen, "%s: no function %s", module, fn);
    goto out;
  }
  if (!lua_checkstack(L, (int)nargs + 1)) {
    snprintf(err, errlen, "%s.%s: too many arguments", module, fn);
    goto out;
  }
  for (unsigned i = 0; i < nargs; i++) lua_pushstring(L, args[i]);
  if (lua_pcall(L, (int)nargs, 1, 0) != 0) goto fail;
  rc = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  if (rc < 0) rc = 0;
  goto out;
fail:
  error_line(err, errlen, lua_tostring(L, -1));
out:
  lua_settop(L, 0);
  vm->heap.limit = limit;
  mp_charge_switch(was);
  return rc;
}

mp_router *mp_vm_router(const mp_vm *vm) { return vm->router; }

const mp_static *mp_vm_static(const mp_vm *vm) { return vm->files; }

static void hold(void *code) { ((mp_vm *)code)->refs++; }

static unsigned release(void *code) {
  mp_vm *vm = code;
  assert(vm->refs > 0 && "a VM released more often than held");
  return --vm->refs;
}

/* [-0, +0, -] A handler ended without returning to core.run (it failed
 * past its xpcall, or was stopped): drops its coroutine, and what Lua kept
 * for its request (core.forget), which core.run drops otherwise. Called
 * with no Lua running; core.forget only clears table entries. A task's
 * coroutine is dropped alone (Lua keeps nothing under a task's handle),
 * which touches the registry only: a light thread killed from Lua
 * (native_kill) is dropped while its parent's coroutine runs. */
static void drop(mp_vm *vm, mp_request *r) {
  lua_State *L = vm->L;
  luaL_unref(L, LUA_REGISTRYINDEX, r->handler.ref);
  r->handler.co = NULL;
  if (r->task) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, vm->forget_ref);
  lua_pushnumber(L, (lua_Number)mp_request_ctx(r, MP_CTX_REQ));
  if (lua_pcall(L, 1, 0, 0) != 0) lua_pop(L, 1);
}

/* Logs a failure with its route: "GET /x: handler failed: ...", "GET /x:
 * light thread failed: ...", "timer failed: ...", "timer: light thread
 * failed: ...". A handler's message is also kept for --debug. */
static void log_failure(mp_vm *vm, mp_request *r, const char *msg) {
  if (msg == NULL) msg = "(error object is not a string)";
  const mp_request *root = mp_task_root(r);
  const char *what = !r->task ? "handler failed"
                     : r->timer_run ? "timer failed"
                     : "light thread failed";
  if (root->task) {
    mp_log(MP_LOG_ERROR, "%s%s: %s", root == r ? "" : "timer: ", what, msg);
    return;
  }
  const mp_route *route = root->match.route;
  const char *method = mp_route_method_name(route, root->msg.method);
  mp_log(MP_LOG_ERROR, "%s %s: %s: %s", method, route->pattern, what, msg);
  if (!r->task) error_line(vm->error, sizeof vm->error, msg);
}

/* A handler went past its memory limit: log it, and give the garbage it
 * left back to the system so the heap returns to where it was. */
static void over_limit(mp_vm *vm, mp_request *r) {
  char msg[200];
  snprintf(msg, sizeof msg,
           "request memory limit exceeded: an allocation of %llu bytes would "
           "have made it hold %lld bytes, past --request-memory-limit (%llu)",
           (unsigned long long)r->charge.refused_size,
           (long long)r->charge.refused_live,
           (unsigned long long)vm->heap.limit);
  log_failure(vm, r, msg);
  r->srv->stats.memory_limit_hits++;
  /* Collected charged to no request: r's charge, which may still be the
   * one in force (request.c starts handlers under it), refuses every
   * growth now, and a full collection can allocate (LuaJIT shrinks its
   * string table once the handler's strings are garbage), which refused
   * here would be an error outside any protected call: a panic. */
  mp_charge *was = mp_charge_switch(NULL);
  lua_gc(vm->L, LUA_GCCOLLECT, 0);
  mp_charge_switch(was);
}

/* What the heartbeat says r runs: its route, or that a timer runs. */
static int32_t slot_route(mp_request *r) {
  const mp_request *root = mp_task_root(r);
  return root->task ? MP_SLOT_TIMER : (int32_t)root->match.route->index;
}

/* A task's coroutine stopped other than in a wait: it returned (ok,
 * message), failed past its own xpcall, or yielded outside the moonport
 * API. Logs a failure and drops the coroutine. */
static int task_over(mp_vm *vm, mp_request *r, int st) {
  lua_State *co = r->handler.co;
  int outcome = MP_CODE_FAILED;
  if (r->charge.lua_exceeded) {
    /* Dropped first: a coroutine that failed keeps its stack, and with it
     * what it allocated, which the collection must find garbage. */
    drop(vm, r);
    over_limit(vm, r);
    return outcome;
  }
  if (st == 0 && lua_toboolean(co, 1))
    outcome = MP_CODE_DONE;
  else if (st == 0)
    log_failure(vm, r, lua_tostring(co, 2));
  else if (st == LUA_YIELD)
    log_failure(vm, r, "yielded outside the moonport API");
  else
    log_failure(vm, r, lua_tostring(co, -1));
  drop(vm, r);
  return outcome;
}

/* Resumes r's coroutine with the nargs values on its stack. */
static int resume(mp_vm *vm, mp_request *r, int nargs) {
  lua_State *co = r->handler.co;
  mp_charge *was = mp_charge_switch(&r->charge);
  /* The heartbeat: the master kills a worker whose handler runs past
   * --handler-timeout without coming back here (see master.c). The route
   * is written first, so a reader that sees the time sees its route. A
   * light thread started inside its parent's run (native_spawn) is part
   * of that run: the heartbeat it found stays. */
  mp_worker_slot *slot = vm->host->slot;
  bool beat = slot != NULL && slot->busy_since_ms == 0;
  if (beat) {
    slot->generation = vm->generation;
    slot->route = slot_route(r);
    slot->busy_since_ms = mp_shared_now_ms();
  }
  int st = lua_resume(co, nargs);
  if (beat) slot->busy_since_ms = 0;
  mp_charge_switch(was);

  if (st == LUA_YIELD && r->wait != NULL && lua_gettop(co) == 1 &&
      lua_touserdata(co, 1) == vm->wait_marker) {
    lua_settop(co, 0);
    return MP_CODE_WAITING;
  }
  if (r->task) return task_over(vm, r, st);
  if (st == LUA_YIELD && lua_gettop(co) >= 2 &&
      lua_touserdata(co, 1) == &done_marker) {
    int ok = lua_toboolean(co, 2) && !r->charge.lua_exceeded;
    if (r->charge.lua_exceeded)
      over_limit(vm, r);
    else if (!ok)
      log_failure(vm, r, lua_tostring(co, 3));
    lua_settop(co, 0);
    r->handler.co = NULL;
    if (vm->npool < MAX_POOLED) {
      vm->pool[vm->npool] = co;
      vm->pool_refs[vm->npool++] = r->handler.ref;
    } else {
      luaL_unref(vm->L, LUA_REGISTRYINDEX, r->handler.ref);
    }
    return ok ? MP_CODE_DONE : MP_CODE_FAILED;
  }
  if (r->charge.lua_exceeded)
    over_limit(vm, r);
  else if (st == LUA_YIELD)
    log_failure(vm, r, "handler yielded outside the moonport API");
  else
    log_failure(vm, r, lua_tostring(co, -1));
  drop(vm, r);
  return MP_CODE_FAILED;
}

static int start(void *code, mp_request *r, int handler) {
  mp_vm *vm = code;
  lua_State *co;
  if (vm->npool > 0) {
    vm->npool--;
    co = vm->pool[vm->npool];
    r->handler.ref = vm->pool_refs[vm->npool];
  } else {
    co = lua_newthread(vm->L);
    r->handler.ref = luaL_ref(vm->L, LUA_REGISTRYINDEX);
    lua_rawgeti(co, LUA_REGISTRYINDEX, vm->run_ref);
  }
  r->handler.co = co;
  lua_rawgeti(co, LUA_REGISTRYINDEX, handler);
  lua_pushnumber(co, (lua_Number)mp_request_ctx(r, MP_CTX_REQ));
  lua_pushnumber(co, (lua_Number)mp_request_ctx(r, MP_CTX_RES));
  return resume(vm, r, 3);
}

static int resume_waiting(void *code, mp_request *r) {
  mp_vm *vm = code;
  /* A light thread whose start was put off (native_spawn) starts now,
   * with the arguments on its stack. */
  if (r->task && r->handler.unstarted >= 0) {
    int nargs = r->handler.unstarted;
    r->handler.unstarted = -1;
    return resume(vm, r, nargs);
  }
  /* The wait answers whether the client has just gone (told once, with
   * the request, so that its on_abort functions run). */
  lua_State *co = r->handler.co;
  if (mp_request_tell_abort(r)) {
    lua_pushboolean(co, 1);
    lua_pushnumber(co, (lua_Number)mp_request_ctx(r, MP_CTX_REQ));
    return resume(vm, r, 2);
  }
  return resume(vm, r, 0);
}

static void abandon(void *code, mp_request *r) {
  mp_vm *vm = code;
  if (r->handler.co != NULL) drop(vm, r);
}

/* Runs a timer's function: core.timer_run(id, premature, last) in a new
 * coroutine, with no Lua running (a loop callback). */
static int run_timer(void *code, mp_request *task, double id, bool premature,
                     bool last) {
  mp_vm *vm = code;
  lua_State *co = lua_newthread(vm->L);
  task->handler.ref = luaL_ref(vm->L, LUA_REGISTRYINDEX);
  task->handler.co = co;
  task->handler.unstarted = -1;
  lua_rawgeti(co, LUA_REGISTRYINDEX, vm->timer_ref);
  lua_pushnumber(co, id);
  lua_pushboolean(co, premature);
  lua_pushboolean(co, last);
  return resume(vm, task, 3);
}

/* A handle passed from Lua as a double: 0 when it cannot be one (the
 * conversion of a negative, NaN or huge double to an integer would be
 * undefined). */
static uint64_t handle_of(double h) {
  return h >= 0 && h < 9007199254740992.0 ? (uint64_t)h : 0;
}

/* How many light threads are being started inside one another now. */
static unsigned nested_starts;

/* [-(n), +1|2, m] moonport.core.native.spawn(main, ...): a light thread of
 * the record whose code runs now, running main(...) in a coroutine of its
 * own, started at once and run until it first waits or ends (the caller
 * goes on after that); one spawned while MAX_NESTED_STARTS threads are
 * being started inside one another starts on the next loop turn. Returns the thread's handle (a number; the record
 * it names is gone once the thread has ended), or nil and a message when
 * no request record is left. Raises outside a request or a task, and
 * when Lua has no memory for the coroutine (before any record is made). */
static int native_spawn(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checktype(L, 1, LUA_TFUNCTION);
  mp_request *parent = mp_request_current();
  if (parent == NULL || !parent->running || parent->code == NULL)
    return luaL_error(L, "moonport.thread.spawn: only a handler, a light "
                      "thread or a timer can spawn a light thread");
  mp_vm *vm = parent->code;
  /* Whatever may raise comes first, while nothing needs undoing. */
  lua_State *co = lua_newthread(L);
  if (!lua_checkstack(co, n))
    return luaL_error(L, "moonport.thread.spawn: too many arguments");
  int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  mp_request *t = mp_task_new(parent->srv, parent, vm);
  if (t == NULL) {
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    lua_pushnil(L);
    lua_pushliteral(L, "no request record left");
    return 2;
  }
  t->handler.co = co;
  t->handler.ref = ref;
  t->handler.unstarted = -1;
  lua_xmove(L, co, n);
  double handle = (double)mp_request_ctx(t, MP_CTX_REQ);
  if (nested_starts >= MAX_NESTED_STARTS) {
    t->handler.unstarted = n - 1;
    mp_wait_end_soon(t);
  } else {
    nested_starts++;
    int outcome = resume(vm, t, n - 1);
    nested_starts--;
    if (outcome != MP_CODE_WAITING) mp_task_end(t, outcome);
  }
  lua_pushnumber(L, handle);
  return 1;
}

/* [-1, +1|2, -] moonport.core.native.kill(handle): ends the light thread
 * the handle names, with its own threads, without resuming it. Returns
 * true; false when the thread has already ended; nil, "killer not
 * parent" when the code running now did not spawn it. */
static int native_kill(lua_State *L) {
  mp_request *t = mp_request_record(handle_of(luaL_checknumber(L, 1)));
  if (t == NULL || !t->task) {
    lua_pushboolean(L, 0);
    return 1;
  }
  mp_request *self = mp_request_current();
  if (self == NULL || t->parent != self) {
    lua_pushnil(L);
    lua_pushliteral(L, "killer not parent");
    return 2;
  }
  mp_task_kill(t);
  lua_pushboolean(L, 1);
  return 1;
}

static void close_code(void *code) { mp_vm_close(code); }

const mp_code_ops mp_vm_code_ops = {
    .start = start,
    .run_timer = run_timer,
    .resume = resume_waiting,
    .abandon = abandon,
    .hold = hold,
    .release = release,
    .close = close_code,
    .error = last_error,
    .heap_size = heap_size,
};
