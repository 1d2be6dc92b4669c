--- Running handlers: the body of every handler coroutine, the waits a
-- handler makes on the core (moonport.sleep, the park, and those of req
-- and res), and what it is told when its client leaves. The same waits
-- work in tasks (light threads and timers, core/task.lua), whose
-- coroutines the core resumes alike.
-- @module moonport.core.runner

local ffi = require("ffi")
local base = require("moonport.core.base")
local log = require("moonport.core.log").log

ffi.cdef[[
int mp_sleep(double ms);
int mp_task_park(double ms, int children);
int mp_task_children(void);
]]

local C = ffi.C
local mp_sleep = C.mp_sleep
local mp_task_park = C.mp_task_park
local mp_task_children = C.mp_task_children
local MP_BAD_CONTEXT = C.MP_BAD_CONTEXT

local type, tostring, error, setmetatable = type, tostring, error, setmetatable
local getmetatable = getmetatable
local co_create, co_resume = coroutine.create, coroutine.resume
local yield = coroutine.yield
local xpcall, traceback = xpcall, debug.traceback
local fail, forget = base.fail, base.forget

local runner = {}

--- What a handler yields to wait on the core: server/lua/vm.c resumes the
-- request's coroutine when the wait is over, and knows this value by its
-- address.
local WAIT = newproxy()
runner.WAIT = WAIT

--- What ngx.exit raises to end a handler early: the handler's coroutine
-- takes it as a return, not an error (lua/moonport/ngx.lua).
local EXIT = setmetatable({}, { __tostring = function() return "ngx.exit" end })
runner.EXIT = EXIT

-- The metatable of errors that carry their traceback already.
local TRACED = {}

--- An error that core.run logs as it is, without another traceback: what
-- code that caught an error, and reports it on, raises.
-- @usage error(runner.traced(trace), 0)
function runner.traced(message)
  return setmetatable({ message }, TRACED)
end

--- The error and where it happened, from the failing frame down to the
-- handler; moonport's own frames below it are left out.
local function on_error(err)
  if err == EXIT then return EXIT end
  if getmetatable(err) == TRACED then return err[1] end
  local trace = traceback(tostring(err), 2) -- 2: not this function
  return (trace:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
end
runner.on_error = on_error

-- The on_abort functions of each request whose handler runs.
local aborts = base.kept.aborts
local holds = base.kept.holds

--- Runs one on_abort function, protected: its error is logged.
local function run_abort(fn)
  local ok, err = xpcall(fn, on_error)
  if not ok then log("error", "on_abort function failed: " .. tostring(err)) end
end
runner.run_abort = run_abort

-- Runs the on_abort functions of req, once.
local function run_aborts(req)
  local fns = aborts[req]
  if fns == nil then return end
  aborts[req] = nil
  for i = 1, #fns do run_abort(fns[i]) end
end

--- Suspends the running request until the core resumes it, whatever
-- depth of user coroutines this runs in. Returns true, or false when the
-- client has just gone (after the request's on_abort functions ran).
local function suspend()
  local gone, req = yield(WAIT)
  if gone then
    run_aborts(req)
    return false
  end
  return true
end
runner.suspend = suspend

--- Gives the event loop one turn before the handler goes on (a handler
-- whose client has gone, writing in a loop, cannot hold the worker).
function runner.pass_turn()
  if mp_sleep(0) == 0 then suspend() end
end

-- A wait inside a coroutine the handler made must suspend the whole
-- request, not that coroutine alone: so coroutine.resume and
-- coroutine.wrap pass a WAIT yield on up to the handler's own coroutine,
-- and hand the core's answer back down when the request is resumed
-- (OpenResty routes user coroutines through its scheduler for the same
-- reason). Any other yield is the user's own and works as plain Lua.
local function relay(co, ok, ...)
  if ok and (...) == WAIT then
    return relay(co, co_resume(co, yield(WAIT)))
  end
  return ok, ...
end

local function unwrap(ok, ...)
  if ok then return ... end
  error((...), 0)
end

function coroutine.resume(co, ...)
  return relay(co, co_resume(co, ...))
end

function coroutine.wrap(f)
  local co = co_create(f)
  return function(...) return unwrap(relay(co, co_resume(co, ...))) end
end

--- Suspends the running handler (or light thread, or timer) for ms
-- milliseconds (from inside its own coroutines too); other requests go
-- on. Returns true, or nil, "closed" when the sleep was cut short because
-- the client left before the response was complete. ms past 2^53 sleeps
-- 2^53 ms.
-- @usage moonport.sleep(200)
function runner.sleep(ms)
  if type(ms) ~= "number" or ms < 0 or ms ~= ms then
    error("moonport.sleep: ms must be a non-negative number", 2)
  end
  local rc = mp_sleep(ms)
  if rc == MP_BAD_CONTEXT then
    error("moonport.sleep: only a handler, a light thread or a timer can sleep", 2)
  end
  if rc ~= 0 then fail(rc, "moonport.sleep") end
  if suspend() then return true end
  return nil, "closed"
end

--- Parks the code running now (a handler or a task) until other code of
-- the worker unparks it (core/task.lua: a semaphore's post, a light
-- thread's end when `children`), until ms milliseconds pass (a negative
-- ms: no limit), or until its client leaves. Returns true, or false when
-- the client has just gone (after the on_abort functions ran); what woke
-- it is the caller's to find out. Returns nil and the code when it cannot
-- park (MP_BAD_CONTEXT: no record's code runs, the app is loading).
-- @usage local woke = runner.park(100, false)
function runner.park(ms, children)
  local rc = mp_task_park(ms, children and 1 or 0)
  if rc ~= 0 then return nil, rc end
  return suspend()
end

--- Waits until every light thread of the code running now has ended:
-- a handler (or a thread, or a timer) that returns waits for its threads
-- before it is over, as in OpenResty.
-- @usage runner.join()
local function join()
  while mp_task_children() > 0 do
    if mp_task_park(-1, 1) ~= 0 then return end
    suspend()
  end
end
runner.join = join

--- The body of every handler coroutine (started by server/lua/vm.c): run a
-- handler, wait for its light threads when it returned (the core kills
-- them when it failed), drop what was kept for its request, report how it
-- ended, wait for the next one. core.DONE is set by vm.c once
-- moonport.core has loaded.
function runner.run(handler, req, res)
  local DONE = require("moonport.core").DONE
  while true do
    local ok, err = xpcall(handler, on_error, req, res)
    if not ok and err == EXIT then ok, err = true, nil end
    if ok and mp_task_children() > 0 then join() end
    -- A response held for a check (core/response.lua) that the handler
    -- never sent a body for is checked now, before the core answers.
    local h = ok and holds[req]
    if h then
      holds[req] = nil
      ok, err = xpcall(h, on_error, res, nil, -1, 0)
      if not ok and err == EXIT then ok, err = true, nil end
    end
    forget(req)
    handler, req, res = yield(DONE, ok, err)
  end
end

return runner
