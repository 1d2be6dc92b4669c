--- Timers, light threads and semaphores: moonport.timer, moonport.thread
-- and moonport.semaphore.
--
-- Each runs in a task (server/req/task.h): a record without a
-- connection, with a coroutine, a wait and a memory charge of its own, so
-- moonport.sleep and every other wait work in it as in a handler. A light
-- thread is a task of the handler (or task) that spawned it; a timer's run
-- is a task of no request. The core starts and ends tasks; this module
-- keeps what Lua needs: a timer's function and arguments under the id the
-- core fires it by, a thread's results until its parent waits for them,
-- and each semaphore's count and queue of waiters.
--
-- Waiting on a thread or a semaphore is the park (server/req/park.h): the
-- waiter parks, and whoever has what it waits for unparks it; it finds out
-- on waking whether it got it. Waiters are named by handles (the form of a
-- req), so a semaphore posted by one request wakes a waiter of another.
-- Spawning and killing threads run Lua, so they are classic functions
-- that server/lua/vm.c registers as moonport.core.native.
-- @module moonport.core.task

local ffi = require("ffi")
local runner = require("moonport.core.runner")
local native = require("moonport.core.native")

ffi.cdef[[
double mp_task_self(void);
int mp_task_unpark(double handle);
int mp_task_alive(double handle);
int mp_timer_start(double id, double delay_ms, double interval_ms);
int mp_timer_count(void);
]]

local C = ffi.C
local mp_task_self = C.mp_task_self
local mp_task_unpark = C.mp_task_unpark
local mp_task_alive = C.mp_task_alive
local mp_timer_start = C.mp_timer_start
local mp_timer_count = C.mp_timer_count
local MP_STATE = C.MP_STATE
local MP_DECLINED = C.MP_DECLINED
local MP_NOMEM = C.MP_NOMEM

local type, error, tostring, select = type, error, tostring, select
local setmetatable, getmetatable, pairs = setmetatable, getmetatable, pairs
local xpcall, unpack = xpcall, unpack
local huge = math.huge
local on_error, park, join = runner.on_error, runner.park, runner.join
local spawn_native, kill_native = native.spawn, native.kill

local function pack(...)
  return { n = select("#", ...), ... }
end

-- Raises unless ms is a number of milliseconds, 0 or more.
local function check_ms(ms, what, name)
  if type(ms) ~= "number" or ms ~= ms or ms < 0 then
    error(what .. ": " .. name .. " must be a non-negative number of milliseconds", 3)
  end
end

local task = {}

-- Timers -------------------------------------------------------------------

-- The function and arguments of each timer of this code, by the id the
-- core fires it by: { fn = fn, n = #args, args... }.
local pending = {}
local last_id = 0

-- Makes a timer; name is the function the script called.
local function add(name, delay, interval, fn, ...)
  last_id = last_id + 1
  local id = last_id
  local entry = { fn = fn, n = select("#", ...), ... }
  pending[id] = entry
  local rc = mp_timer_start(id, delay, interval)
  if rc == 0 then return true end
  pending[id] = nil
  if rc == MP_STATE then return nil, "process exiting" end
  if rc == MP_DECLINED then return nil, "code reloaded" end
  if rc == MP_NOMEM then return nil, "out of memory" end
  error(name .. ": failed (" .. tostring(rc) .. ")", 3)
end

local timer = {}
task.timer = timer

--- Runs `fn(premature, ...)` once, `delay` milliseconds from now, in a
-- coroutine of its own outside any request (sleep, sockets and the rest
-- work in it). `premature` is true when it runs early: the worker is
-- stopping, or a reload replaced the code that made it. Returns true, or
-- nil, "process exiting" while the worker stops, nil, "code reloaded"
-- when the code calling it has been replaced. Raises for a bad delay or
-- fn.
-- @usage moonport.timer.at(1000, function(premature, key) refresh(key) end, "k")
function timer.at(delay, fn, ...)
  check_ms(delay, "moonport.timer.at", "delay")
  if type(fn) ~= "function" then error("moonport.timer.at: fn must be a function", 2) end
  local ok, err = add("moonport.timer.at", delay, 0, fn, ...)
  return ok, err
end

--- Runs `fn(premature, ...)` every `interval` milliseconds (more than 0),
-- as timer.at does, until the worker stops or a reload replaces the code
-- that made it: then it runs once more at once, with premature true, and
-- ends. A run that outlasts the interval does not delay the next.
-- Returns as timer.at.
-- @usage moonport.timer.every(60000, function(premature) if not premature then flush() end end)
function timer.every(interval, fn, ...)
  check_ms(interval, "moonport.timer.every", "interval")
  if interval == 0 then
    error("moonport.timer.every: interval must be more than 0 milliseconds", 2)
  end
  if type(fn) ~= "function" then error("moonport.timer.every: fn must be a function", 2) end
  local ok, err = add("moonport.timer.every", interval, interval, fn, ...)
  return ok, err
end

--- The timers of this worker pending or running now.
-- @usage local n = moonport.timer.count()
function timer.count()
  return mp_timer_count()
end

--- The body of a timer's coroutine (server/lua/vm.c runs it): runs the
-- timer's function, waits for its light threads when it returned, and
-- returns whether it succeeded with the traceback when not. `last`: the
-- timer will not fire again, so its function is dropped.
function task.timer_main(id, premature, last)
  local entry = pending[id]
  if last then pending[id] = nil end
  if entry == nil then return true end
  local ok, trace = xpcall(entry.fn, on_error, premature, unpack(entry, 1, entry.n))
  if ok then join() end
  return ok, trace
end

-- Light threads ------------------------------------------------------------

-- A thread as its parent holds it: the task's handle, the parent's, its
-- results once it has ended (a zombie, in OpenResty's words), and whether
-- it has been waited for or killed (dead).
local Thread = {}
Thread.__index = Thread
Thread.__tostring = function() return "moonport.thread" end

local thread = {}
task.thread = thread

-- Threads end in order; wait returns the one that ended first.
local ended = 0
-- The error a thread's function raised, as raised: xpcall's handler keeps
-- it here and returns the traceback for the log.
local raised
local function catch(err)
  raised = err
  return on_error(err)
end

-- The body of a light thread's coroutine (moonport.core.native.spawn runs
-- it): keeps fn's results in t, waits for t's own threads, and returns
-- whether fn succeeded with the traceback when not, for the log.
local function thread_main(t, fn, ...)
  local r = pack(xpcall(fn, catch, ...))
  ended = ended + 1
  t.ended = ended
  if r[1] then
    t.results = r
    join()
    return true
  end
  t.results = { n = 2, false, raised }
  raised = nil
  return false, r[2]
end

-- A thread that ended without its results (it went past its memory limit,
-- or yielded outside the moonport API): what its parent is told.
local ABORTED = { n = 2, false, "aborted" }

-- "running", "zombie" (ended, results kept) or "dead".
local function state(t)
  if t.dead then return "dead" end
  if t.results then return "zombie" end
  if mp_task_alive(t.handle) == 1 then return "running" end
  ended = ended + 1
  t.ended = ended
  t.results = ABORTED
  return "zombie"
end

--- Runs `fn(...)` in a light thread of the code running now (a handler,
-- a light thread or a timer), at once, until it first waits or ends;
-- the caller goes on after that, and the two run side by side. The
-- thread's waits suspend it alone. A handler (or thread, or timer) that
-- returns waits for its threads before it ends; one that fails kills
-- them; a request that ends otherwise (stopped after its client left,
-- over its memory limit, the worker stopping) ends them with it. Returns
-- the thread, or nil and a message when no request record is left.
-- Raises for a bad fn, and outside a handler, a thread or a timer.
-- @usage local t = moonport.thread.spawn(fetch, "/a")
function thread.spawn(fn, ...)
  if type(fn) ~= "function" then
    error("moonport.thread.spawn: fn must be a function", 2)
  end
  local parent = mp_task_self()
  if parent == 0 then
    error("moonport.thread.spawn: only a handler, a light thread or a timer can spawn a light thread", 2)
  end
  local t = setmetatable({ parent = parent }, Thread)
  local handle, err = spawn_native(thread_main, t, fn, ...)
  if handle == nil then return nil, err end
  t.handle = handle
  return t
end

--- Waits until one of the threads given has ended (at once when one
-- has), and returns as OpenResty's ngx.thread.wait: true and the
-- function's results, or false and its error, for the one that ended
-- first. Each thread is waited for once: nil, "already waited or killed"
-- when the last one given has been. Raises for something that is not a
-- thread, or one that the code running now did not spawn.
-- @usage local ok, body = moonport.thread.wait(t1, t2)
function thread.wait(...)
  local n = select("#", ...)
  if n == 0 then error("moonport.thread.wait: no thread given", 2) end
  local self = mp_task_self()
  for i = 1, n do
    local t = select(i, ...)
    if getmetatable(t) ~= Thread then
      error("moonport.thread.wait: argument " .. i .. " is not a light thread", 2)
    end
    if t.parent ~= self then
      error("moonport.thread.wait: only the parent can wait on a light thread", 2)
    end
  end
  while true do
    local first
    for i = 1, n do
      local t = select(i, ...)
      local st = state(t)
      if st == "zombie" then
        if first == nil or t.ended < first.ended then first = t end
      elseif st == "dead" and i == n and first == nil then
        return nil, "already waited or killed"
      end
    end
    if first ~= nil then
      local r = first.results
      first.results, first.dead = nil, true
      return unpack(r, 1, r.n)
    end
    if park(-1, true) == nil then
      error("moonport.thread.wait: cannot wait here", 2)
    end
  end
end

--- Kills a thread the code running now spawned, with its own threads, as
-- OpenResty's ngx.thread.kill: returns true; nil, "already terminated"
-- when it had ended (its results are dropped); nil, "already waited or
-- killed"; nil, "killer not parent". Raises for something that is not a
-- thread.
-- @usage moonport.thread.kill(t)
function thread.kill(t)
  if getmetatable(t) ~= Thread then
    error("moonport.thread.kill: t must be a light thread", 2)
  end
  if t.parent ~= mp_task_self() then return nil, "killer not parent" end
  if t.dead then return nil, "already waited or killed" end
  if t.results == nil then
    local ok, err = kill_native(t.handle)
    if ok == nil then return nil, err end
    if ok then
      t.dead = true
      return true
    end
  end
  t.results, t.dead = nil, true
  return nil, "already terminated"
end

-- Semaphores ---------------------------------------------------------------

-- A semaphore: n resources, and a queue of the handles of the records
-- parked waiting (q[first..last], false where a waiter left the queue,
-- pos[handle] its place). A post hands resources to waiters in order,
-- marking each granted before unparking it; a waiter that ends before
-- it wakes (killed) has its grant taken back by the next post or wait.
local Sem = {}
Sem.__index = Sem
Sem.__tostring = function() return "moonport.semaphore" end

local semaphore = {}
task.semaphore = semaphore

local function check_sem(self, name)
  if getmetatable(self) ~= Sem then
    error(name .. ": called with '.' instead of ':'", 3)
  end
end

local function check_count(n, what)
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 or n == huge then
    error(what .. ": n must be a non-negative integer", 3)
  end
end

--- A semaphore with n resources (default 0), for the coroutines of every
-- request, thread and timer of this worker (of the code that made it).
-- @usage local sem = moonport.semaphore.new()
function semaphore.new(n)
  if n == nil then n = 0 end
  check_count(n, "moonport.semaphore.new")
  return setmetatable({ n = n, q = {}, pos = {}, first = 1, last = 0,
                        nwait = 0, granted = {}, ngranted = 0 }, Sem)
end

-- Grants given to waiters that ended before taking them come back.
local function reclaim(self)
  local granted = self.granted
  for h in pairs(granted) do
    if mp_task_alive(h) == 0 then
      granted[h] = nil
      self.ngranted = self.ngranted - 1
      self.n = self.n + 1
    end
  end
end

local function leave(self, h)
  local i = self.pos[h]
  if i == nil then return end
  self.pos[h] = nil
  self.q[i] = false
  self.nwait = self.nwait - 1
end

--- Adds n resources (default 1) and wakes as many waiters, longest
-- waiting first. Returns true.
-- @usage sem:post()
function Sem:post(n)
  check_sem(self, "sem:post")
  if n == nil then n = 1 end
  check_count(n, "sem:post")
  if self.ngranted > 0 then reclaim(self) end
  self.n = self.n + n
  local q, pos, granted = self.q, self.pos, self.granted
  while self.n > 0 and self.first <= self.last do
    local i = self.first
    local h = q[i]
    q[i] = nil
    self.first = i + 1
    if h then
      pos[h] = nil
      self.nwait = self.nwait - 1
      if mp_task_unpark(h) == 0 then
        self.n = self.n - 1
        granted[h] = true
        self.ngranted = self.ngranted + 1
      end
    end
  end
  if self.first > self.last then self.first, self.last = 1, 0 end
  return true
end

--- Takes a resource: at once when one is free and nobody waits, else
-- waits for a post up to timeout milliseconds (default 0: no waiting;
-- math.huge: no limit). Returns true, or nil, "timeout", or nil, "closed"
-- when the request's client left while it waited. Raises for a bad
-- timeout, and when it would wait outside a handler, a thread or a timer.
-- @usage local ok, err = sem:wait(30000)
function Sem:wait(timeout)
  check_sem(self, "sem:wait")
  if timeout == nil then timeout = 0 end
  check_ms(timeout, "sem:wait", "timeout")
  if self.ngranted > 0 then reclaim(self) end
  if self.n > 0 and self.nwait == 0 then
    self.n = self.n - 1
    return true
  end
  if timeout == 0 then return nil, "timeout" end
  local me = mp_task_self()
  if me == 0 then
    error("sem:wait: only a handler, a light thread or a timer can wait", 2)
  end
  local i = self.last + 1
  self.last = i
  self.q[i] = me
  self.pos[me] = i
  self.nwait = self.nwait + 1
  local woke = park(timeout == huge and -1 or timeout, false)
  if self.granted[me] then
    self.granted[me] = nil
    self.ngranted = self.ngranted - 1
    return true
  end
  leave(self, me)
  if woke == nil then error("sem:wait: cannot wait here", 2) end
  if woke == false then return nil, "closed" end
  return nil, "timeout"
end

--- The resources free, less the waiters (negative while some wait), as
-- OpenResty's sem:count.
-- @usage if sem:count() > 0 then ... end
function Sem:count()
  check_sem(self, "sem:count")
  return self.n - self.nwait
end

return task
