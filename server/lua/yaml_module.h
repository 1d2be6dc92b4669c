/*
 * moonport.yaml: YAML text to Lua values, in C, through libyaml.
 *
 * What reads OpenAPI documents (moonport.openapi) and any script that
 * wants YAML. Values come out as moonport.json's do: sequences carry
 * json.array_mt, null is json.null, so a document read from YAML and one
 * read from JSON are the same tables. README.md ("moonport.yaml")
 * documents the Lua side.
 */
#ifndef MP_LUA_YAML_H
#define MP_LUA_YAML_H

#include <lua.h>

/* [-0, +1, e] Opens the module: pushes a new table with decode. Requires
 * moonport.json (for its array marker), so that one must be loadable.
 * Like luaopen_moonport_json, the name is the one require looks for in
 * moonport/yaml.so, so the same source builds as a module for plain
 * LuaJIT (the unit specs'). */
int luaopen_moonport_yaml(lua_State *L);

/* [-0, +0, m] Makes require("moonport.yaml") open the module above in L,
 * through package.preload. Call once per state, after luaL_openlibs. */
void mp_lua_yaml_preload(lua_State *L);

#endif
