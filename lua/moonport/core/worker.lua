--- The worker process (server/lua/ffi/worker.c): its number, how many
-- workers there are, its pid; ngx.worker reads them.
-- @module moonport.core.worker

local ffi = require("ffi")

ffi.cdef[[
int mp_worker_id(void);
int mp_worker_count(void);
int mp_worker_pid(void);
]]

local C = ffi.C
local mp_worker_id = C.mp_worker_id
local mp_worker_count = C.mp_worker_count
local mp_worker_pid = C.mp_worker_pid

local worker = {}

--- This worker's number, from 0, or nil in a process that serves no
-- requests (--check).
-- @usage local id = worker.id()
function worker.id()
  local id = mp_worker_id()
  if id < 0 then return nil end
  return id
end

--- How many worker processes the server runs.
-- @usage local n = worker.count()
function worker.count()
  return mp_worker_count()
end

--- This process's pid.
-- @usage local pid = worker.pid()
function worker.pid()
  return mp_worker_pid()
end

return worker
