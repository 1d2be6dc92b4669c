/*
 * The libFuzzer driver of the Lua-facing targets (fuzz_json,
 * fuzz_jsonpath, fuzz_template, fuzz_yaml): one LuaJIT state, made once,
 * with the moonport.json module (and, for fuzz_yaml, FUZZ_YAML,
 * moonport.yaml) compiled in and lua/ on package.path, runs the
 * target's script (FUZZ_SCRIPT). The script returns a function; every
 * input is given to it as a string in a protected call, and a Lua error
 * out of it is a failed invariant: the message and traceback are printed
 * and the run aborts, so libFuzzer keeps the input. What the modules
 * document as a normal outcome (nil and a message, a refused template)
 * the scripts check for and return from.
 *
 * The state is bounded as a request is in the server: its allocator
 * refuses past MEMORY_LIMIT (--request-memory-limit: the module raises
 * "not enough memory") and a count hook raises "fuzz: instruction budget"
 * past BUDGET virtual-machine instructions in one input
 * (--handler-timeout). The scripts take both for normal outcomes.
 *
 * Coverage: LuaJIT is not instrumented, so libFuzzer would see only the C
 * code the modules call. A line hook feeds it the Lua side too: each pair
 * of consecutive (chunk, line) points bumps a counter in libFuzzer's
 * extra-counters section, as an edge of the C code would. Hooks run in
 * the interpreter only, so the JIT is off.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "json.h"
#ifdef FUZZ_YAML
#include "yaml_module.h"
#endif

#define MEMORY_LIMIT (256u << 20)
#define BUDGET 50000000L /* instructions per input */
#define COUNT_STEP 10000

__attribute__((section("__libfuzzer_extra_counters"), used))
static uint8_t lua_edges[1 << 16];

static lua_State *L;
static int fn_ref = LUA_NOREF;
static size_t in_use;
static uintptr_t prev_point;
static long budget;
static int over;

static void *allocate(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (nsize == 0) {
    if (ptr != NULL) in_use -= osize;
    free(ptr);
    return NULL;
  }
  /* osize is the old block's size only when ptr is set. */
  size_t old = ptr != NULL ? osize : 0;
  if (nsize > old && in_use - old + nsize > MEMORY_LIMIT) return NULL;
  void *p = realloc(ptr, nsize);
  if (p != NULL) in_use = in_use - old + nsize;
  return p;
}

static void hook(lua_State *S, lua_Debug *ar) {
  if (ar->event == LUA_HOOKCOUNT) {
    budget -= COUNT_STEP;
    if (budget < 0) {
      /* The script gets a tenth more to take the error and return; past
       * that, every step raises again. */
      if (!over) budget = BUDGET / 10;
      over = 1;
      luaL_error(S, "fuzz: instruction budget");
    }
    return;
  }
  if (lua_getinfo(S, "S", ar) == 0) return;
  uintptr_t point = ((uintptr_t)ar->source >> 4) ^
                    ((uintptr_t)ar->currentline * 2654435761u);
  lua_edges[(point ^ prev_point) & (sizeof lua_edges - 1)]++;
  prev_point = point >> 1;
}

static int traceback(lua_State *S) {
  const char *msg = lua_tostring(S, 1);
  luaL_traceback(S, S, msg ? msg : "(an error that is not a string)", 1);
  return 1;
}

static void die(const char *what) {
  fprintf(stderr, "%s: %s\n", what, lua_tostring(L, -1));
  abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  L = lua_newstate(allocate, NULL);
  if (L == NULL) {
    fprintf(stderr, "no Lua state\n");
    abort();
  }
  luaL_openlibs(L);
  mp_lua_json_preload(L);
#ifdef FUZZ_YAML
  mp_lua_yaml_preload(L);
#endif
  lua_pushcfunction(L, traceback);
  if (luaL_loadstring(L,
                      "local dir = ...\n"
                      "require('jit').off()\n"
                      "package.path = dir .. '/?.lua;' .. dir .. '/?/init.lua;' .. package.path\n") != 0)
    die("the driver's prologue");
  lua_pushstring(L, FUZZ_LUA_DIR);
  if (lua_pcall(L, 1, 0, -3) != 0) die("the driver's prologue");
  if (luaL_loadfile(L, FUZZ_SCRIPT) != 0) die(FUZZ_SCRIPT);
  if (lua_pcall(L, 0, 1, -2) != 0) die(FUZZ_SCRIPT);
  if (lua_type(L, -1) != LUA_TFUNCTION) {
    fprintf(stderr, "%s does not return a function\n", FUZZ_SCRIPT);
    abort();
  }
  fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  lua_sethook(L, hook, LUA_MASKLINE | LUA_MASKCOUNT, COUNT_STEP);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  budget = BUDGET;
  over = 0;
  prev_point = 0;
  lua_pushcfunction(L, traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, fn_ref);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 0, -3) != 0) die("invariant failed");
  lua_pop(L, 1);
  return 0;
}
