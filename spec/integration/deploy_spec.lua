-- Running moonport as a deployed service: --trusted-proxy and the client
-- address, --pid-file, the listening sockets the master holds (a worker
-- started again accepts on its predecessor's socket), --user dropping
-- privileges, and a binary upgrade (SIGUSR2) under load with no failed
-- request.
local ffi = require("ffi")
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")
local socket = require("socket")
local signal = require("posix.signal")
local unistd = require("posix.unistd")
local wait = require("posix.sys.wait")

local APP = "spec/fixtures/deploy.lua"

ffi.cdef([[
int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
          unsigned long a5);
long readlink(const char *path, char *buf, unsigned long size);
]])
local PR_SET_CHILD_SUBREAPER = 36

local function get(port, target, headers)
  local status, _, body = helpers.request(port, "GET", target, headers)
  return status, body
end

-- The descriptor link ("socket:[123]") of fd in process pid.
-- (luaposix's readlink sizes its buffer by lstat, which is 0 in /proc.)
local function fd_link(pid, fd)
  local buf = ffi.new("char[256]")
  local n = ffi.C.readlink(("/proc/%d/fd/%d"):format(pid, fd), buf, 256)
  if n <= 0 then return nil end
  return ffi.string(buf, n)
end

-- "Uid:" or "Gid:" of /proc/PID/status: the real and effective ids.
local function ids(pid, which)
  local f = io.open(("/proc/%d/status"):format(pid))
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  local real, eff = text:match("\n" .. which .. ":%s+(%d+)%s+(%d+)")
  return tonumber(real), tonumber(eff)
end

local function exists(pid)
  return unistd.access(("/proc/%d"):format(pid)) == 0
end

describe("--trusted-proxy", function()
  local dir = helpers.scratch_dir()
  local log = dir .. "/access.log"
  local server = support.serve(APP, { "--trusted-proxy", "127.0.0.1",
    "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "2001:db8::/32",
    "--access-log", log })
  teardown(function() helpers.remove_dir(dir) end)

  local function addr(xff)
    local headers = {}
    if type(xff) == "table" then
      for _, v in ipairs(xff) do headers[#headers + 1] = { "X-Forwarded-For", v } end
    elseif xff then
      headers["X-Forwarded-For"] = xff
    end
    local status, body = get(server.port, "/addr", headers)
    assert.equal(200, status)
    return body
  end

  it("takes the client from X-Forwarded-For when the peer is a proxy", function()
    assert.equal("203.0.113.7", addr("203.0.113.7"))
    assert.equal("127.0.0.1", addr(nil))
  end)

  it("takes the rightmost address that is not a trusted proxy", function()
    -- The client may send anything leftmost; trusted hops append.
    assert.equal("198.51.100.9", addr("1.1.1.1, 198.51.100.9, 10.1.2.3"))
    assert.equal("198.51.100.9", addr({ "1.1.1.1, 198.51.100.9", "10.1.2.3" }))
    -- All trusted: the leftmost.
    assert.equal("10.9.9.9", addr("10.9.9.9, 10.1.2.3"))
    -- A hop that is not an address stops the walk at the last trusted one.
    assert.equal("10.1.2.3", addr("198.51.100.9, unknown, 10.1.2.3"))
  end)

  it("reads IPv6 addresses and drops ports", function()
    assert.equal("2001:db9::1", addr("2001:db9::1, 2001:db8::5"))
    assert.equal("2001:db9::2", addr("[2001:db9::2]:443"))
    assert.equal("192.0.2.1", addr("192.0.2.1:5555"))
  end)

  it("writes the client's address in the access log", function()
    assert.equal("192.0.2.44", addr("192.0.2.44"))
    assert.truthy(helpers.eventually(function()
      local text = helpers.read_file(log)
      return text:find("\n?192%.0%.2%.44 %- %- %[") ~= nil
    end), helpers.read_file(log))
  end)
end)

describe("--trusted-proxy, a peer not in it", function()
  local server = support.serve(APP, { "--trusted-proxy", "10.0.0.0/8" })
  it("ignores X-Forwarded-For", function()
    local status, body = get(server.port, "/addr", { ["X-Forwarded-For"] = "203.0.113.7" })
    assert.equal(200, status)
    assert.equal("127.0.0.1", body)
  end)
end)

describe("--pid-file", function()
  it("holds the master's pid while it serves, refuses a second server, and goes at exit", function()
    local dir = helpers.scratch_dir()
    support.defer(function() helpers.remove_dir(dir) end)
    local path = dir .. "/moonport.pid"
    local server = support.start(APP, { "--pid-file", path })
    assert.equal(tostring(server.pid) .. "\n", helpers.read_file(path))
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--pid-file", path, APP })
    assert.equal(1, code)
    assert.truthy(err:find("is held by a running moonport (pid " .. server.pid .. ")", 1, true), err)
    assert.equal(tostring(server.pid) .. "\n", helpers.read_file(path))
    server:stop()
    assert.is_nil(io.open(path))
  end)

  it("takes over a file a dead server left", function()
    local dir = helpers.scratch_dir()
    support.defer(function() helpers.remove_dir(dir) end)
    local path = dir .. "/moonport.pid"
    helpers.write_file(path, "999999\n")
    local server = support.start(APP, { "--pid-file", path })
    assert.equal(tostring(server.pid) .. "\n", helpers.read_file(path))
  end)
end)

describe("the listening sockets", function()
  it("are the master's: a worker started again accepts on the same socket, and connections made meanwhile wait for it", function()
    local server = support.start(APP, { "--workers", "1" })
    local pid = helpers.eventually(function() return server:workers()[1] end)
    local before = fd_link(pid, 5)
    assert.truthy(before and before:match("^socket:"), tostring(before))
    -- The master holds the same socket.
    local held = false
    for _, name in ipairs(require("posix.dirent").dir("/proc/" .. server.pid .. "/fd")) do
      if fd_link(server.pid, tonumber(name) or -1) == before then held = true end
    end
    assert.is_true(held, "the master does not hold the worker's socket")
    signal.kill(pid, signal.SIGKILL)
    -- No worker accepts now; the connection waits in the socket's queue.
    local c = helpers.connect(server.port)
    c:send(helpers.build_request("GET", "/pid"))
    local resp = assert(c:read_response())
    c:close()
    assert.equal(200, resp.status)
    local new = tonumber(resp.body)
    assert.are_not.equal(pid, new)
    assert.equal(before, fd_link(new, 5))
  end)
end)

describe("--user", function()
  local function pick_port()
    for port = 990, 1020 do
      local s = socket.tcp()
      local ok = s:bind("127.0.0.1", port)
      s:close()
      if ok then return port end
    end
  end

  it("drops the master and workers to the user after binding a privileged port", function()
    if unistd.geteuid() ~= 0 then
      pending("needs root (runs as uid " .. unistd.geteuid() .. "): CI runs the suite as root")
      return
    end
    assert.truthy(require("posix.pwd").getpwnam("nobody"), "no user nobody")
    local dir = helpers.scratch_dir()
    support.defer(function() helpers.remove_dir(dir) end)
    local errlog = dir .. "/error.log"
    local port = assert(pick_port(), "no free port below 1024")
    local server = support.start(APP, { "--listen", "127.0.0.1:" .. port,
      "--workers", "2", "--user", "nobody", "--error-log", errlog })
    assert.equal(port, server.port)
    local uid = require("posix.pwd").getpwnam("nobody").pw_uid
    assert.same({ uid, uid }, { ids(server.pid, "Uid") })
    local pids = helpers.eventually(function()
      local p = server:workers()
      return #p == 2 and p
    end)
    for _, pid in ipairs(pids) do
      assert.same({ uid, uid }, { ids(pid, "Uid") })
    end
    local owner = require("posix.sys.stat").stat(errlog).st_uid
    assert.equal(uid, owner)
    -- A worker started again cannot bind port < 1024 as nobody: it
    -- accepts on the socket the master holds.
    signal.kill(pids[1], signal.SIGKILL)
    local new = helpers.eventually(function()
      for _, p in ipairs(server:workers()) do
        if p ~= pids[1] and p ~= pids[2] then return p end
      end
    end)
    assert.truthy(new, "no worker started again")
    assert.same({ uid, uid }, { ids(new, "Uid") })
    for _ = 1, 20 do assert.equal(200, (get(port, "/pid"))) end
  end)

  it("is refused unless the server starts as root", function()
    if unistd.geteuid() == 0 then
      -- As root, the refusal is seen through a process that is not.
      local code, _, err = process.command({ "setpriv", "--reuid=nobody",
        "--regid=nogroup", "--clear-groups", process.bin, "--listen",
        "127.0.0.1:0", "--user", "nobody", process.root .. "/" .. APP })
      assert.equal(1, code)
      assert.truthy(err:find("only a master started as root can change its user", 1, true), err)
      return
    end
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--user", "nobody", APP })
    assert.equal(1, code)
    assert.truthy(err:find("only a master started as root can change its user", 1, true), err)
  end)

  it("refuses root and unknown users", function()
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--user", "root", APP })
    assert.equal(1, code)
    assert.truthy(err:find("that is root", 1, true), err)
    code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--user", "no-such-user-here", APP })
    assert.equal(1, code)
    assert.truthy(err:find("no such user", 1, true), err)
  end)
end)

-- A load client in a forked process: requests GET /mark (or target) in a
-- loop until
-- `deadline`, on one keep-alive connection or a new connection each time,
-- and writes "ok fail retried mark=count..." and its first failures to
-- `out`. A request sent on a reused keep-alive connection that the server
-- closed before any byte of an answer (it was idle when its worker began
-- to drain) is sent again on a new connection, as HTTP clients do (RFC
-- 9112, 9.3.1); any other error, and any answer but 200, is a failure.
-- Whether a file is there.
local function exists_file(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local function load_client(port, keepalive, deadline, out, target, stop_file)
  local ok, fail, retried, marks, errors = 0, 0, 0, {}, {}
  local c, reused
  local req = "GET " .. (target or "/mark") .. " HTTP/1.1\r\nHost: t\r\n" ..
    (keepalive and "" or "Connection: close\r\n") .. "\r\n"
  local function failed(why)
    fail = fail + 1
    if #errors < 5 then errors[#errors + 1] = why end
    if c then c:close() end
    c = nil
  end
  while socket.gettime() < deadline and not exists_file(stop_file) do
    if c == nil then
      c = socket.tcp()
      c:settimeout(5)
      local done, err = c:connect("127.0.0.1", port)
      reused = false
      if not done then
        failed("connect: " .. tostring(err))
        goto next
      end
    end
    do
      local sent, serr = c:send(req)
      local line, err = nil, serr
      if sent then line, err = c:receive("*l") end
      if not line then
        c:close()
        c = nil
        if reused then retried = retried + 1 else failed("no answer: " .. tostring(err)) end
        goto next
      end
      local status = tonumber(line:match("^HTTP/1%.1 (%d+)"))
      local length, close = 0, not keepalive
      repeat
        local h = c:receive("*l")
        if h == nil then break end
        local n = h:match("^[Cc]ontent%-[Ll]ength:%s*(%d+)")
        if n then length = tonumber(n) end
        if h:lower():match("^connection:%s*close") then close = true end
      until h == ""
      local body = length > 0 and c:receive(length) or ""
      if status ~= 200 or body == nil then
        failed("answer: " .. line)
        goto next
      end
      ok = ok + 1
      marks[body] = (marks[body] or 0) + 1
      if close then
        c:close()
        c = nil
      else
        reused = true
      end
    end
    ::next::
  end
  if c then c:close() end
  local f = io.open(out, "w")
  local parts = { ok, fail, retried }
  for mark, n in pairs(marks) do parts[#parts + 1] = mark .. "=" .. n end
  f:write(table.concat(parts, " "), "\n", table.concat(errors, "\n"), "\n")
  f:close()
end

describe("a binary upgrade (SIGUSR2)", function()
  it("hands the sockets to a new master under load, with no failed request", function()
    -- The new master is the old one's child: once the old one exits it
    -- becomes this process's, to be reaped here.
    ffi.C.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    local dir = helpers.scratch_dir()
    support.defer(function() helpers.remove_dir(dir) end)
    local mark, pidfile = dir .. "/mark", dir .. "/moonport.pid"
    helpers.write_file(mark, "old\n")
    local server = support.start(APP, { "--workers", "2", "--no-watch",
      "--pid-file", pidfile }, { env = { DEPLOY_MARK_FILE = mark } })
    local new_master
    support.defer(function()
      -- The new master, also when the test failed before it knew its pid
      -- (the pid file names it from its start).
      local ok, text = pcall(helpers.read_file, pidfile)
      local p = new_master or (ok and tonumber(text))
      if p and p ~= server.pid and exists(p) then
        signal.kill(p, signal.SIGKILL)
        wait.wait(p)
      end
      ffi.C.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    end)
    -- The clients run until the stop file is there (at most 60 s).
    local start = socket.gettime()
    local deadline = start + 60
    local stop_file = dir .. "/stop"
    local clients = {}
    -- Two clients on keep-alive connections, two on a new connection per
    -- request, and four whose requests take 300 ms, so that some are in
    -- flight on the old workers when they begin to drain.
    for i = 1, 8 do
      local out = ("%s/client%d"):format(dir, i)
      local pid = assert(unistd.fork())
      if pid == 0 then
        pcall(load_client, server.port, i % 2 == 0, deadline, out,
          i > 4 and "/slow?ms=300" or "/mark", stop_file)
        unistd._exit(0)
      end
      clients[i] = { pid = pid, out = out, keepalive = i % 2 == 0 }
    end
    support.defer(function()
      for _, c in ipairs(clients) do
        if not c.reaped then
          signal.kill(c.pid, signal.SIGKILL)
          wait.wait(c.pid)
        end
      end
    end)
    -- Load on the old binary for a moment first.
    process.nap(1)
    -- The new binary's app answers differently.
    helpers.write_file(mark, "new\n")
    signal.kill(server.pid, signal.SIGUSR2)
    -- The old master hands over, drains and exits.
    assert.truthy(helpers.eventually(function() return not server:alive() end, 10),
      "the old master did not exit")
    local handover = socket.gettime() - start
    new_master = tonumber(helpers.read_file(pidfile))
    assert.truthy(new_master and new_master ~= server.pid, helpers.read_file(pidfile))
    -- Load on the new binary for a moment, then the clients stop.
    assert.truthy(helpers.eventually(function() return select(2, get(server.port, "/mark")) == "new" end, 15),
      "the new binary does not answer")
    process.nap(0.5)
    helpers.write_file(stop_file, "")
    local totals = { ok = 0, fail = 0, retried = 0, old = 0, new = 0 }
    for _, c in ipairs(clients) do
      wait.wait(c.pid)
      c.reaped = true
      local text = helpers.read_file(c.out)
      local ok, fail, retried = text:match("^(%d+) (%d+) (%d+)")
      assert.truthy(ok, text)
      totals.ok = totals.ok + tonumber(ok)
      totals.fail = totals.fail + tonumber(fail)
      totals.retried = totals.retried + tonumber(retried)
      totals.old = totals.old + tonumber(text:match("old=(%d+)") or 0)
      totals.new = totals.new + tonumber(text:match("new=(%d+)") or 0)
      assert.equal("0", fail, text)
    end
    print(("\nupgrade under load: %d requests, %d failed, %d resent on "
      .. "a keep-alive connection closed idle, %d by the old binary, %d by the "
      .. "new; the old master exited %.2f s in"):format(totals.ok, totals.fail,
      totals.retried, totals.old, totals.new, handover))
    assert.equal(0, totals.fail)
    assert.is_true(totals.old > 0 and totals.new > 0)
    assert.equal(totals.ok, totals.old + totals.new)
    -- The new master serves, with the old one's pid file, and stops cleanly.
    local status, body = get(server.port, "/mark")
    assert.equal(200, status)
    assert.equal("new", body)
    signal.kill(new_master, signal.SIGTERM)
    local reason, code
    assert.truthy(helpers.eventually(function()
      local pid, r, c = wait.wait(new_master, wait.WNOHANG)
      if pid == new_master then reason, code = r, c return true end
    end, 20), "the new master did not exit on SIGTERM")
    assert.equal("exited", reason)
    assert.equal(0, code)
    new_master = nil
    assert.is_nil(io.open(pidfile))
    -- The old master's exit (0), and no sanitizer report from either.
    server:wait(1)
  end)

  it("keeps the old master serving when the new one cannot start", function()
    local dir = helpers.scratch_dir()
    support.defer(function() helpers.remove_dir(dir) end)
    local app = dir .. "/app.lua"
    helpers.write_file(app, helpers.read_file(APP))
    local pidfile = dir .. "/moonport.pid"
    local server = support.start(app, { "--no-watch", "--pid-file", pidfile })
    helpers.write_file(app, "error('broken')\n")
    signal.kill(server.pid, signal.SIGUSR2)
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("upgrade failed: the new master %(pid %d+%) exited with status 1")
    end), server:stderr())
    assert.is_true(server:alive())
    assert.equal(200, (get(server.port, "/pid")))
    assert.equal(tostring(server.pid) .. "\n", helpers.read_file(pidfile))
  end)
end)
