/*
 * moonport.json (see json.h): JSON text to Lua values and back.
 *
 * It owns one module table per Lua state and what the table's functions
 * share as upvalues: a scratch buffer, the array marker metatable, the
 * literal number metatable and the read-only empty array's metatable.
 *
 * Invariants:
 * - A Lua error never unwinds over C memory. Text is built in the scratch
 *   buffer, which a userdata owns (its __gc frees it) and which grows
 *   through the state's own allocator, so its bytes are counted, and capped
 *   by --request-memory-limit, like any Lua allocation. It is kept between
 *   calls, up to SCRATCH_KEEP bytes, so a small encode makes exactly one
 *   Lua allocation: its result string.
 * - Tables are read raw (lua_next, lua_rawgeti): no metamethod runs, so no
 *   Lua code runs inside a call except a finalizer the garbage collector
 *   starts while the call allocates. Such a finalizer that calls encode or
 *   decode finds the scratch buffer busy and builds in one of its own
 *   (job_start), so it cannot overwrite the outer call's text.
 * - Numbers are written and read in the C locale, whatever os.setlocale
 *   did: JSON's decimal point is always '.'.
 *
 * It does not keep key order (objects come out in the table's order), does
 * not check that the strings it writes are UTF-8 (they go out byte for
 * byte; decode does check), and does not call metamethods such as __index
 * or a __tojson of any kind.
 */
#define _GNU_SOURCE /* newlocale, uselocale, strtod_l */
#include "json.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

/* Nesting deeper than this is refused both ways: it bounds the C and Lua
 * stacks a document can take, and catches a table that contains itself
 * through a path longer than the cycle check sees. */
#define MAX_DEPTH 1000
#define SCRATCH_FIRST 4096
#define SCRATCH_KEEP (64 * 1024)
/* Doubles represent every integer up to 2^53 exactly. */
#define MAX_EXACT 9007199254740992.0

/* The upvalues every function of the module has. */
enum { UV_SCRATCH = 1, UV_ARRAY_MT, UV_LITERAL_MT, UV_EMPTY_MT, NUPVALUES = 4 };
#define UPVALUE(i) lua_upvalueindex(i)

typedef struct scratch {
  char *p;
  size_t len, cap;
  int busy; /* a call is building in it */
} scratch;

/* A number kept as it was written: a userdata with literal_mt. */
typedef struct literal {
  size_t len;
  char text[];
} literal;

/* One call's hold on a buffer. */
typedef struct job {
  lua_State *L;
  scratch *b;    /* where this call builds */
  scratch *held; /* the module's buffer, when this call marked it busy */
} job;

static int l_encode(lua_State *L);
static int l_encode_buffer(lua_State *L);
static int l_decode(lua_State *L);

/* The C locale, made once per process; NULL when it cannot be had. */
static locale_t c_locale(void) {
  static locale_t loc;
  if (loc == (locale_t)0) loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  return loc;
}

/* Allocates, resizes or frees through L's allocator (never raises). */
static void *state_realloc(lua_State *L, void *p, size_t osize, size_t nsize) {
  void *ud;
  lua_Alloc alloc = lua_getallocf(L, &ud);
  return alloc(ud, p, osize, nsize);
}

/* [-0, +0, -] __gc of a scratch buffer's userdata. */
static int l_scratch_gc(lua_State *L) {
  scratch *b = lua_touserdata(L, 1);
  if (b != NULL && b->p != NULL) state_realloc(L, b->p, b->cap, 0);
  if (b != NULL) {
    b->p = NULL;
    b->cap = b->len = 0;
  }
  return 0;
}

/* Whether an encode or decode of this module is running further down L's
 * stack, under the current call: then a finalizer called us in the middle
 * of it. Only asked when the scratch buffer is marked busy. */
static int outer_call_running(lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "f", &ar)) continue;
    lua_CFunction f = lua_tocfunction(L, -1);
    lua_pop(L, 1);
    if (f == l_encode || f == l_encode_buffer || f == l_decode) return 1;
  }
  return 0;
}

/* Gives back what a large text took, down to SCRATCH_KEEP bytes. */
static void shrink(lua_State *L, scratch *b) {
  if (b->cap <= SCRATCH_KEEP) return;
  char *p = state_realloc(L, b->p, b->cap, SCRATCH_KEEP);
  if (p != NULL) {
    b->p = p;
    b->cap = SCRATCH_KEEP;
    if (b->len > SCRATCH_KEEP) b->len = SCRATCH_KEEP;
  }
}

/* [-0, +(0|1), m] Takes the module's scratch buffer for this call, or,
 * when an outer call is building in it, a new one pushed on the stack
 * (which the garbage collector frees). A busy mark with no outer call
 * behind it was left by a call that a Lua error (out of memory) ended:
 * it is taken over. */
static void job_start(job *j, lua_State *L) {
  scratch *b = lua_touserdata(L, UPVALUE(UV_SCRATCH));
  j->L = L;
  j->held = NULL;
  if (b->busy && outer_call_running(L)) {
    scratch *own = lua_newuserdata(L, sizeof *own);
    memset(own, 0, sizeof *own);
    lua_getmetatable(L, UPVALUE(UV_SCRATCH));
    lua_setmetatable(L, -2);
    j->b = own;
    return;
  }
  shrink(L, b);
  b->busy = 1;
  b->len = 0;
  j->b = b;
  j->held = b;
}

/* Ends the call's hold; with `keep`, a buffer grown past SCRATCH_KEEP
 * stays as it is until the next call's start, so that the text just built
 * there can still be read. */
static void job_end(job *j, int keep) {
  if (j->held != NULL) {
    j->held->busy = 0;
    if (!keep) shrink(j->L, j->held);
  }
  j->held = NULL;
}

/* Room for n more bytes after the buffer's length; returns where they go.
 * Raises "not enough memory" when the allocator refuses; the buffer is
 * then as it was, still owned by its userdata. */
static char *reserve(job *j, size_t n) {
  scratch *b = j->b;
  if (b->cap - b->len >= n) return b->p + b->len;
  size_t need = b->len + n;
  size_t cap = b->cap ? b->cap : SCRATCH_FIRST;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  char *p = need < n ? NULL : state_realloc(j->L, b->p, b->cap, cap);
  if (p == NULL) { /* out of memory, or a size past SIZE_MAX */
    job_end(j, 0);
    lua_pushliteral(j->L, "not enough memory");
    lua_error(j->L);
  }
  b->p = p;
  b->cap = cap;
  return p + b->len;
}

static void put(job *j, const char *s, size_t n) {
  memcpy(reserve(j, n), s, n);
  j->b->len += n;
}

static void put_char(job *j, char c) {
  *reserve(j, 1) = c;
  j->b->len++;
}

/* Writes v's decimal digits to out; returns how many. */
static size_t format_int(char *out, int64_t v) {
  char tmp[24];
  size_t n = 0, len = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0) out[len++] = '-';
  while (n > 0) out[len++] = tmp[--n];
  return len;
}

/* Writes d, a non-integer with 1e-4 <= |d| < 1e15, in the fewest fraction
 * digits whose decimal reads back as d (correctly rounded, so the same
 * text as printf's %.15g, %.16g or %.17g, whichever is the first to read
 * back), with exact integer arithmetic instead of printf and strtod.
 * Returns the length, or 0 to leave d to the printf path. out holds 32
 * bytes.
 *
 * d is M * 2^-S exactly (S > 0, as d is no integer; S <= 67 in this
 * range). With k fraction digits, the nearest decimal is D * 10^-k with D
 * = M * 10^k / 2^S rounded half to even, and it reads back as d when it
 * lies strictly inside d's rounding interval: |D * 2^S - M * 10^k| <
 * 10^k / 2. (The interval is narrower below a power of two, but here those
 * are 2^-1 to 2^-13, which are written exactly.) A decimal exactly on the
 * boundary is taken as not reading back, which can only cost a digit. 17
 * significant digits always read back, so the loop ends by then; every
 * product stays under 2^125. */
static size_t format_fixed(char *out, double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  int neg = (int)(bits >> 63);
  int exp = (int)((bits >> 52) & 0x7FF);
  uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
  int shift = 1075 - exp;
  if (exp == 0 || shift <= 0 || shift > 67) return 0;
  unsigned __int128 half = (unsigned __int128)1 << (shift - 1);
  unsigned __int128 mask = ((unsigned __int128)1 << shift) - 1;
  unsigned __int128 p = 1, n = m; /* 10^k and M * 10^k */
  for (int k = 1; k <= 21; k++) {
    p *= 10;
    n *= 10;
    unsigned __int128 q = n >> shift, r = n & mask;
    if (r > half || (r == half && (q & 1))) q++;
    unsigned __int128 at = q << shift;
    unsigned __int128 diff = at > n ? at - n : n - at;
    if (2 * diff >= p) continue;
    /* q has at most 17 digits: write them with the point k from the end. */
    char digits[24];
    int nd = 0;
    uint64_t v = (uint64_t)q;
    do {
      digits[nd++] = (char)('0' + v % 10);
      v /= 10;
    } while (v != 0);
    size_t len = 0;
    if (neg) out[len++] = '-';
    if (nd <= k) {
      out[len++] = '0';
      out[len++] = '.';
      for (int i = nd; i < k; i++) out[len++] = '0';
    }
    for (int i = nd - 1; i >= 0; i--) {
      out[len++] = digits[i];
      if (i == k && nd > k) out[len++] = '.';
    }
    return len;
  }
  return 0;
}

/* Writes d (finite) in the fewest of 15, 16 or 17 significant digits that
 * read back as d; returns the length. out holds 32 bytes. */
static size_t format_double(char *out, double d) {
  double a = fabs(d);
  if (a >= 1e-4 && a < 1e15) {
    size_t n = format_fixed(out, d);
    if (n > 0) return n;
  }
  locale_t c = c_locale();
  locale_t old = c ? uselocale(c) : (locale_t)0;
  int n = 0;
  for (int prec = 15; prec <= 17; prec++) {
    n = snprintf(out, 32, "%.*g", prec, d);
    if (prec == 17 || strtod(out, NULL) == d) break;
  }
  if (c) uselocale(old);
  return (size_t)n;
}

/* Encoding -------------------------------------------------------------- */

/* Where a nested value is, for error messages: per level, the stack slot
 * of the key being written (objects) or the index (arrays); 0 for none. */
typedef struct level {
  const void *table;
  int key;
  size_t index;
} level;

typedef struct enc {
  job j;
  int depth;
  level levels[MAX_DEPTH];
} enc;

static int is_identifier(const char *s, size_t n) {
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int alpha = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    if (!(alpha || c == '_' || (i > 0 && c >= '0' && c <= '9'))) return 0;
  }
  return 1;
}

/* The path from the encoded value to where encoding is, as Lua indexes
 * it ("value.items[2].name"), or "" at the top. */
static void describe_path(enc *e, char *out, size_t size) {
  lua_State *L = e->j.L;
  size_t n = 0;
  out[0] = '\0';
  for (int i = 0; i < e->depth && n + 1 < size; i++) {
    const level *lv = &e->levels[i];
    int w = 0;
    if (n == 0 && (lv->key || lv->index)) w = snprintf(out, size, "value");
    n += w > 0 ? (size_t)w : 0;
    if (n + 1 >= size) break;
    w = 0;
    if (lv->index) {
      w = snprintf(out + n, size - n, "[%zu]", lv->index);
    } else if (lv->key && lua_type(L, lv->key) == LUA_TSTRING) {
      size_t klen;
      const char *k = lua_tolstring(L, lv->key, &klen);
      if (is_identifier(k, klen))
        w = snprintf(out + n, size - n, ".%.*s", (int)klen, k);
      else
        w = snprintf(out + n, size - n, "[\"%.*s\"]", (int)(klen > 40 ? 40 : klen), k);
    } else if (lv->key) {
      w = snprintf(out + n, size - n, "[%.17g]", lua_tonumber(L, lv->key));
    }
    n += w > 0 ? (size_t)w : 0;
  }
  if (n >= size) n = size - 1;
  out[n] = '\0';
}

/* [-0, +1, v] Raises "json.encode: <what> at <path>". */
static int encode_error(enc *e, const char *what) {
  char path[200];
  describe_path(e, path, sizeof path);
  job_end(&e->j, 0);
  return luaL_error(e->j.L, "json.encode: %s%s%s", what, path[0] ? " at " : "",
                    path);
}

/* The escape for each byte: 0 for none, 'u' for \u00XX, else the letter
 * after the backslash. '/' is not escaped. */
static const char ESCAPE[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0,   0,   '"', 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\',
};

static void put_string(job *j, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  char *o = reserve(j, n + 2);
  *o++ = '"';
  size_t i = 0;
  for (;;) {
    size_t run = i;
    while (i < n && !ESCAPE[(unsigned char)s[i]]) i++;
    memcpy(o, s + run, i - run);
    o += i - run;
    if (i == n) break;
    /* An escape takes up to 6 bytes; the rest and the quote must fit. */
    j->b->len = (size_t)(o - j->b->p);
    o = reserve(j, 6 + (n - i - 1) + 1);
    unsigned char c = (unsigned char)s[i++];
    *o++ = '\\';
    if (ESCAPE[c] == 'u') {
      *o++ = 'u';
      *o++ = '0';
      *o++ = '0';
      *o++ = hex[c >> 4];
      *o++ = hex[c & 15];
    } else {
      *o++ = ESCAPE[c];
    }
  }
  *o++ = '"';
  j->b->len = (size_t)(o - j->b->p);
}

static void put_number(enc *e, double d) {
  char tmp[32];
  size_t n;
  if (d != d) {
    encode_error(e, "cannot encode NaN");
    return;
  }
  if (isinf(d)) {
    encode_error(e, d > 0 ? "cannot encode inf" : "cannot encode -inf");
    return;
  }
  if (d >= -MAX_EXACT && d <= MAX_EXACT && d == (double)(int64_t)d) {
    if (d == 0 && signbit(d)) {
      put(&e->j, "-0", 2);
      return;
    }
    n = format_int(tmp, (int64_t)d);
  } else {
    n = format_double(tmp, d);
  }
  put(&e->j, tmp, n);
}

/* Whether the value at idx has the metatable held in upvalue uv. */
static int has_marker(lua_State *L, int idx, int uv) {
  if (!lua_getmetatable(L, idx)) return 0;
  int same = lua_rawequal(L, -1, UPVALUE(uv));
  lua_pop(L, 1);
  return same;
}

static void encode_value(enc *e, int idx);

/* [-(0|2), +0, v] Writes the table at idx as an object: string keys as
 * they are, integer keys as their digits. With `started`, lua_next has
 * pushed the first key and value already. */
static void encode_object(enc *e, int idx, level *lv, int started) {
  lua_State *L = e->j.L;
  int first = 1;
  put_char(&e->j, '{');
  if (!started) lua_pushnil(L);
  while (started || lua_next(L, idx)) {
    started = 0;
    int key = lua_gettop(L) - 1;
    if (!first) put_char(&e->j, ',');
    first = 0;
    if (lua_type(L, key) == LUA_TSTRING) {
      size_t n;
      const char *s = lua_tolstring(L, key, &n);
      put_string(&e->j, s, n);
    } else if (lua_type(L, key) == LUA_TNUMBER) {
      double k = lua_tonumber(L, key);
      char tmp[64];
      if (!(k >= -MAX_EXACT && k <= MAX_EXACT && k == (double)(int64_t)k)) {
        snprintf(tmp, sizeof tmp, "cannot encode the number key %.17g", k);
        encode_error(e, tmp);
        return;
      }
      put_char(&e->j, '"');
      put(&e->j, tmp, format_int(tmp, (int64_t)k));
      put_char(&e->j, '"');
    } else {
      char tmp[96];
      snprintf(tmp, sizeof tmp, "cannot encode a key of type %s (keys are strings or integers)",
               lua_typename(L, lua_type(L, key)));
      encode_error(e, tmp);
      return;
    }
    put_char(&e->j, ':');
    lv->key = key;
    encode_value(e, key + 1);
    lv->key = 0;
    lua_pop(L, 1);
  }
  put_char(&e->j, '}');
}

/* [-0, +0, v] Writes the table at idx: an array when it carries the array
 * marker, or when all its keys are positive integers; an object
 * otherwise, an empty one included. */
static void encode_table(enc *e, int idx) {
  lua_State *L = e->j.L;
  const void *t = lua_topointer(L, idx);
  if (e->depth >= MAX_DEPTH) {
    encode_error(e, "tables nested more than 1000 deep");
    return;
  }
  for (int i = 0; i < e->depth; i++) {
    if (e->levels[i].table == t) {
      encode_error(e, "a table that contains itself");
      return;
    }
  }
  if (!lua_checkstack(L, 4)) {
    encode_error(e, "tables nested too deep for the Lua stack");
    return;
  }
  level *lv = &e->levels[e->depth++];
  lv->table = t;
  lv->key = 0;
  lv->index = 0;

  int marked = 0;
  if (lua_getmetatable(L, idx)) {
    if (lua_rawequal(L, -1, UPVALUE(UV_EMPTY_MT))) {
      lua_pop(L, 1);
      put(&e->j, "[]", 2);
      e->depth--;
      return;
    }
    marked = lua_rawequal(L, -1, UPVALUE(UV_ARRAY_MT));
    lua_pop(L, 1);
  }
  if (!marked) {
    /* The first key decides most tables at once: a string key makes an
     * object, and no key an empty object. */
    lua_pushnil(L);
    if (!lua_next(L, idx)) {
      put(&e->j, "{}", 2);
      e->depth--;
      return;
    }
    if (lua_type(L, -2) == LUA_TSTRING) {
      encode_object(e, idx, lv, 1);
      e->depth--;
      return;
    }
    lua_pop(L, 2);
  }

  /* An array if every key is a positive integer. */
  size_t count = 0;
  double max = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    double k = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
    if (!(k >= 1 && k <= MAX_EXACT && k == floor(k))) {
      if (marked) {
        char tmp[120];
        if (lua_type(L, -1) == LUA_TSTRING)
          snprintf(tmp, sizeof tmp, "an array (json.array) with the key \"%.40s\"",
                   lua_tostring(L, -1));
        else if (lua_type(L, -1) == LUA_TNUMBER)
          snprintf(tmp, sizeof tmp, "an array (json.array) with the key %.17g", k);
        else
          snprintf(tmp, sizeof tmp, "an array (json.array) with a key of type %s",
                   lua_typename(L, lua_type(L, -1)));
        encode_error(e, tmp);
        return;
      }
      lua_pop(L, 1);
      encode_object(e, idx, lv, 0);
      e->depth--;
      return;
    }
    count++;
    if (k > max) max = k;
  }
  /* Holes are written as null, as long as they do not outnumber the
   * items (lua-cjson's rule): {[1000000] = 1} is refused, not a megabyte
   * of nulls. */
  if (max > 10 && max > 2.0 * (double)count) {
    char tmp[120];
    snprintf(tmp, sizeof tmp,
             "an excessively sparse array (highest index %.0f, %zu items)", max,
             count);
    encode_error(e, tmp);
    return;
  }
  size_t n = (size_t)max;
  put_char(&e->j, '[');
  for (size_t i = 1; i <= n; i++) {
    if (i > 1) put_char(&e->j, ',');
    lv->index = i;
    lua_rawgeti(L, idx, (int)i);
    encode_value(e, lua_gettop(L));
    lua_pop(L, 1);
  }
  lv->index = 0;
  put_char(&e->j, ']');
  e->depth--;
}

/* [-0, +0, v] Writes the value at idx. */
static void encode_value(enc *e, int idx) {
  lua_State *L = e->j.L;
  char tmp[64];
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    put_string(&e->j, s, n);
    return;
  }
  case LUA_TNUMBER:
    put_number(e, lua_tonumber(L, idx));
    return;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx))
      put(&e->j, "true", 4);
    else
      put(&e->j, "false", 5);
    return;
  case LUA_TNIL:
    put(&e->j, "null", 4);
    return;
  case LUA_TTABLE:
    encode_table(e, idx);
    return;
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, idx) == NULL) {
      put(&e->j, "null", 4);
      return;
    }
    break;
  case LUA_TUSERDATA:
    if (has_marker(L, idx, UV_LITERAL_MT)) {
      const literal *l = lua_touserdata(L, idx);
      put(&e->j, l->text, l->len);
      return;
    }
    break;
  default:
    break;
  }
  snprintf(tmp, sizeof tmp, "cannot encode a %s", lua_typename(L, lua_type(L, idx)));
  encode_error(e, tmp);
}

/* [-(0|n), +(0|1), v] Encodes argument 1, the only one kept, into the
 * call's buffer, which e's job still holds afterwards. */
static void encode_into(lua_State *L, enc *e) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  e->depth = 0;
  job_start(&e->j, L);
  encode_value(e, 1);
}

/* [-1, +1, v] json.encode(value): the JSON text of value. Raises on what
 * JSON cannot hold: a function, userdata, a cycle, NaN or inf, a key that
 * is neither a string nor an integer, nesting past 1000. */
static int l_encode(lua_State *L) {
  enc e;
  encode_into(L, &e);
  lua_pushlstring(L, e.j.b->p, e.j.b->len);
  job_end(&e.j, 0);
  return 1;
}

/* [-1, +2, v] json._encode_buffer(value): as json.encode, but returns the
 * text as a light userdata pointing into the scratch buffer, and its
 * length, so that res:json (lua/moonport/core/response.lua) can copy it
 * into a response through the FFI without making a Lua string. The
 * pointer is good until the next call of this module in the state;
 * nothing allocates in between there. A call nested in another (a
 * finalizer's) returns a string instead. */
static int l_encode_buffer(lua_State *L) {
  enc e;
  encode_into(L, &e);
  if (e.j.held == NULL)
    lua_pushlstring(L, e.j.b->p, e.j.b->len);
  else
    lua_pushlightuserdata(L, e.j.b->p);
  lua_pushnumber(L, (lua_Number)e.j.b->len);
  job_end(&e.j, 1);
  return 2;
}

/* Decoding -------------------------------------------------------------- */

typedef struct dec {
  job j;
  const char *start, *p, *end;
  int depth;
  int literals;
  const char *what; /* the failure, at `at` */
  const char *at;
  int show_found;   /* add what was found at `at` */
} dec;

/* Records a failure; returns -1 for the callers to pass up. */
static int fail(dec *d, const char *at, const char *what, int show_found) {
  d->at = at;
  d->what = what;
  d->show_found = show_found;
  return -1;
}

static const char *skip_space(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* The end of the JSON number that starts at p, or NULL (with *why) when
 * none does. *plain: an integer of at most 15 digits, which a double
 * holds exactly. */
static const char *scan_number(const char *p, const char *end, int *plain,
                               const char **why) {
  const char *s = p;
  *why = "invalid number";
  if (p < end && *p == '-') p++;
  if (p == end || !is_digit(*p)) return NULL;
  if (*p == '0') {
    p++;
    if (p < end && is_digit(*p)) {
      *why = "invalid number (a leading zero)";
      return NULL;
    }
  } else {
    while (p < end && is_digit(*p)) p++;
  }
  *plain = p - s - (*s == '-') <= 15;
  if (p < end && *p == '.') {
    p++;
    if (p == end || !is_digit(*p)) return NULL;
    while (p < end && is_digit(*p)) p++;
    *plain = 0;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p == end || !is_digit(*p)) return NULL;
    while (p < end && is_digit(*p)) p++;
    *plain = 0;
  }
  return p;
}

/* [-0, +1, m] A literal number object holding s. */
static void push_literal(lua_State *L, const char *s, size_t n) {
  literal *l = lua_newuserdata(L, sizeof *l + n);
  l->len = n;
  memcpy(l->text, s, n);
  lua_pushvalue(L, UPVALUE(UV_LITERAL_MT));
  lua_setmetatable(L, -2);
}

/* [-0, +(0|1), m] */
static int parse_number(dec *d) {
  int plain = 0;
  const char *why;
  const char *s = d->p, *e = scan_number(s, d->end, &plain, &why);
  if (e == NULL) return fail(d, s, why, 0);
  d->p = e;
  if (d->literals) {
    push_literal(d->j.L, s, (size_t)(e - s));
    return 0;
  }
  double v;
  if (plain) {
    int64_t n = 0;
    for (const char *q = s + (*s == '-'); q < e; q++) n = n * 10 + (*q - '0');
    v = *s == '-' ? -(double)n : (double)n;
  } else {
    char *stop;
    locale_t c = c_locale();
    v = c ? strtod_l(s, &stop, c) : strtod(s, &stop);
    if (stop != e) return fail(d, s, "invalid number", 0);
    if (isinf(v)) return fail(d, s, "number out of range", 0);
  }
  lua_pushnumber(d->j.L, v);
  return 0;
}

/* The length of the valid UTF-8 sequence at p, whose first byte is 0x80
 * or more, or 0 (overlong forms, surrogates and code points past
 * U+10FFFF are invalid). */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0];
  size_t left = (size_t)(end - p);
  if (c < 0xC2 || c > 0xF4) return 0;
  if (c < 0xE0) return left >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c < 0xF0) {
    if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) return 0;
    return 3;
  }
  if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
      (p[3] & 0xC0) != 0x80)
    return 0;
  if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) return 0;
  return 4;
}

static long hex4(const char *p, const char *end) {
  long v = 0;
  if (end - p < 4) return -1;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int x = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (x < 0) return -1;
    v = v * 16 + x;
  }
  return v;
}

static void put_utf8(job *j, unsigned long cp) {
  char *o = reserve(j, 4);
  size_t n;
  if (cp < 0x80) {
    o[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  j->b->len += n;
}

/* [-0, +(0|1), m] The rest of a string from q, the first backslash,
 * unescaped into the scratch buffer (which then holds s..q first). */
static int parse_escaped(dec *d, const char *s, const char *q) {
  const char *end = d->end;
  job *j = &d->j;
  j->b->len = 0;
  put(j, s, (size_t)(q - s));
  for (;;) {
    const char *run = q;
    while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) {
      if ((unsigned char)*q < 0x80) {
        q++;
        continue;
      }
      size_t n = utf8_sequence((const unsigned char *)q, (const unsigned char *)end);
      if (n == 0) return fail(d, q, "invalid UTF-8 in a string", 0);
      q += n;
    }
    put(j, run, (size_t)(q - run));
    if (q == end) return fail(d, s - 1, "unterminated string", 0);
    if (*q == '"') break;
    if (*q != '\\') return fail(d, q, "control character in a string (it must be escaped)", 0);
    if (q + 1 == end) return fail(d, s - 1, "unterminated string", 0);
    char c = q[1], out;
    switch (c) {
    case '"': out = '"'; break;
    case '\\': out = '\\'; break;
    case '/': out = '/'; break;
    case 'b': out = '\b'; break;
    case 'f': out = '\f'; break;
    case 'n': out = '\n'; break;
    case 'r': out = '\r'; break;
    case 't': out = '\t'; break;
    case 'u': {
      long cp = hex4(q + 2, end);
      if (cp < 0) return fail(d, q, "invalid \\u escape (it takes four hex digits)", 0);
      if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(d, q, "invalid \\u escape (a low surrogate without a high one)", 0);
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        long lo = q + 7 < end && q[6] == '\\' && q[7] == 'u' ? hex4(q + 8, end) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF)
          return fail(d, q, "invalid \\u escape (a high surrogate without a low one)", 0);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        q += 6;
      }
      put_utf8(j, (unsigned long)cp);
      q += 6;
      continue;
    }
    default:
      return fail(d, q, "invalid escape", 0);
    }
    put_char(j, out);
    q += 2;
  }
  lua_pushlstring(j->L, j->b->p, j->b->len);
  d->p = q + 1;
  return 0;
}

/* [-0, +(0|1), m] The string whose opening quote is at d->p. Strings
 * without escapes are pushed straight from the text. */
static int parse_string(dec *d) {
  const char *s = d->p + 1, *q = s, *end = d->end;
  for (;;) {
    if (q == end) return fail(d, d->p, "unterminated string", 0);
    unsigned char c = (unsigned char)*q;
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      q++;
      continue;
    }
    if (c == '"') break;
    if (c == '\\') return parse_escaped(d, s, q);
    if (c < 0x20) return fail(d, q, "control character in a string (it must be escaped)", 0);
    size_t n = utf8_sequence((const unsigned char *)q, (const unsigned char *)end);
    if (n == 0) return fail(d, q, "invalid UTF-8 in a string", 0);
    q += n;
  }
  lua_pushlstring(d->j.L, s, (size_t)(q - s));
  d->p = q + 1;
  return 0;
}

static int parse_value(dec *d);

/* Enters the object or array whose opening bracket is at d->p, closed by
 * `close`: checks depth and stack room. Returns 1 when it is empty (and
 * now left), 0 when an item follows, -1 on failure. */
static int enter(dec *d, char close) {
  if (++d->depth > MAX_DEPTH)
    return fail(d, d->p, "nested more than 1000 deep", 0);
  if (!lua_checkstack(d->j.L, 4))
    return fail(d, d->p, "nested too deep for the Lua stack", 0);
  d->p = skip_space(d->p + 1, d->end);
  if (d->p == d->end || *d->p != close) return 0;
  d->p++;
  d->depth--;
  return 1;
}

/* After an item: 1 when a comma (another item) follows, 0 at `close` (the
 * object or array is left), -1 otherwise. */
static int next_item(dec *d, char close, const char *expected) {
  d->p = skip_space(d->p, d->end);
  if (d->p < d->end && *d->p == ',') {
    d->p++;
    return 1;
  }
  if (d->p == d->end || *d->p != close) return fail(d, d->p, expected, 1);
  d->p++;
  d->depth--;
  return 0;
}

/* [-0, +(0|1), m] */
static int parse_object(dec *d) {
  lua_State *L = d->j.L;
  int rc = enter(d, '}');
  if (rc < 0) return -1;
  lua_newtable(L);
  if (rc == 1) return 0;
  do {
    d->p = skip_space(d->p, d->end);
    if (d->p == d->end || *d->p != '"') return fail(d, d->p, "expected a string key", 1);
    if (parse_string(d) != 0) return -1;
    d->p = skip_space(d->p, d->end);
    if (d->p == d->end || *d->p != ':') return fail(d, d->p, "expected ':' after the key", 1);
    d->p++;
    if (parse_value(d) != 0) return -1;
    lua_rawset(L, -3);
  } while ((rc = next_item(d, '}', "expected ',' or '}'")) > 0);
  return rc;
}

/* [-0, +(0|1), m] An array, marked with array_mt. */
static int parse_array(dec *d) {
  lua_State *L = d->j.L;
  int rc = enter(d, ']');
  if (rc < 0) return -1;
  lua_newtable(L);
  lua_pushvalue(L, UPVALUE(UV_ARRAY_MT));
  lua_setmetatable(L, -2);
  if (rc == 1) return 0;
  int n = 0;
  do {
    if (parse_value(d) != 0) return -1;
    lua_rawseti(L, -2, ++n);
  } while ((rc = next_item(d, ']', "expected ',' or ']'")) > 0);
  return rc;
}

static int keyword(dec *d, const char *word, size_t n) {
  if ((size_t)(d->end - d->p) < n || memcmp(d->p, word, n) != 0)
    return fail(d, d->p, "expected a value", 1);
  d->p += n;
  return 0;
}

/* [-0, +(0|1), m] The value at d->p, after any white space. */
static int parse_value(dec *d) {
  lua_State *L = d->j.L;
  d->p = skip_space(d->p, d->end);
  if (d->p == d->end) return fail(d, d->p, "expected a value", 1);
  switch (*d->p) {
  case '{':
    return parse_object(d);
  case '[':
    return parse_array(d);
  case '"':
    return parse_string(d);
  case 't':
    if (keyword(d, "true", 4) != 0) return -1;
    lua_pushboolean(L, 1);
    return 0;
  case 'f':
    if (keyword(d, "false", 5) != 0) return -1;
    lua_pushboolean(L, 0);
    return 0;
  case 'n':
    if (keyword(d, "null", 4) != 0) return -1;
    lua_pushlightuserdata(L, NULL);
    return 0;
  default:
    if (*d->p == '-' || is_digit(*d->p)) return parse_number(d);
    return fail(d, d->p, "expected a value", 1);
  }
}

/* [-0, +2, m] Pushes nil and the failure: "<what> at byte N[, found X]",
 * N counted from 0. */
static int decode_error(dec *d) {
  char found[40] = "";
  size_t offset = (size_t)(d->at - d->start);
  if (d->show_found) {
    unsigned char c = d->at < d->end ? (unsigned char)*d->at : 0;
    if (d->at >= d->end)
      snprintf(found, sizeof found, ", found the end of the text");
    else if (c >= 0x20 && c < 0x7F)
      snprintf(found, sizeof found, ", found '%c'", c);
    else
      snprintf(found, sizeof found, ", found byte 0x%02x", c);
  }
  char msg[160];
  snprintf(msg, sizeof msg, "%s at byte %zu%s", d->what, offset, found);
  lua_pushnil(d->j.L);
  lua_pushstring(d->j.L, msg);
  return 2;
}

/* [-(1|2), +(1|2), m] json.decode(text[, opts]): the value, or nil and a
 * message with the byte offset. opts.literals keeps numbers as literal
 * objects. */
static int l_decode(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING) return luaL_typerror(L, 1, "string");
  int literals = 0;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "literals");
    literals = lua_toboolean(L, -1);
  }
  lua_settop(L, 1);
  size_t len;
  const char *text = lua_tolstring(L, 1, &len);
  dec d = {.start = text, .p = text, .end = text + len, .literals = literals};
  job_start(&d.j, L);
  int base = lua_gettop(L);
  int rc = parse_value(&d);
  if (rc == 0) {
    d.p = skip_space(d.p, d.end);
    if (d.p != d.end) rc = fail(&d, d.p, "expected the end of the text after the value", 1);
  }
  job_end(&d.j, 0);
  if (rc == 0) return 1;
  lua_settop(L, base);
  return decode_error(&d);
}

/* The rest of the module --------------------------------------------------- */

/* [-(0|1), +1, v] json.array([t]): marks t (or a new table) as an array,
 * so it is written as [...] even when empty; returns it. Raises for a
 * table with a metatable of its own. */
static int l_array(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_newtable(L);
  } else {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    if (lua_getmetatable(L, 1)) {
      if (lua_rawequal(L, -1, UPVALUE(UV_ARRAY_MT)) ||
          lua_rawequal(L, -1, UPVALUE(UV_EMPTY_MT))) {
        lua_settop(L, 1);
        return 1;
      }
      return luaL_error(L, "json.array: the table already has a metatable of its own");
    }
  }
  lua_pushvalue(L, UPVALUE(UV_ARRAY_MT));
  lua_setmetatable(L, -2);
  return 1;
}

/* [-1, +1, v] json.literal(text): a number that json.encode writes as
 * text, which must be a JSON number. */
static int l_literal(lua_State *L) {
  size_t n;
  int plain;
  const char *why;
  const char *s = luaL_checklstring(L, 1, &n);
  if (scan_number(s, s + n, &plain, &why) != s + n)
    return luaL_argerror(L, 1, "not a JSON number");
  push_literal(L, s, n);
  return 1;
}

/* [-1, +1, m] __tostring of a literal: its text. */
static int l_literal_tostring(lua_State *L) {
  const literal *l = lua_touserdata(L, 1);
  lua_pushlstring(L, l->text, l->len);
  return 1;
}

/* [-3, +0, v] __newindex of json.empty_array. */
static int l_empty_newindex(lua_State *L) {
  return luaL_error(L, "json.empty_array is read-only (json.array() makes an array to fill)");
}

int luaopen_moonport_json(lua_State *L) {
  static const luaL_Reg functions[] = {
      {"encode", l_encode},   {"decode", l_decode},
      {"array", l_array},     {"literal", l_literal},
      {"_encode_buffer", l_encode_buffer}, {NULL, NULL},
  };
  lua_createtable(L, 0, 10);
  int module = lua_gettop(L);

  scratch *b = lua_newuserdata(L, sizeof *b);
  memset(b, 0, sizeof *b);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, l_scratch_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  b->p = state_realloc(L, NULL, 0, SCRATCH_FIRST);
  b->cap = b->p != NULL ? SCRATCH_FIRST : 0;

  lua_newtable(L); /* array_mt */
  lua_createtable(L, 0, 1); /* literal_mt */
  lua_pushcfunction(L, l_literal_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_createtable(L, 0, 1); /* empty_array's */
  lua_pushcfunction(L, l_empty_newindex);
  lua_setfield(L, -2, "__newindex");

  for (const luaL_Reg *f = functions; f->name != NULL; f++) {
    for (int i = 1; i <= NUPVALUES; i++) lua_pushvalue(L, module + i);
    lua_pushcclosure(L, f->func, NUPVALUES);
    lua_setfield(L, module, f->name);
  }
  lua_pushvalue(L, module + UV_ARRAY_MT);
  lua_setfield(L, module, "array_mt");
  lua_pushvalue(L, module + UV_LITERAL_MT);
  lua_setfield(L, module, "literal_mt");
  lua_newtable(L);
  lua_pushvalue(L, module + UV_EMPTY_MT);
  lua_setmetatable(L, -2);
  lua_setfield(L, module, "empty_array");
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, module, "null");
  lua_settop(L, module);
  return 1;
}

void mp_lua_json_preload(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_moonport_json);
  lua_setfield(L, -2, "moonport.json");
  lua_pop(L, 2);
}
