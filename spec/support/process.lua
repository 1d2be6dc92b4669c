--- Running the moonport binary for the specs: to completion (`run`), or as
-- a server on 127.0.0.1 and a free port (`start`) that is stopped and
-- checked (exit status 0, no sanitizer report on stderr) when the spec is
-- done with it. Every wait is bounded by a deadline. Specs start servers
-- through spec/support/server.lua, which ties a server's life to busted's
-- blocks; spec/helpers.lua re-exports `run`, `start` and the rest.
--
-- The binary is $MOONPORT_BIN (default build/moonport) and paths are
-- relative to $MOONPORT_ROOT (default the working directory): CTest sets
-- both, and runs every spec from the repository root.

local socket = require("socket")
local unistd = require("posix.unistd")
local wait = require("posix.sys.wait")
local signal = require("posix.signal")
local fcntl = require("posix.fcntl")
local poll = require("posix.poll")
local dirent = require("posix.dirent")
local stdlib = require("posix.stdlib")

local process = {}

local function getenv(name)
  local v = os.getenv(name)
  if v == nil or v == "" then return nil end
  return v
end

process.root = getenv("MOONPORT_ROOT") or unistd.getcwd()
process.bin = getenv("MOONPORT_BIN") or "build/moonport"
if process.bin:sub(1, 1) ~= "/" then
  process.bin = process.root .. "/" .. process.bin
end

process.now = socket.gettime

local function shorten(s, n)
  n = n or 300
  s = tostring(s)
  if #s > n then s = s:sub(1, n) .. ("...(%d bytes)"):format(#s) end
  return (s:gsub("[%z\1-\8\11-\31\127-\255]", function(c)
    if c == "\r" then return "\\r" end
    return ("\\x%02x"):format(c:byte())
  end))
end
process.shorten = shorten

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
end

--- Sleeps briefly; only for use inside a loop bounded by a deadline.
function process.nap(seconds)
  socket.sleep(seconds or 0.01)
end

-- Closes every inherited descriptor above 2 except those in `keep`, so that a
-- child holds no copy of another test's sockets (a copy would keep a
-- connection open after the test closed it).
local function close_inherited(keep)
  local ok, names = pcall(dirent.dir, "/proc/self/fd")
  if not ok or not names then return end
  for _, name in ipairs(names) do
    local fd = tonumber(name)
    if fd and fd > 2 and not keep[fd] then unistd.close(fd) end
  end
end

-- Runs in a forked child: sets up descriptors and execs the server. Never
-- returns to busted; any failure ends the child with status 127.
-- In a forked child: sets (name -> string) or unsets (name -> false) the
-- variables of env.
local function set_env(env)
  for name, value in pairs(env or {}) do stdlib.setenv(name, value or nil) end
end

local function exec_child(argv, stdin_fd, stdout_fd, stderr_fd, keep, bin)
  pcall(function()
    if stdin_fd then unistd.dup2(stdin_fd, 0) end
    unistd.dup2(stdout_fd, 1)
    unistd.dup2(stderr_fd, 2)
    close_inherited(keep or {})
    -- lua-socket ignores SIGPIPE and the disposition survives exec; the
    -- server must cope with SIGPIPE itself, so give it the default back.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    unistd.chdir(process.root)
    unistd.exec(bin or process.bin, argv)
    io.stderr:write("exec ", bin or process.bin, " failed\n")
  end)
  unistd._exit(127)
end

local function open_devnull()
  return fcntl.open("/dev/null", fcntl.O_RDWR)
end

local function open_tmp()
  local path = os.tmpname()
  local fd = assert(fcntl.open(path, fcntl.O_WRONLY + fcntl.O_TRUNC))
  return path, fd
end

local function describe_status(reason, status)
  if reason == "exited" then return status end
  if reason == "killed" then return 128 + status end
  return -1
end

-- Waits for `pid` until `deadline`; returns the exit code (128+signal for a
-- signal), or nil on timeout.
local function wait_until(pid, deadline)
  while true do
    local wpid, reason, status = wait.wait(pid, wait.WNOHANG)
    if wpid == pid then return describe_status(reason, status), reason, status end
    if wpid == nil then return nil, reason end
    if process.now() >= deadline then return nil, "timeout" end
    process.nap(0.01)
  end
end

local function assert_binary(bin)
  bin = bin or process.bin
  if not unistd.access(bin, "x") then
    error("moonport binary not found or not executable: " .. bin ..
          " (set MOONPORT_BIN or build it with cmake --build build)", 3)
  end
end

--- Runs the binary to completion with `args` (a list of strings).
-- Returns exit code (128+signal when killed), stdout, stderr. Kills the
-- process and raises if it has not exited within `timeout` seconds.
function process.run(args, timeout)
  assert_binary()
  timeout = timeout or 10
  local out_path, out_fd = open_tmp()
  local err_path, err_fd = open_tmp()
  local null = open_devnull()
  local argv = { [0] = process.bin }
  for i, a in ipairs(args) do argv[i] = a end
  local pid = assert(unistd.fork())
  if pid == 0 then exec_child(argv, null, out_fd, err_fd) end
  unistd.close(out_fd); unistd.close(err_fd); unistd.close(null)
  local code = wait_until(pid, process.now() + timeout)
  if code == nil then
    signal.kill(pid, signal.SIGKILL)
    wait.wait(pid)
  end
  local out, err = read_file(out_path), read_file(err_path)
  os.remove(out_path); os.remove(err_path)
  if code == nil then
    error(("moonport %s did not exit within %gs; stdout: %s; stderr: %s"):format(
      table.concat(args, " "), timeout, shorten(out), shorten(err)), 2)
  end
  return code, out, err
end

------------------------------------------------------------------------------
-- Server processes
------------------------------------------------------------------------------

local Server = {}
Server.__index = Server

-- Runs in a forked child: copies the server's stdout into `out_fd` and its
-- first line into `ready_fd`, then closes `ready_fd`. Keeps draining so the
-- server can never block on a full stdout pipe.
local function drain_child(in_fd, out_fd, ready_fd)
  pcall(function()
    close_inherited({ [in_fd] = true, [out_fd] = true, [ready_fd] = true })
    local line_done = false
    while true do
      local data = unistd.read(in_fd, 65536)
      if data == nil or data == "" then break end
      unistd.write(out_fd, data)
      if not line_done then
        local nl = data:find("\n", 1, true)
        unistd.write(ready_fd, nl and data:sub(1, nl) or data)
        if nl then
          line_done = true
          unistd.close(ready_fd)
        end
      end
    end
  end)
  unistd._exit(0)
end

--- The pattern of the line the server prints once it listens.
process.listening_pattern =
  "^moonport (%S+) listening on http://([%d%.]+):(%d+) %((%d+) routes? from (.-), (%d+) workers?%)\n?$"

--- Starts `moonport --listen 127.0.0.1:0 [extra_args...] APP` (with
-- `opts.mock`, `--mock APP`: APP is a WireMock directory; `opts.env`:
-- variables to set (name -> string) or unset (name -> false) in its
-- environment; `opts.bin`: another moonport binary, an installed one, instead
-- of $MOONPORT_BIN).
-- `app_path` is relative to the repository root. Returns a server object
-- with `.port`, `.pid`, `.line` (the listening line), `:stop()` and
-- `:stderr()`. Raises with the server's stderr if it is not listening
-- within 10 s.
function process.start(app_path, extra_args, opts)
  opts = opts or {}
  assert_binary(opts.bin)
  local argv = { [0] = opts.bin or process.bin, "--listen", "127.0.0.1:0" }
  for _, a in ipairs(extra_args or {}) do argv[#argv + 1] = a end
  -- opts.mock: `--mock app_path` instead of an app script.
  if opts.mock then argv[#argv + 1] = "--mock" end
  argv[#argv + 1] = app_path

  local err_path, err_fd = open_tmp()
  local out_path, out_fd = open_tmp()
  local null = open_devnull()
  local so_r, so_w = assert(unistd.pipe())
  local ready_r, ready_w = assert(unistd.pipe())

  local pid = assert(unistd.fork())
  if pid == 0 then
    set_env(opts.env)
    exec_child(argv, null, so_w, err_fd, nil, opts.bin)
  end
  local drainer = assert(unistd.fork())
  if drainer == 0 then drain_child(so_r, out_fd, ready_w) end
  unistd.close(so_r); unistd.close(so_w); unistd.close(ready_w)
  unistd.close(out_fd); unistd.close(err_fd); unistd.close(null)

  local self = setmetatable({
    pid = pid, drainer = drainer, app = app_path, args = argv,
    err_path = err_path, out_path = out_path,
  }, Server)

  local line = ""
  local deadline = process.now() + (opts.timeout or 10)
  while not line:find("\n", 1, true) do
    local left = deadline - process.now()
    if left <= 0 then break end
    local n = poll.rpoll(ready_r, math.max(1, math.floor(left * 1000)))
    if n and n > 0 then
      local data = unistd.read(ready_r, 4096)
      if data == nil or data == "" then break end
      line = line .. data
    end
  end
  unistd.close(ready_r)

  local version, host, port, routes, from, workers = line:match(process.listening_pattern)
  if not port then
    local code = wait_until(pid, process.now())
    if code == nil then
      signal.kill(pid, signal.SIGKILL)
      wait.wait(pid)
    end
    self:_reap_drainer()
    local err = self:stderr()
    self:_cleanup()
    error(("moonport did not report listening for %s (%s): stdout %q, exit %s, stderr:\n%s"):format(
      app_path, table.concat(argv, " "), line, tostring(code), err), 2)
  end
  self.line = line:gsub("\n$", "")
  self.version, self.host, self.port = version, host, tonumber(port)
  self.routes, self.from, self.nworkers = tonumber(routes), from, tonumber(workers)
  return self
end

-- Whether the process of obj (a Server or a Program) still runs; once it
-- has exited, its exit status is kept in obj[field].
local function still_running(obj, field)
  if obj[field] then return false end
  local wpid, reason, status = wait.wait(obj.pid, wait.WNOHANG)
  if wpid == obj.pid then
    obj[field] = describe_status(reason, status)
    return false
  end
  return true
end

-- Another program the specs run beside moonport (a real upstream: a TLS
-- server, redis-server, memcached, postgres), its output in a scratch file.
local Program = {}
Program.__index = Program

-- Runs in a forked child: sets up descriptors, the working directory
-- (`opts.cwd`, default the repository root) and the environment
-- (`opts.env`: name -> value, false to unset), and execs `argv` (argv[1]
-- looked up on PATH). Never returns; any failure ends the child with 127.
local function exec_program(argv, in_fd, out_fd, err_fd, opts)
  pcall(function()
    unistd.dup2(in_fd, 0)
    unistd.dup2(out_fd, 1)
    unistd.dup2(err_fd, 2)
    close_inherited({})
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    unistd.chdir(opts.cwd or process.root)
    set_env(opts.env)
    local args = {}
    for i = 2, #argv do args[i - 1] = argv[i] end
    args[0] = argv[1]
    unistd.execp(argv[1], args)
    io.stderr:write("exec ", argv[1], " failed\n")
  end)
  unistd._exit(127)
end

--- Starts `argv` (argv[1] is looked up on PATH) with stdout and stderr in a
-- scratch file and stdin from /dev/null; `opts.cwd` and `opts.env` as for
-- `command`. Returns an object with `.pid`, `:output()` and `:stop()`; the
-- caller makes sure `stop` runs.
function process.spawn(argv, opts)
  local path, fd = open_tmp()
  local null = open_devnull()
  local pid = assert(unistd.fork())
  if pid == 0 then exec_program(argv, null, fd, fd, opts or {}) end
  unistd.close(fd)
  unistd.close(null)
  return setmetatable({ pid = pid, path = path, name = argv[1] }, Program)
end

--- Runs `argv` (argv[1] is looked up on PATH) to completion: a command the
-- specs need beside moonport (psql, initdb, openssl). `opts.stdin`: text
-- for its standard input (default none: /dev/null); `opts.cwd`: its
-- working directory (default the repository root); `opts.env`: variables
-- to set (name -> string) or unset (name -> false) in its environment;
-- `opts.timeout`: seconds (default 60), after which it is killed and
-- `command` raises. Returns the exit code (128+signal when killed by a
-- signal), stdout and stderr.
function process.command(argv, opts)
  opts = opts or {}
  local timeout = opts.timeout or 60
  local out_path, out_fd = open_tmp()
  local err_path, err_fd = open_tmp()
  local in_path, in_fd
  if opts.stdin then
    in_path = os.tmpname()
    local f = assert(io.open(in_path, "wb"))
    f:write(opts.stdin)
    f:close()
    in_fd = assert(fcntl.open(in_path, fcntl.O_RDONLY))
  else
    in_fd = open_devnull()
  end
  local pid = assert(unistd.fork())
  if pid == 0 then exec_program(argv, in_fd, out_fd, err_fd, opts) end
  unistd.close(out_fd); unistd.close(err_fd); unistd.close(in_fd)
  local code = wait_until(pid, process.now() + timeout)
  if code == nil then
    signal.kill(pid, signal.SIGKILL)
    wait.wait(pid)
  end
  local out, err = read_file(out_path), read_file(err_path)
  os.remove(out_path); os.remove(err_path)
  if in_path then os.remove(in_path) end
  if code == nil then
    error(("%s did not exit within %gs; stdout: %s; stderr: %s"):format(
      table.concat(argv, " "), timeout, shorten(out), shorten(err)), 2)
  end
  return code, out, err
end

--- What the program has written so far.
function Program:output()
  if not self.path then return self.output_text or "" end
  return read_file(self.path)
end

--- Whether the program still runs.
function Program:alive()
  return still_running(self, "status")
end

--- Stops the program: SIGTERM, then SIGKILL after 5 s, and removes its
-- scratch file (`output` still answers). Returns its exit status. Safe to
-- call twice.
function Program:stop()
  if not self.status then
    signal.kill(self.pid, signal.SIGTERM)
    local code = wait_until(self.pid, process.now() + 5)
    if code == nil then
      signal.kill(self.pid, signal.SIGKILL)
      code = wait_until(self.pid, process.now() + 5)
    end
    self.status = code
  end
  -- A program that has already exited (seen by `alive`) leaves its file too.
  if self.path then
    self.output_text = read_file(self.path)
    os.remove(self.path)
    self.path = nil
  end
  return self.status
end

--- A free TCP port on 127.0.0.1 (bound, then let go), for programs that
-- cannot pick their own.
function process.free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

--- Waits until something accepts TCP connections on 127.0.0.1:port, or
-- raises after `timeout` seconds (default 10) naming `program`'s output.
function process.wait_port(port, timeout, program)
  local deadline = process.now() + (timeout or 10)
  repeat
    local c = socket.tcp()
    c:settimeout(0.2)
    local ok = c:connect("127.0.0.1", port)
    c:close()
    if ok then return true end
    if program and not program:alive() then break end
    process.nap(0.02)
  until process.now() >= deadline
  error(("nothing listens on port %d%s"):format(port,
    program and (": " .. program.name .. " said: " .. shorten(program:output(), 600)) or ""), 2)
end

--- The pids of the processes whose parent is `pid`, sorted.
function process.children(pid)
  local found = {}
  for name in dirent.files("/proc") do
    if name:match("^%d+$") then
      local f = io.open("/proc/" .. name .. "/stat")
      local stat = f and f:read("*l")
      if f then f:close() end
      -- The command name may hold spaces and parentheses: skip past the last ')'.
      local ppid = stat and stat:match("^.*%) %S+ (%d+)")
      if ppid and tonumber(ppid) == pid then found[#found + 1] = tonumber(name) end
    end
  end
  table.sort(found)
  return found
end

--- The pids of the server's worker processes, sorted.
function Server:workers()
  return process.children(self.pid)
end

--- What the server has written to stderr so far.
function Server:stderr()
  if self.stderr_text then return self.stderr_text end
  return read_file(self.err_path)
end

--- What the server has written to stdout so far (the listening line first).
function Server:stdout()
  if self.stdout_text then return self.stdout_text end
  return read_file(self.out_path)
end

function Server:_reap_drainer()
  if not self.drainer then return end
  if wait_until(self.drainer, process.now() + 2) == nil then
    signal.kill(self.drainer, signal.SIGKILL)
    wait.wait(self.drainer)
  end
  self.drainer = nil
end

function Server:_cleanup()
  if self.err_path then
    self.stderr_text = read_file(self.err_path)
    os.remove(self.err_path)
    self.err_path = nil
  end
  if self.out_path then
    self.stdout_text = read_file(self.out_path)
    os.remove(self.out_path)
    self.out_path = nil
  end
end

--- Is the process still running (not yet exited)?
function Server:alive()
  return still_running(self, "code")
end

--- Stops the server with SIGTERM (or `sig`), waits at most `timeout`
-- seconds, then SIGKILLs it. Raises unless it exited 0 and its stderr holds
-- no sanitizer report. Returns the exit code. Safe to call twice.
function Server:stop(sig, timeout)
  if self.stopped then return self.code end
  if self:alive() then signal.kill(self.pid, sig or signal.SIGTERM) end
  return self:wait(timeout, sig or signal.SIGTERM)
end

--- Waits at most `timeout` seconds (default 10) for the server to exit on
-- its own (after a signal the test sent itself), without signalling it;
-- SIGKILLs it after that. Checks the exit like `stop`, against `want`
-- (default 0).
function Server:wait(timeout, sig, want)
  if self.stopped then return self.code end
  self.stopped = true
  timeout = timeout or 10
  local code = self.code
  local killed = false
  if code == nil then
    code = wait_until(self.pid, process.now() + timeout)
    if code == nil then
      killed = true
      signal.kill(self.pid, signal.SIGKILL)
      local _, reason, status = wait.wait(self.pid)
      code = describe_status(reason, status)
    end
  end
  self.code = code
  self:_reap_drainer()
  self:_cleanup()
  local err = self:stderr()
  if killed then
    error(("moonport (%s) did not exit within %gs%s; stderr:\n%s"):format(
      self.app, timeout, sig and (" of signal " .. sig) or "", err), 2)
  end
  if code ~= (want or 0) then
    error(("moonport (%s) exited with %s, want %s; stderr:\n%s"):format(
      self.app, tostring(code), tostring(want or 0), err), 2)
  end
  for _, bad in ipairs({ "AddressSanitizer", "LeakSanitizer", "runtime error:" }) do
    if err:find(bad, 1, true) then
      error(("moonport (%s) stderr reports %q:\n%s"):format(self.app, bad, err), 2)
    end
  end
  return code
end

return process
