--- The wall clock (server/lua/ffi/time.c).
-- @module moonport.core.time

local ffi = require("ffi")

ffi.cdef[[
double mp_clock_wall(void);
]]

local mp_clock_wall = ffi.C.mp_clock_wall

local time = {}

--- The wall-clock time in seconds since the epoch, with microseconds.
-- @usage local ms = math.floor(core.now() * 1000)
function time.now()
  return mp_clock_wall()
end

return time
