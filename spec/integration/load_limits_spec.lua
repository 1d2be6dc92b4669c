-- Loading the app under limits: the master has every load checked in a
-- child process, so a script that loops forever or allocates without end
-- while it loads fails its load (past --load-timeout or
-- --load-memory-limit) while the master stays responsive: it takes
-- signals, replaces workers and collapses a storm of reload requests.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local signal = require("posix.signal")

local write_by_rename = helpers.write_by_rename

local GOOD = [[
local moonport = require("moonport")
local app = moonport.app()
app:get("/v", function(req, res) res:send(%q) end)
app:get("/hang", function(req, res)
  moonport.shared:set("hang", true, 2)
  res:send("set")
end)
%s
return app
]]

local function good(version, extra)
  return GOOD:format(version, extra or "")
end

local LOOPS = [[
local app = require("moonport").app()
while true do end
return app
]]

local HOGS = [[
local app = require("moonport").app()
local t = {}
for i = 1, 1e8 do t[i] = ("x"):rep(100) .. i end
return app
]]

-- Loads in about 0.2 s, and then serves like GOOD.
local SLOW = good("slow", [[
local t0 = os.clock()
while os.clock() - t0 < 0.2 do end
]])

local stats = helpers.stats

-- Waits until the master has `n` children: its workers, and the process
-- that checks a new version of the app while the check runs.
local function children(server, n)
  return helpers.eventually(function()
    local pids = server:workers()
    return #pids == n and pids
  end, 10)
end

local function answers(port, want)
  local ok, status, _, body = pcall(helpers.request, port, "GET", "/v")
  return ok and status == 200 and body == want
end

-- Each test starts its own server (stopped when the test ends, before
-- after_each removes the app's directory).
describe("a reload whose code loops forever", function()
  local dir
  before_each(function()
    dir = helpers.scratch_dir()
    helpers.write_file(dir .. "/app.lua", good("v1"))
  end)
  after_each(function() helpers.remove_dir(dir) end)

  it("fails past --load-timeout while the old code serves on", function()
    local server = support.start(dir .. "/app.lua", { "--stats", "--load-timeout", "1" })
    write_by_rename(dir .. "/app.lua", LOOPS)
    local t0 = helpers.now()
    -- Meanwhile the workers answer with the code they have.
    for _ = 1, 5 do
      assert.is_true(answers(server.port, "v1"))
      helpers.nap(0.05)
    end
    local logged = helpers.eventually(function()
      return server:stderr():find("reload %(files changed%) failed: .-app%.lua: loading took longer "
        .. "than %-%-load%-timeout %(1 s%); stopped it; the workers keep the code they have")
    end, 10)
    assert.truthy(logged, server:stderr())
    assert(helpers.now() - t0 >= 0.9, "the load failed before --load-timeout")
    local st = stats(server.port).reload
    assert.is_false(st.last_ok)
    assert.equal(1, st.failures)
    assert.is_true(answers(server.port, "v1"))
    -- The next good save reloads.
    write_by_rename(dir .. "/app.lua", good("v2"))
    assert.truthy(helpers.eventually(function() return answers(server.port, "v2") end, 10))
  end)

  it("leaves the master free to replace a worker killed meanwhile", function()
    helpers.write_file(dir .. "/app.lua", good("v1", [[
local ffi = require("ffi")
ffi.cdef("int getpid(void);")
app:get("/pid", function(req, res) res:send(tostring(ffi.C.getpid())) end)
]]))
    local server = support.start(dir .. "/app.lua", { "--workers", "2" })
    local before = assert(children(server, 2), "want 2 workers")
    -- A connection to the worker that survives: new connections the
    -- kernel gives the other worker's socket wait for its replacement,
    -- which is stuck loading the looping code.
    local survivor
    for _ = 1, 200 do
      local c = helpers.connect(server.port)
      if tonumber(c:request("GET", "/pid").body) == before[2] then
        survivor = c
        break
      end
      c:close()
    end
    assert.truthy(survivor, "no connection reached the second worker")
    write_by_rename(dir .. "/app.lua", LOOPS)
    -- The check is under way (default --load-timeout: 10 s).
    assert.truthy(children(server, 3), "no check process appeared")
    signal.kill(before[1], signal.SIGKILL)
    local replaced = helpers.eventually(function()
      local now = server:workers()
      -- Two workers and the check: the killed pid is gone and another came.
      for _, pid in ipairs(now) do if pid == before[1] then return false end end
      return server:stderr():find("killed by signal 9")
    end, 10)
    assert.truthy(replaced, "no worker replaced while the check ran: " .. server:stderr())
    assert.equal("v1", survivor:request("GET", "/v").body)
    survivor:close()
  end)

  it("ends with the master, should the master be killed", function()
    local server = support.start(dir .. "/app.lua")
    local workers = assert(children(server, 1), "want 1 worker")
    write_by_rename(dir .. "/app.lua", LOOPS)
    -- The check is the master's child that is not a worker.
    local check = helpers.eventually(function()
      for _, pid in ipairs(server:workers()) do
        if pid ~= workers[1] then return pid end
      end
    end, 10)
    assert.truthy(check, "no check process appeared")
    signal.kill(server.pid, signal.SIGKILL)
    local gone = helpers.eventually(function()
      return signal.kill(check, 0) ~= 0
    end, 10)
    server:wait(10, nil, 128 + signal.SIGKILL)
    if not gone then signal.kill(check, signal.SIGKILL) end
    assert.truthy(gone, "the check process spins on without its master")
  end)

  it("does not hold up SIGTERM", function()
    local server = support.start(dir .. "/app.lua", { "--shutdown-timeout", "2" })
    assert.truthy(children(server, 1), "want 1 worker")
    write_by_rename(dir .. "/app.lua", LOOPS)
    -- The check is spinning (default --load-timeout: 10 s).
    assert.truthy(children(server, 2), "no check process appeared")
    local t0 = helpers.now()
    server:stop(signal.SIGTERM, 8)
    -- Well before the 10 s the check could still take.
    assert(helpers.now() - t0 < 6, ("SIGTERM took %.1f s"):format(helpers.now() - t0))
    assert.truthy(server:stderr():find("master: stopping (SIGTERM): draining 0 connections", 1, true))
    assert.truthy(server:stderr():find("master: stopped", 1, true))
  end)
end)

describe("a reload whose code allocates without end", function()
  local dir = helpers.scratch_dir()
  helpers.write_file(dir .. "/app.lua", good("v1"))
  local server = support.serve(dir .. "/app.lua", { "--stats", "--load-memory-limit", "32m" })
  teardown(function() helpers.remove_dir(dir) end)

  it("fails past --load-memory-limit, naming the limit", function()
    write_by_rename(dir .. "/app.lua", HOGS)
    local logged = helpers.eventually(function()
      return server:stderr():find("app%.lua: loading needs more than %-%-load%-memory%-limit "
        .. "%(33554432 bytes%): an allocation of %d+ bytes would have made it hold %d+; the "
        .. "workers keep the code they have")
    end, 10)
    assert.truthy(logged, server:stderr())
    assert.is_true(answers(server.port, "v1"))
  end)
end)

describe("a storm of SIGHUPs", function()
  local dir = helpers.scratch_dir()
  helpers.write_file(dir .. "/app.lua", SLOW)
  local server = support.serve(dir .. "/app.lua", { "--stats", "--shutdown-timeout", "2" })
  teardown(function() helpers.remove_dir(dir) end)

  -- 50 SIGHUPs 20 ms apart (the kernel keeps one pending SIGHUP at most,
  -- so they are spread out to arrive one by one) against loads of 0.2 s
  -- of CPU. Returns how long the storm took.
  local function storm()
    local t0 = helpers.now()
    for _ = 1, 50 do
      signal.kill(server.pid, signal.SIGHUP)
      helpers.nap(0.02)
    end
    return helpers.now() - t0
  end

  it("collapses reloads asked for during a check into one more", function()
    local took = storm()
    helpers.nap(0.6) -- room for the last check (each takes 0.2 s)
    local st = stats(server.port).reload
    assert(st.reloads >= 1, "no reload at all")
    -- One check at a time: each takes at least 0.2 s, so however long the
    -- storm lasted (about 1 s; longer on a busy machine), no more than
    -- one per 0.2 s of it, and one for what came during the last. Never
    -- one per SIGHUP.
    local most = math.min(49, math.floor(took / 0.2) + 2)
    assert(st.reloads <= most, ("%d reloads for 50 SIGHUPs over %.1f s"):format(st.reloads, took))
  end)

  it("lets SIGTERM through at once", function()
    storm()
    local t0 = helpers.now()
    server:stop(signal.SIGTERM, 8)
    -- Not after the reloads asked for (50 loads of 0.2 s would be 10 s).
    assert(helpers.now() - t0 < 5, ("SIGTERM took %.1f s after the SIGHUPs"):format(helpers.now() - t0))
  end)
end)

describe("a worker whose own load hangs", function()
  local dir = helpers.scratch_dir()
  -- Loads fine in the master's check (which has a store of its own) and
  -- spins in a worker while moonport.shared says "hang" (2 s).
  helpers.write_file(dir .. "/app.lua", good("v1", [[
if moonport.shared:get("hang") then while true do end end
]]))
  local server = support.serve(dir .. "/app.lua", { "--load-timeout", "0.5" })
  teardown(function() helpers.remove_dir(dir) end)

  it("is killed past --load-timeout and replaced", function()
    assert.equal(200, (helpers.request(server.port, "GET", "/hang")))
    signal.kill(server.pid, signal.SIGHUP)
    local logged = helpers.eventually(function()
      return server:stderr():find("worker 1 %(pid %d+%) has been loading the app %(.-%) for [%d.]+ s, "
        .. "past %-%-load%-timeout; killing it")
    end, 10)
    assert.truthy(logged, server:stderr())
    -- Once the key expires, a new worker loads and serves.
    assert.truthy(helpers.eventually(function() return answers(server.port, "v1") end, 15))
  end)
end)

describe("startup", function()
  local dir
  before_each(function() dir = helpers.scratch_dir() end)
  after_each(function() helpers.remove_dir(dir) end)

  it("fails with exit 1 when the app loops past --load-timeout", function()
    helpers.write_file(dir .. "/app.lua", LOOPS)
    local t0 = helpers.now()
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--load-timeout", "0.5", dir .. "/app.lua" })
    assert.equal(1, code)
    assert.matches("app%.lua: loading took longer than %-%-load%-timeout %(0%.5 s%)", err)
    -- Not the default 10 s.
    assert(helpers.now() - t0 < 6, ("exited after %.1f s"):format(helpers.now() - t0))
  end)

  it("fails with exit 1 when the app allocates past --load-memory-limit", function()
    helpers.write_file(dir .. "/app.lua", HOGS)
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--load-memory-limit", "16m", dir .. "/app.lua" })
    assert.equal(1, code)
    assert.matches("app%.lua: loading needs more than %-%-load%-memory%-limit %(16777216 bytes%)", err)
  end)

  it("applies the same limits to --check", function()
    helpers.write_file(dir .. "/app.lua", LOOPS)
    local code, _, err = helpers.run({ "--check", "--load-timeout", "0.5", dir .. "/app.lua" })
    assert.equal(1, code)
    assert.matches("app%.lua: loading took longer than %-%-load%-timeout %(0%.5 s%)", err)
    helpers.write_file(dir .. "/app.lua", HOGS)
    code, _, err = helpers.run({ "--check", "--load-memory-limit", "16m", dir .. "/app.lua" })
    assert.equal(1, code)
    assert.matches("loading needs more than %-%-load%-memory%-limit %(16777216 bytes%)", err)
  end)
end)
