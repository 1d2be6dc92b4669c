--- The FFI contract's functions that need no server, for unit specs under
-- plain LuaJIT: loads the test build's lua/moonport_ffi_unit.so
-- (spec/CMakeLists.txt) into the global namespace, where ffi.C finds its
-- functions as it finds the server's, and puts lua/ on package.path.
-- CTest puts its build's lua/ on LUA_CPATH; without it, build/lua/ is
-- tried first.
--
-- Usage (before requiring a module of lua/moonport/):
--   require("spec.support.ffi_unit")
local ffi = require("ffi")

package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
if not os.getenv("LUA_CPATH") then package.cpath = "build/lua/?.so;" .. package.cpath end

local path = assert(package.searchpath("moonport_ffi_unit", package.cpath),
  "moonport_ffi_unit.so not found: build the tests first (cmake --build build)")

-- Kept for as long as the specs run: a collected library is unloaded.
return { lib = ffi.load(path, true) }
