--- What runs now (server/lua/ffi/current.c): the request whose code runs,
-- for APIs that reach it without being handed its req, and the phase.
-- @module moonport.core.current

local ffi = require("ffi")

ffi.cdef[[
double mp_req_current(void);
int mp_phase(void);
]]

local C = ffi.C
local mp_req_current, mp_phase = C.mp_req_current, C.mp_phase

local PHASES = {
  [C.MP_PHASE_INIT] = "init",
  [C.MP_PHASE_CONTENT] = "content",
  [C.MP_PHASE_TIMER] = "timer",
}

local current = {}

--- The req of the request whose code runs now (a light thread's is the
-- request that spawned it), or nil while the app loads and in timers.
-- @usage local req = current.request()
function current.request()
  local req = mp_req_current()
  if req == 0 then return nil end
  return req
end

--- "init" while the app loads, "content" in handlers and their light
-- threads, "timer" in timers (OpenResty's ngx.get_phase names).
-- @usage if current.phase() == "init" then ... end
function current.phase()
  return PHASES[mp_phase()]
end

return current
