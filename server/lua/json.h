/*
 * moonport.json: a JSON encoder and decoder for Lua states, in C.
 *
 * One module for everything in moonport that reads or writes JSON
 * (res:json, req:json, the mock server and its admin API). Arrays are
 * known by a marker metatable, so an empty array stays an array both ways;
 * numbers can be kept as the text they were written as. README.md
 * ("moonport.json") documents the Lua side.
 */
#ifndef MP_LUA_JSON_H
#define MP_LUA_JSON_H

#include <lua.h>

/* [-0, +1, m] Opens the module: pushes a new table with encode, decode,
 * null, array, empty_array, array_mt, literal and literal_mt. Each call
 * makes a module of its own (its own scratch buffer and markers); require
 * keeps one per state. The name is the one require looks for in
 * moonport/json.so, so the same source also builds as a loadable module
 * for plain LuaJIT (the unit specs'). Runs no Lua code. */
int luaopen_moonport_json(lua_State *L);

/* [-0, +0, m] Makes require("moonport.json") open the module above in L,
 * through package.preload. Call once per state, after luaL_openlibs. */
void mp_lua_json_preload(lua_State *L);

#endif
