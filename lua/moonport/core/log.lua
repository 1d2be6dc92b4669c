--- moonport.log: lines from Lua into the error log (server/lua/ffi/log.c).
-- @module moonport.core.log

local ffi = require("ffi")
require("moonport.core.base")

ffi.cdef[[
void mp_lua_log(int level, const char *msg, size_t len);
]]

local C = ffi.C
local mp_lua_log = C.mp_lua_log
local tostring, error = tostring, error

local levels = { error = C.MP_LOG_ERROR, warn = C.MP_LOG_WARN, info = C.MP_LOG_INFO }

local log = {}

--- Writes a line to the error log, which adds the time, the level and the
-- worker. With one argument the level is info.
-- @usage moonport.log("warn", "cache miss for " .. key)
function log.log(level, msg)
  if msg == nil then level, msg = "info", level end
  local n = levels[level]
  if n == nil then
    error("moonport.log: level must be 'error', 'warn' or 'info'", 2)
  end
  msg = tostring(msg)
  mp_lua_log(n, msg, #msg)
end

return log
