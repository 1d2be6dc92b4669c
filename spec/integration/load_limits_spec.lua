-- Loading the app under limits: the master has every load checked in a
-- child process, so a script that loops forever or allocates without end
-- while it loads fails its load (past --load-timeout or
-- --load-memory-limit) while the master stays responsive: it takes
-- signals, replaces workers and collapses a storm of reload requests.
local helpers = require("spec.helpers")
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

local function stats(port)
  local _, _, body = helpers.request(port, "GET", "/__moonport/stats")
  return helpers.json(body)
end

local function answers(port, want)
  local ok, status, _, body = pcall(helpers.request, port, "GET", "/v")
  return ok and status == 200 and body == want
end

describe("a reload whose code loops forever", function()
  local dir, server
  before_each(function()
    dir = helpers.scratch_dir()
    helpers.write_file(dir .. "/app.lua", good("v1"))
  end)
  after_each(function()
    if server then server:stop() end
    server = nil
    helpers.remove_dir(dir)
  end)

  it("fails past --load-timeout while the old code serves on", function()
    server = helpers.start(dir .. "/app.lua", { "--stats", "--load-timeout", "1" })
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
    end, 5)
    assert.truthy(logged, server:stderr())
    assert(helpers.now() - t0 >= 0.9, "the load failed before --load-timeout")
    local st = stats(server.port).reload
    assert.is_false(st.last_ok)
    assert.equal(1, st.failures)
    assert.is_true(answers(server.port, "v1"))
    -- The next good save reloads.
    write_by_rename(dir .. "/app.lua", good("v2"))
    assert.truthy(helpers.eventually(function() return answers(server.port, "v2") end, 5))
  end)

  it("leaves the master free to replace a worker killed meanwhile", function()
    server = helpers.start(dir .. "/app.lua", { "--workers", "2" })
    write_by_rename(dir .. "/app.lua", LOOPS)
    helpers.nap(0.2) -- the check is under way (default --load-timeout: 10 s)
    local before = server:workers()
    signal.kill(before[1], signal.SIGKILL)
    local replaced = helpers.eventually(function()
      local now = server:workers()
      -- Two workers and the check: the killed pid is gone and another came.
      for _, pid in ipairs(now) do if pid == before[1] then return false end end
      return server:stderr():find("killed by signal 9")
    end, 3)
    assert.truthy(replaced, "no worker replaced while the check ran: " .. server:stderr())
    assert.is_true(answers(server.port, "v1"))
  end)

  it("ends with the master, should the master be killed", function()
    server = helpers.start(dir .. "/app.lua")
    local workers = server:workers()
    write_by_rename(dir .. "/app.lua", LOOPS)
    -- The check is the master's child that is not a worker.
    local check = helpers.eventually(function()
      for _, pid in ipairs(server:workers()) do
        if pid ~= workers[1] then return pid end
      end
    end, 3)
    assert.truthy(check, "no check process appeared")
    signal.kill(server.pid, signal.SIGKILL)
    local gone = helpers.eventually(function()
      return signal.kill(check, 0) ~= 0
    end, 3)
    server:wait(5, nil, 128 + signal.SIGKILL)
    server = nil
    if not gone then signal.kill(check, signal.SIGKILL) end
    assert.truthy(gone, "the check process spins on without its master")
  end)

  it("does not hold up SIGTERM", function()
    server = helpers.start(dir .. "/app.lua", { "--shutdown-timeout", "2" })
    write_by_rename(dir .. "/app.lua", LOOPS)
    helpers.nap(0.3) -- the check is spinning (default --load-timeout: 10 s)
    local t0 = helpers.now()
    server:stop(signal.SIGTERM, 5)
    assert(helpers.now() - t0 < 2, ("SIGTERM took %.1f s"):format(helpers.now() - t0))
    assert.truthy(server:stderr():find("master: stopping (SIGTERM): draining 0 connections", 1, true))
    assert.truthy(server:stderr():find("master: stopped", 1, true))
    server = nil
  end)
end)

describe("a reload whose code allocates without end", function()
  local dir, server
  setup(function()
    dir = helpers.scratch_dir()
    helpers.write_file(dir .. "/app.lua", good("v1"))
    server = helpers.start(dir .. "/app.lua", { "--stats", "--load-memory-limit", "32m" })
  end)
  teardown(function()
    if server then server:stop() end
    helpers.remove_dir(dir)
  end)

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
  local dir, server
  setup(function()
    dir = helpers.scratch_dir()
    helpers.write_file(dir .. "/app.lua", SLOW)
    server = helpers.start(dir .. "/app.lua", { "--stats", "--shutdown-timeout", "2" })
  end)
  teardown(function()
    if server then server:stop() end
    helpers.remove_dir(dir)
  end)

  -- 50 SIGHUPs 20 ms apart (the kernel keeps one pending SIGHUP at most,
  -- so they are spread out to arrive one by one) against loads of 0.2 s.
  local function storm()
    for _ = 1, 50 do
      signal.kill(server.pid, signal.SIGHUP)
      helpers.nap(0.02)
    end
  end

  it("collapses reloads asked for during a check into one more", function()
    storm()
    helpers.nap(0.6) -- room for the last check (each takes 0.2 s)
    local st = stats(server.port).reload
    assert(st.reloads >= 1, "no reload at all")
    -- One check at a time over 1 s of SIGHUPs: about 6, never 50.
    assert(st.reloads <= 10, ("%d reloads for 50 SIGHUPs"):format(st.reloads))
  end)

  it("lets SIGTERM through at once", function()
    storm()
    local t0 = helpers.now()
    server:stop(signal.SIGTERM, 5)
    assert(helpers.now() - t0 < 1.5, ("SIGTERM took %.1f s after the SIGHUPs"):format(helpers.now() - t0))
    server = nil
  end)
end)

describe("a worker whose own load hangs", function()
  local dir, server
  setup(function()
    dir = helpers.scratch_dir()
    -- Loads fine in the master's check (which has a store of its own) and
    -- spins in a worker while moonport.shared says "hang" (2 s).
    helpers.write_file(dir .. "/app.lua", good("v1", [[
if moonport.shared:get("hang") then while true do end end
]]))
    server = helpers.start(dir .. "/app.lua", { "--load-timeout", "0.5" })
  end)
  teardown(function()
    if server then server:stop() end
    helpers.remove_dir(dir)
  end)

  it("is killed past --load-timeout and replaced", function()
    assert.equal(200, (helpers.request(server.port, "GET", "/hang")))
    signal.kill(server.pid, signal.SIGHUP)
    local logged = helpers.eventually(function()
      return server:stderr():find("worker 1 %(pid %d+%) has been loading the app %(.-%) for [%d.]+ s, "
        .. "past %-%-load%-timeout; killing it")
    end, 5)
    assert.truthy(logged, server:stderr())
    -- Once the key expires, a new worker loads and serves.
    assert.truthy(helpers.eventually(function() return answers(server.port, "v1") end, 6))
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
    assert(helpers.now() - t0 < 3)
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
