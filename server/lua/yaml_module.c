/*
 * moonport.yaml (see yaml_module.h): YAML text to Lua values.
 *
 * libyaml's event parser reads the text; this file builds the tables as
 * the events come, on the Lua stack: a container stays on the stack while
 * it fills, with the key waiting for its value above it, and a value that
 * is done goes into the container below it. A frame per open container
 * (in the parser's userdata) says whether it is a sequence or a mapping,
 * how many items it has and whether a key is waiting.
 *
 * Scalars are read by YAML 1.2's core schema, the one OpenAPI tools and
 * JavaScript's YAML parsers use: a plain null, ~ or nothing is null; true
 * and false (in three casings) are booleans; decimal, 0o octal and 0x hex
 * integers and decimal floats (.inf and .nan too) are numbers; everything
 * else, and every quoted or block scalar, is a string. An explicit !!str,
 * !!int, !!float, !!bool or !!null tag decides instead. Keys are always
 * strings, as JSON's are (`200:` is the key "200"), so a document reads
 * the same from YAML and from JSON. An alias is the anchored value itself
 * (one table, shared, so a recursive document makes a cycle); the merge
 * key << copies the entries the mapping does not set from the mapping (or
 * each mapping of the sequence) after it; after it anything else, << is
 * an ordinary key.
 * Only the first document of a stream is read.
 *
 * Invariants:
 * - A Lua error never leaks C memory: the parser and the event in hand
 *   live in a userdata whose __gc frees them, so an allocation that fails
 *   (past --load-memory-limit, say) unwinds cleanly.
 * - Nesting is bounded (MAX_DEPTH), and so is the Lua stack it takes.
 * - Numbers are read in the C locale, whatever os.setlocale did.
 */
#define _GNU_SOURCE /* newlocale, strtod_l */
#include "yaml_module.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <yaml.h>

#define MAX_DEPTH 1000
#define TAG_PREFIX "tag:yaml.org,2002:"

enum { UV_ARRAY_MT = 1, UV_PARSER_MT };

typedef struct frame {
  char mapping;   /* else a sequence */
  char key_ready; /* a mapping's key is on the stack above it */
  int n;          /* a sequence's items so far */
} frame;

typedef struct parser {
  yaml_parser_t p;
  yaml_event_t ev;
  int ready;  /* p is initialized */
  int has_ev; /* ev holds an event to delete */
  int depth;
  int orders; /* the stack index of the key-order table, or 0 */
  frame frames[MAX_DEPTH];
} parser;

static int l_parser_gc(lua_State *L) {
  parser *y = lua_touserdata(L, 1);
  if (y->has_ev) yaml_event_delete(&y->ev);
  if (y->ready) yaml_parser_delete(&y->p);
  y->has_ev = y->ready = 0;
  return 0;
}

static locale_t c_locale(void) {
  static locale_t loc;
  if (loc == (locale_t)0) loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  return loc;
}

static int is_one_of(const char *s, size_t n, const char *const *words) {
  for (; *words != NULL; words++)
    if (strlen(*words) == n && memcmp(s, *words, n) == 0) return 1;
  return 0;
}

static int all_digits(const char *s, size_t n, int base) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = base == 8    ? c >= '0' && c <= '7'
             : base == 16 ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                                (c >= 'A' && c <= 'F')
                          : c >= '0' && c <= '9';
    if (!ok) return 0;
  }
  return 1;
}

/* Whether s is a core-schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)
 * ([eE][-+]?[0-9]+)?, integers included. */
static int is_decimal(const char *s, size_t n) {
  size_t i = 0, digits = 0;
  if (i < n && (s[i] == '-' || s[i] == '+')) i++;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
  }
  if (digits == 0) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    size_t exp = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, exp++;
    if (exp == 0) return 0;
  }
  return i == n;
}

/* [-0, +1, m] Pushes a number for s, if s is one by the core schema. */
static int push_number(lua_State *L, const char *s, size_t n) {
  static const char *const inf[] = {".inf", ".Inf", ".INF", NULL};
  static const char *const nan[] = {".nan", ".NaN", ".NAN", NULL};
  const char *d = s;
  size_t dn = n;
  int negative = 0;
  if (dn > 0 && (d[0] == '-' || d[0] == '+')) negative = d[0] == '-', d++, dn--;
  if (is_one_of(d, dn, inf)) {
    lua_pushnumber(L, negative ? -HUGE_VAL : HUGE_VAL);
    return 1;
  }
  if (n == dn && is_one_of(s, n, nan)) {
    lua_pushnumber(L, NAN);
    return 1;
  }
  if (n > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    int base = s[1] == 'o' ? 8 : 16;
    if (!all_digits(s + 2, n - 2, base)) return 0;
    double v = 0;
    for (size_t i = 2; i < n; i++) {
      char c = s[i];
      int digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
      v = v * base + digit;
    }
    lua_pushnumber(L, v);
    return 1;
  }
  if (!is_decimal(s, n)) return 0;
  char buf[64];
  if (n >= sizeof buf) return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  lua_pushnumber(L, strtod_l(buf, NULL, c_locale()));
  return 1;
}

/* [-0, +1, m] Pushes a scalar's value: its tag's type, else the core
 * schema's for a plain one, else a string. A key is always a string. */
static int push_scalar(lua_State *L, const yaml_event_t *ev, int key) {
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", NULL};
  static const char *const falses[] = {"false", "False", "FALSE", NULL};
  const char *s = (const char *)ev->data.scalar.value;
  size_t n = ev->data.scalar.length;
  const char *tag = (const char *)ev->data.scalar.tag;
  const char *kind = NULL; /* str, int, float, bool, null, or NULL: resolve */
  if (tag != NULL && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0)
    kind = tag + strlen(TAG_PREFIX);
  else if (tag != NULL || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    kind = "str";
  if (key || (kind != NULL && strcmp(kind, "str") == 0)) {
    lua_pushlstring(L, s, n);
    return 0;
  }
  int any = kind == NULL;
  if ((any || strcmp(kind, "null") == 0) && is_one_of(s, n, nulls)) {
    lua_pushlightuserdata(L, NULL); /* json.null */
  } else if ((any || strcmp(kind, "bool") == 0) && is_one_of(s, n, trues)) {
    lua_pushboolean(L, 1);
  } else if ((any || strcmp(kind, "bool") == 0) && is_one_of(s, n, falses)) {
    lua_pushboolean(L, 0);
  } else if ((any || strcmp(kind, "int") == 0 || strcmp(kind, "float") == 0) &&
             push_number(L, s, n)) {
    /* pushed */
  } else if (!any) {
    return -1; /* a tag the text does not fit */
  } else {
    lua_pushlstring(L, s, n);
  }
  return 0;
}

/* [-1, +0, e] Raises "line L column C: what". */
static int fail_at(lua_State *L, const yaml_mark_t *mark, const char *what) {
  return luaL_error(L, "line %d column %d: %s", (int)mark->line + 1,
                    (int)mark->column + 1, what);
}

/* [-0, +1, e] Pushes the anchored value an alias names. */
static void push_alias(lua_State *L, int anchors, const yaml_event_t *ev) {
  lua_getfield(L, anchors, (const char *)ev->data.alias.anchor);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushfstring(L, "the alias *%s names no anchor before it",
                    (const char *)ev->data.alias.anchor);
    fail_at(L, &ev->start_mark, lua_tostring(L, -1));
  }
}

/* [-0, +0, e] With key order asked for: appends the key at index k to
 * the order list of the mapping at index map, unless the mapping has it. */
static void note_key(lua_State *L, parser *y, int map, int k) {
  if (y->orders == 0) return;
  lua_pushvalue(L, k);
  lua_rawget(L, map);
  int had = !lua_isnil(L, -1);
  lua_pop(L, 1);
  if (had) return;
  lua_pushvalue(L, map);
  lua_rawget(L, y->orders);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, map);
    lua_pushvalue(L, -2);
    lua_rawset(L, y->orders);
  }
  lua_pushvalue(L, k);
  lua_rawseti(L, -2, (int)lua_objlen(L, -2) + 1);
  lua_pop(L, 1);
}

/* Whether the value at idx is a mapping: a table without the array
 * marker. */
static int is_mapping(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  if (!lua_getmetatable(L, idx)) return 1;
  int marked = lua_rawequal(L, -1, lua_upvalueindex(UV_ARRAY_MT));
  lua_pop(L, 1);
  return !marked;
}

/* Whether the value at idx can follow the merge key: a mapping, or a
 * sequence of mappings. Anything else makes << an ordinary key. */
static int merge_source(lua_State *L, int idx) {
  if (is_mapping(L, idx)) return 1;
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  int n = (int)lua_objlen(L, idx);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    int ok = is_mapping(L, -1);
    lua_pop(L, 1);
    if (!ok) return 0;
  }
  return 1;
}

/* [-0, +0, e] Copies the entries of the mapping at from that the mapping
 * at into does not set (in from's order when keys are ordered). */
static void merge_mapping(lua_State *L, parser *y, int into, int from) {
  int top = lua_gettop(L);
  int keys = 0;
  if (y->orders != 0) {
    lua_pushvalue(L, from);
    lua_rawget(L, y->orders);
    keys = lua_gettop(L);
    if (lua_isnil(L, -1)) keys = 0; /* an empty mapping */
  }
  int i = 0;
  lua_pushnil(L);
  for (;;) {
    if (keys != 0) {
      lua_pop(L, 1);
      lua_rawgeti(L, keys, ++i);
      if (lua_isnil(L, -1)) break;
      lua_pushvalue(L, -1);
      lua_rawget(L, from);
    } else if (lua_next(L, from) == 0) {
      break;
    }
    lua_pushvalue(L, -2);
    lua_rawget(L, into);
    int unset = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (unset) {
      note_key(L, y, into, lua_gettop(L) - 1);
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, into);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
}

/* [-(1|2), +0, e] The value on top is done: into its container (a key
 * waits for its value; a value goes in under its key), else it is the
 * document, left where it is. */
static void put_value(lua_State *L, parser *y, const yaml_mark_t *mark) {
  if (y->depth == 0) return;
  frame *f = &y->frames[y->depth - 1];
  if (!f->mapping) {
    lua_rawseti(L, -2, ++f->n);
    return;
  }
  if (!f->key_ready) {
    if (lua_type(L, -1) != LUA_TSTRING) fail_at(L, mark, "a key must be a scalar");
    f->key_ready = 1;
    return;
  }
  f->key_ready = 0;
  size_t klen;
  const char *k = lua_tolstring(L, -2, &klen);
  int merge = klen == 2 && memcmp(k, "<<", 2) == 0 && merge_source(L, lua_gettop(L));
  if (!merge) {
    note_key(L, y, lua_gettop(L) - 2, lua_gettop(L) - 1);
  } else {
    /* The merge key: the aliased mapping's entries (of each mapping of a
     * sequence, the earlier first), where unset. */
    int from = lua_gettop(L), into = from - 2;
    if (is_mapping(L, from)) {
      merge_mapping(L, y, into, from);
    } else {
      for (int i = 1;; i++) {
        lua_rawgeti(L, from, i);
        if (lua_isnil(L, -1)) break;
        merge_mapping(L, y, into, lua_gettop(L));
        lua_pop(L, 1);
      }
    }
    lua_settop(L, into);
    return;
  }
  lua_rawset(L, -3);
}

/* [-0, +0, e] Records the value on top under the event's anchor. */
static void anchor(lua_State *L, int anchors, const yaml_char_t *name) {
  if (name == NULL) return;
  lua_pushvalue(L, -1);
  lua_setfield(L, anchors, (const char *)name);
}

/* [-2, +(1|2), e] decode(text, key_order): the first document's value
 * (and with key_order, a table giving each mapping's keys in the order
 * the text has them), or nil and "line L column C: what is wrong". */
static int decode(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  int key_order = lua_toboolean(L, 2);
  lua_settop(L, 1);
  parser *y = lua_newuserdata(L, sizeof *y);
  memset(y, 0, sizeof *y);
  /* The metatable (its __gc frees the parser when an error leaves it
   * initialized) goes on the userdata, before anything is pushed above. */
  lua_pushvalue(L, lua_upvalueindex(UV_PARSER_MT));
  lua_setmetatable(L, -2);
  if (key_order) {
    lua_newtable(L);
    y->orders = lua_gettop(L);
  }
  if (!yaml_parser_initialize(&y->p)) return luaL_error(L, "out of memory");
  y->ready = 1;
  yaml_parser_set_input_string(&y->p, (const unsigned char *)text, len);
  lua_newtable(L);
  int anchors = lua_gettop(L);
  int have_root = 0;
  for (;;) {
    if (!yaml_parser_parse(&y->p, &y->ev)) {
      const char *problem = y->p.problem ? y->p.problem : "not YAML";
      if (y->p.context != NULL) {
        lua_pushfstring(L, "%s %s", problem, y->p.context);
        problem = lua_tostring(L, -1);
      }
      return fail_at(L, &y->p.problem_mark, problem);
    }
    y->has_ev = 1;
    yaml_event_t *ev = &y->ev;
    int done = 0;
    switch (ev->type) {
    case YAML_DOCUMENT_END_EVENT:
    case YAML_STREAM_END_EVENT:
      done = 1;
      break;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
      if (y->depth == MAX_DEPTH) fail_at(L, &ev->start_mark, "nested too deep");
      int mapping = ev->type == YAML_MAPPING_START_EVENT;
      frame *parent = y->depth > 0 ? &y->frames[y->depth - 1] : NULL;
      if (parent != NULL && parent->mapping && !parent->key_ready)
        fail_at(L, &ev->start_mark, "a key must be a scalar");
      luaL_checkstack(L, 4, "nested too deep");
      lua_newtable(L);
      if (!mapping) {
        lua_pushvalue(L, lua_upvalueindex(UV_ARRAY_MT));
        lua_setmetatable(L, -2);
      }
      anchor(L, anchors, mapping ? ev->data.mapping_start.anchor
                                 : ev->data.sequence_start.anchor);
      y->frames[y->depth++] = (frame){.mapping = (char)mapping};
      break;
    }
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
      y->depth--;
      put_value(L, y, &ev->start_mark);
      have_root = have_root || y->depth == 0;
      break;
    case YAML_SCALAR_EVENT: {
      frame *f = y->depth > 0 ? &y->frames[y->depth - 1] : NULL;
      int key = f != NULL && f->mapping && !f->key_ready;
      if (push_scalar(L, ev, key) != 0) {
        lua_pushfstring(L, "%s does not fit its tag %s",
                        (const char *)ev->data.scalar.value,
                        (const char *)ev->data.scalar.tag);
        fail_at(L, &ev->start_mark, lua_tostring(L, -1));
      }
      anchor(L, anchors, ev->data.scalar.anchor);
      put_value(L, y, &ev->start_mark);
      have_root = have_root || y->depth == 0;
      break;
    }
    case YAML_ALIAS_EVENT: {
      frame *f = y->depth > 0 ? &y->frames[y->depth - 1] : NULL;
      push_alias(L, anchors, ev);
      if (f != NULL && f->mapping && !f->key_ready && !lua_isstring(L, -1))
        fail_at(L, &ev->start_mark, "a key must be a scalar");
      put_value(L, y, &ev->start_mark);
      have_root = have_root || y->depth == 0;
      break;
    }
    default:
      break;
    }
    yaml_event_delete(ev);
    y->has_ev = 0;
    if (done) break;
  }
  yaml_parser_delete(&y->p);
  y->ready = 0;
  if (!have_root) {
    lua_pushnil(L);
    lua_pushliteral(L, "line 1 column 1: the text holds no YAML document");
    return 2;
  }
  if (y->orders == 0) return 1;
  lua_pushvalue(L, y->orders);
  return 2;
}

/* [-(1|2), +(1|2), -] decode(text[, opts]), its errors returned rather
 * than raised; opts.key_order asks for the key-order table. An
 * allocation past the memory limit still raises, as everywhere. */
static int l_decode(lua_State *L) {
  luaL_checkstring(L, 1);
  int key_order = 0;
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_getfield(L, 2, "key_order");
    key_order = lua_toboolean(L, -1);
  } else if (!lua_isnoneornil(L, 2)) {
    return luaL_argerror(L, 2, "a table of options");
  }
  lua_settop(L, 1);
  lua_pushboolean(L, key_order);
  lua_pushvalue(L, lua_upvalueindex(UV_ARRAY_MT));
  lua_pushvalue(L, lua_upvalueindex(UV_PARSER_MT));
  lua_pushcclosure(L, decode, 2);
  lua_insert(L, 1);
  int rc = lua_pcall(L, 2, LUA_MULTRET, 0);
  if (rc == LUA_ERRMEM) return lua_error(L);
  if (rc != 0) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  return lua_gettop(L);
}

int luaopen_moonport_yaml(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "moonport.json");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "array_mt");
  lua_createtable(L, 0, 1); /* the parser's metatable */
  lua_pushcfunction(L, l_parser_gc);
  lua_setfield(L, -2, "__gc");
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, -3);
  lua_pushvalue(L, -3);
  lua_pushcclosure(L, l_decode, 2);
  lua_setfield(L, -2, "decode");
  return 1;
}

void mp_lua_yaml_preload(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_moonport_yaml);
  lua_setfield(L, -2, "moonport.yaml");
  lua_pop(L, 2);
}
