-- The master and its workers over real processes and sockets: --workers,
-- the shared store across them, a killed worker replaced, a stuck one
-- killed, graceful drain, log reopening and the worker id in log lines.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local signal = require("posix.signal")

local APP = "spec/fixtures/workers.lua"

local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

local function contains(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

-- Opens keep-alive connections until one is served by worker `pid` (or,
-- with `other`, by any worker but that one). Returns the connection.
local function conn_to(port, pid, other)
  for _ = 1, 200 do
    local c = helpers.connect(port)
    local got = tonumber(c:request("GET", "/pid").body)
    if (got == pid) ~= (other == true) then return c, got end
    c:close()
  end
  error("no connection reached the worker wanted")
end

local function read_file(path)
  local f = io.open(path)
  if not f then return "" end
  local text = f:read("*a")
  f:close()
  return text
end

describe("--workers", function()
  it("starts N worker processes that all serve the port", function()
    local server = support.start(APP, { "--workers", "4" })
    assert.equal(4, server.nworkers)
    local pids = helpers.eventually(function()
      local p = server:workers()
      return #p == 4 and p
    end)
    assert.truthy(pids, "want 4 worker processes")
    local seen = {}
    for _ = 1, 64 do
      local status, _, body = helpers.request(server.port, "GET", "/pid")
      assert.equal(200, status)
      seen[tonumber(body)] = true
    end
    for pid in pairs(seen) do assert.truthy(contains(pids, pid)) end
    assert.is_true(count(seen) >= 2, "64 connections all went to one worker")
  end)

  it("with auto, starts one per usable CPU", function()
    local p = io.popen("nproc")
    local cpus = tonumber(p:read("*l"))
    p:close()
    local server = support.start(APP, { "--workers", "auto" })
    assert.equal(cpus, server.nworkers)
    assert.truthy(helpers.eventually(function() return #server:workers() == cpus end))
  end)

  it("rejects a bad count", function()
    local code, _, err = helpers.run({ "--workers", "0", APP })
    assert.equal(2, code)
    assert.truthy(err:find("--workers", 1, true))
  end)

  it("refuses a port another process listens on", function()
    local first = support.start(APP)
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:" .. first.port, APP })
    assert.equal(1, code)
    assert.truthy(err:find("cannot listen on 127.0.0.1:" .. first.port, 1, true), err)
  end)
end)

describe("moonport.shared across workers", function()
  it("counts 10,000 increments from 100 connections over 4 workers exactly", function()
    local server = support.start(APP, { "--workers", "4" })
    local conns = {}
    for i = 1, 100 do conns[i] = helpers.connect(server.port) end
    local req = helpers.build_request("GET", "/incr")
    local pids, last = {}, 0
    -- 100 rounds of one request in flight on every connection at once.
    for _ = 1, 100 do
      for _, c in ipairs(conns) do c:send(req) end
      for _, c in ipairs(conns) do
        local resp = assert(c:read_response())
        assert.equal(200, resp.status)
        local pid, n = resp.body:match("^(%d+) (%d+)$")
        pids[pid] = true
        last = math.max(last, tonumber(n))
      end
    end
    for _, c in ipairs(conns) do c:close() end
    assert.equal(4, count(pids), "increments did not reach all 4 workers")
    assert.equal(10000, last)
    local _, _, body = helpers.request(server.port, "GET", "/hits")
    assert.equal("10000", body)
  end)

  it("keeps its data when a worker is killed", function()
    local server = support.start(APP, { "--workers", "2" })
    assert.equal(200, (helpers.request(server.port, "PUT", "/kv/keep?v=kept")))
    for _, pid in ipairs(server:workers()) do signal.kill(pid, signal.SIGKILL) end
    local body = helpers.eventually(function()
      local ok, status, _, b = pcall(helpers.request, server.port, "GET", "/kv/keep")
      return ok and status == 200 and b
    end)
    assert.equal("string:kept", body)
  end)
end)

describe("a worker that dies", function()
  it("is logged and replaced at once while the others answer", function()
    local server = support.start(APP, { "--workers", "2" })
    local pids = helpers.eventually(function()
      local p = server:workers()
      return #p == 2 and p
    end)
    local victim = pids[1]
    -- Requests in flight on the survivor when the other one dies.
    local survivor, survivor_pid = conn_to(server.port, victim, true)
    local busy = {}
    for i = 1, 5 do
      busy[i] = conn_to(server.port, survivor_pid)
      busy[i]:send(helpers.build_request("GET", "/slow"))
    end
    signal.kill(victim, signal.SIGKILL)
    assert.equal(tostring(survivor_pid), survivor:request("GET", "/pid").body)
    assert.truthy(helpers.eventually(function()
      local p = server:workers()
      return #p == 2 and not contains(p, victim)
    end, 10), "no new worker")
    for _, c in ipairs(busy) do
      local resp = assert(c:read_response())
      assert.equal("done " .. survivor_pid, resp.body)
      c:close()
    end
    survivor:close()
    -- The new worker serves too.
    local new_pid
    for _, p in ipairs(server:workers()) do if p ~= survivor_pid then new_pid = p end end
    local c = conn_to(server.port, new_pid)
    c:close()
    -- At once: a worker that had been serving is not restarted after
    -- the delay that one dying on startup gets.
    assert.truthy(helpers.eventually(function()
      return server:stderr():find(("worker %%d+ %%(pid %d%%) killed by signal 9 %%(Killed%%); starting a new one\n")
        :format(victim))
    end), server:stderr())
  end)

  it("makes the workers exit when the master is killed, a stuck one too", function()
    local server = support.start(APP, { "--workers", "2" })
    local pids = helpers.eventually(function()
      local p = server:workers()
      return #p == 2 and p
    end)
    -- One worker spins in a compiled loop: it can run no code of its own
    -- any more, so only the kernel can end it.
    local stuck = conn_to(server.port, pids[1])
    stuck:send(helpers.build_request("GET", "/spin"))
    assert.truthy(helpers.eventually(function()
      local f = io.open("/proc/" .. pids[1] .. "/stat")
      local st = f and f:read("*l")
      if f then f:close() end
      return st and st:match("^.*%) (%a)") == "R"
    end), "the worker did not start spinning")
    signal.kill(server.pid, signal.SIGKILL)
    server:wait(10, nil, 137)
    local gone = helpers.eventually(function()
      for _, pid in ipairs(pids) do
        if signal.kill(pid, 0) == 0 then return false end
      end
      return true
    end, 10)
    stuck:close()
    if not gone then for _, pid in ipairs(pids) do signal.kill(pid, signal.SIGKILL) end end
    assert.truthy(gone, "workers outlived their master")
  end)
end)

describe("--handler-timeout", function()
  it("kills and replaces a worker stuck in a handler; the other keeps serving", function()
    local server = support.start(APP, { "--workers", "2", "--handler-timeout", "1" })
    local pids = helpers.eventually(function()
      local p = server:workers()
      return #p == 2 and p
    end)
    local stuck_conn = conn_to(server.port, pids[1])
    local other = conn_to(server.port, pids[1], true)
    local started = helpers.now()
    stuck_conn:send(helpers.build_request("GET", "/spin"))
    -- The other worker answers while the first spins: before the stuck
    -- connection ends (not before some number of seconds, which a busy
    -- machine could stretch).
    local answered_meanwhile = 0
    while helpers.now() - started < 0.8 do
      assert.equal(200, other:request("GET", "/pid").status)
      stuck_conn:read_available()
      if not stuck_conn.eof then answered_meanwhile = answered_meanwhile + 1 end
      helpers.nap(0.05)
    end
    assert(answered_meanwhile >= 1, "the other worker answered only after the stuck one was gone")
    -- The spinning worker is killed: its connection ends without a
    -- response, --handler-timeout (1 s) after the handler began, not the
    -- default 30 s.
    local resp = stuck_conn:read_response({ timeout = 15 })
    local ended = helpers.now() - started
    assert.is_nil(resp)
    assert.is_true(ended >= 1.0 and ended < 10, ("ended after %.2f s"):format(ended))
    assert.truthy(helpers.eventually(function()
      local p = server:workers()
      return #p == 2 and not contains(p, pids[1])
    end, 10), "the stuck worker was not replaced")
    assert.equal(200, other:request("GET", "/pid").status)
    other:close()
    stuck_conn:close()
    local log = server:stderr()
    local ran = log:match(("worker %%d+ %%(pid %d%%) has been running GET /spin %%(spec/fixtures/workers%%.lua%%) for (%%d+%%.%%d) s"):format(pids[1]))
    assert.truthy(ran, log)
    assert(tonumber(ran) >= 1.0, log)
  end)
end)

describe("SIGTERM", function()
  it("lets 100 in-flight requests finish, closes idle connections, exits 0", function()
    local server = support.start(APP, { "--workers", "2" })
    local idle = helpers.connect(server.port)
    assert.equal(200, idle:request("GET", "/pid").status)
    local conns = {}
    for i = 1, 100 do
      conns[i] = helpers.connect(server.port)
      conns[i]:send(helpers.build_request("GET", "/slow"))
    end
    assert.truthy(helpers.eventually(function()
      local _, _, body = helpers.request(server.port, "GET", "/started")
      return body == "100"
    end), "the 100 handlers did not all start")
    signal.kill(server.pid, signal.SIGTERM)
    assert.truthy(idle:wait_eof(10), "an idle keep-alive connection stayed open")
    for i, c in ipairs(conns) do
      local resp = c:read_response({ timeout = 10 })
      assert.truthy(resp, "request " .. i .. " got no response")
      assert.equal(200, resp.status)
      assert.truthy(resp.body:find("^done "))
      c:close()
    end
    assert.equal(0, server:wait(10))
    local ok = pcall(helpers.connect, server.port, 1)
    assert.is_false(ok, "still accepting after shutdown")
    -- The master says when the stop begins (with the connections to
    -- drain: the 100 busy ones, and the idle one) and when it is over.
    local log = server:stderr()
    local n = log:match("%[info%] master: stopping %(SIGTERM%): draining (%d+) connections\n")
    assert.truthy(n, log)
    assert(tonumber(n) >= 100, log)
    assert.truthy(log:find("[info] master: stopped\n", 1, true), log)
  end)
end)

describe("logs", function()
  it("names the process on every error-log line and the worker in the access log", function()
    local access = os.tmpname()
    support.defer(function() os.remove(access) end)
    local server = support.start(APP, { "--workers", "2", "--access-log", access })
    local _, _, pid = helpers.request(server.port, "GET", "/log?m=one")
    local text = helpers.eventually(function()
      local t = read_file(access)
      return t:find("/log?m=one", 1, true) and t
    end)
    assert.truthy(text)
    local id = text:match('"GET /log%?m=one HTTP/1%.1" 200 %d+ [%d%.]+ %d+ %d+ (%d+)\n')
    assert.truthy(id == "1" or id == "2", text)
    local err = helpers.eventually(function()
      local e = server:stderr()
      return e:find("marker one", 1, true) and e
    end)
    assert.truthy(err)
    for line in err:gmatch("[^\n]+") do
      assert.truthy(line:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ %[%a+%] master: ")
                    or line:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ %[%a+%] worker [12]: "),
                    "line without its process: " .. line)
    end
    assert.truthy(err:find("%[warn%] worker " .. id .. ": marker one"), err)
    assert.truthy(pid)
  end)

  it("reopens both log files on SIGUSR1", function()
    local access, errors = os.tmpname(), os.tmpname()
    support.defer(function()
      for _, p in ipairs({ access, errors, access .. ".1", errors .. ".1" }) do os.remove(p) end
    end)
    local server = support.start(APP, { "--workers", "2", "--access-log", access,
                                        "--error-log", errors })
    helpers.request(server.port, "GET", "/log?m=before")
    assert.truthy(helpers.eventually(function()
      return read_file(access):find("m=before", 1, true)
        and read_file(errors):find("marker before", 1, true)
    end))
    assert.truthy(os.rename(access, access .. ".1"))
    assert.truthy(os.rename(errors, errors .. ".1"))
    signal.kill(server.pid, signal.SIGUSR1)
    -- Each worker reopens when the master passes the signal on; ask until
    -- lines from both workers are in the new files.
    assert.truthy(helpers.eventually(function()
      helpers.request(server.port, "GET", "/log?m=after")
      local text, errs = read_file(access), read_file(errors)
      return text:find("m=after[^\n]* 1\n") and text:find("m=after[^\n]* 2\n")
        and errs:find("worker 1: marker after", 1, true)
        and errs:find("worker 2: marker after", 1, true)
    end), "no new log files from both workers after SIGUSR1")
    assert.truthy(read_file(access .. ".1"):find("m=before", 1, true))
    assert.truthy(read_file(errors .. ".1"):find("marker before", 1, true))
  end)
end)
