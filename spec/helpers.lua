--- Helpers for moonport's integration specs.
--
-- Starts the real binary on 127.0.0.1 with a free port, stops it and checks
-- that it exited cleanly, and speaks raw HTTP/1.1 over lua-socket with a
-- strict response parser (CRLF line ends, Content-Length, chunked framing,
-- read-until-close). Every wait in here is bounded by a deadline.
--
-- Usage:
--   local helpers = require("spec.helpers")
--   local server = helpers.start("scripts/api.lua")
--   local status, headers, body = helpers.request(server.port, "GET", "/health")
--   server:stop()

local socket = require("socket")
local cjson = require("cjson.safe")
local unistd = require("posix.unistd")
local wait = require("posix.sys.wait")
local signal = require("posix.signal")
local fcntl = require("posix.fcntl")
local poll = require("posix.poll")
local dirent = require("posix.dirent")

local helpers = {}

local function getenv(name)
  local v = os.getenv(name)
  if v == nil or v == "" then return nil end
  return v
end

helpers.root = getenv("MOONPORT_ROOT") or unistd.getcwd()
helpers.bin = getenv("MOONPORT_BIN") or "build/moonport"
if helpers.bin:sub(1, 1) ~= "/" then
  helpers.bin = helpers.root .. "/" .. helpers.bin
end

--- Default bound, in seconds, on any single wait on a socket or process.
helpers.timeout = 5

helpers.now = socket.gettime

local function shorten(s, n)
  n = n or 300
  s = tostring(s)
  if #s > n then s = s:sub(1, n) .. ("...(%d bytes)"):format(#s) end
  return (s:gsub("[%z\1-\8\11-\31\127-\255]", function(c)
    if c == "\r" then return "\\r" end
    return ("\\x%02x"):format(c:byte())
  end))
end
helpers.shorten = shorten

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
end

local function resolve(path)
  if path:sub(1, 1) == "/" then return path end
  return helpers.root .. "/" .. path
end
helpers.resolve = resolve

--- Sleeps briefly; only for use inside a loop bounded by a deadline.
function helpers.nap(seconds)
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
local function exec_child(argv, stdin_fd, stdout_fd, stderr_fd, keep)
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
    unistd.chdir(helpers.root)
    unistd.exec(helpers.bin, argv)
    io.stderr:write("exec ", helpers.bin, " failed\n")
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
    if helpers.now() >= deadline then return nil, "timeout" end
    helpers.nap(0.01)
  end
end

local function assert_binary()
  if not unistd.access(helpers.bin, "x") then
    error("moonport binary not found or not executable: " .. helpers.bin ..
          " (set MOONPORT_BIN or build it with cmake --build build)", 3)
  end
end

--- Runs the binary to completion with `args` (a list of strings).
-- Returns exit code (128+signal when killed), stdout, stderr. Kills the
-- process and raises if it has not exited within `timeout` seconds.
function helpers.run(args, timeout)
  assert_binary()
  timeout = timeout or 10
  local out_path, out_fd = open_tmp()
  local err_path, err_fd = open_tmp()
  local null = open_devnull()
  local argv = { [0] = helpers.bin }
  for i, a in ipairs(args) do argv[i] = a end
  local pid = assert(unistd.fork())
  if pid == 0 then exec_child(argv, null, out_fd, err_fd) end
  unistd.close(out_fd); unistd.close(err_fd); unistd.close(null)
  local code = wait_until(pid, helpers.now() + timeout)
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
helpers.listening_pattern =
  "^moonport (%S+) listening on http://([%d%.]+):(%d+) %((%d+) routes? from (.-), (%d+) workers?%)\n?$"

--- Starts `moonport --listen 127.0.0.1:0 [extra_args...] APP` (with
-- `opts.mock`, `--mock APP`: APP is a WireMock directory).
-- `app_path` is relative to the repository root. Returns a server object
-- with `.port`, `.pid`, `.line` (the listening line), `:stop()` and
-- `:stderr()`. Raises with the server's stderr if it is not listening
-- within 10 s.
function helpers.start(app_path, extra_args, opts)
  assert_binary()
  opts = opts or {}
  local argv = { [0] = helpers.bin, "--listen", "127.0.0.1:0" }
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
  if pid == 0 then exec_child(argv, null, so_w, err_fd) end
  local drainer = assert(unistd.fork())
  if drainer == 0 then drain_child(so_r, out_fd, ready_w) end
  unistd.close(so_r); unistd.close(so_w); unistd.close(ready_w)
  unistd.close(out_fd); unistd.close(err_fd); unistd.close(null)

  local self = setmetatable({
    pid = pid, drainer = drainer, app = app_path, args = argv,
    err_path = err_path, out_path = out_path,
  }, Server)

  local line = ""
  local deadline = helpers.now() + (opts.timeout or 10)
  while not line:find("\n", 1, true) do
    local left = deadline - helpers.now()
    if left <= 0 then break end
    local n = poll.rpoll(ready_r, math.max(1, math.floor(left * 1000)))
    if n and n > 0 then
      local data = unistd.read(ready_r, 4096)
      if data == nil or data == "" then break end
      line = line .. data
    end
  end
  unistd.close(ready_r)

  local version, host, port, routes, from, workers = line:match(helpers.listening_pattern)
  if not port then
    local code = wait_until(pid, helpers.now())
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

--- The pids of the processes whose parent is `pid`, sorted.
function helpers.children(pid)
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
  return helpers.children(self.pid)
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
  if wait_until(self.drainer, helpers.now() + 2) == nil then
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
  if self.code then return false end
  local wpid, reason, status = wait.wait(self.pid, wait.WNOHANG)
  if wpid == self.pid then
    self.code = describe_status(reason, status)
    return false
  end
  return true
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
    code = wait_until(self.pid, helpers.now() + timeout)
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

------------------------------------------------------------------------------
-- Building requests
------------------------------------------------------------------------------

-- Normalises headers given as a list of {name, value} pairs or a map into a
-- list of pairs.
local function header_list(headers)
  local list = {}
  if not headers then return list end
  if #headers > 0 then
    for _, h in ipairs(headers) do list[#list + 1] = { h[1], h[2] } end
  else
    local names = {}
    for k in pairs(headers) do names[#names + 1] = k end
    table.sort(names)
    for _, k in ipairs(names) do list[#list + 1] = { k, headers[k] } end
  end
  return list
end

--- Builds the raw bytes of a request. `headers` is a list of {name, value}
-- pairs or a map. Adds `Host: 127.0.0.1` unless a Host header is given, and
-- `Content-Length` for a body unless Content-Length or Transfer-Encoding is
-- given. `version` defaults to "HTTP/1.1".
function helpers.build_request(method, target, headers, body, version)
  local list = header_list(headers)
  local has = {}
  for _, h in ipairs(list) do has[h[1]:lower()] = true end
  local out = { ("%s %s %s\r\n"):format(method, target, version or "HTTP/1.1") }
  if not has.host then out[#out + 1] = "Host: 127.0.0.1\r\n" end
  for _, h in ipairs(list) do out[#out + 1] = h[1] .. ": " .. h[2] .. "\r\n" end
  if body and not has["content-length"] and not has["transfer-encoding"] then
    out[#out + 1] = "Content-Length: " .. #body .. "\r\n"
  end
  out[#out + 1] = "\r\n"
  out[#out + 1] = body or ""
  return table.concat(out)
end

--- Encodes `body` with chunked framing, in chunks of `size` bytes (default:
-- one chunk), followed by the last chunk and an empty trailer.
function helpers.chunked(body, size)
  local out = {}
  size = size or math.max(#body, 1)
  local i = 1
  while i <= #body do
    local piece = body:sub(i, i + size - 1)
    out[#out + 1] = ("%x\r\n%s\r\n"):format(#piece, piece)
    i = i + size
  end
  out[#out + 1] = "0\r\n\r\n"
  return table.concat(out)
end

--- The body GET /blob/:n must return: `n` bytes of "abcdefghij" repeating.
function helpers.blob(n)
  return ("abcdefghij"):rep(math.floor(n / 10) + 1):sub(1, n)
end

------------------------------------------------------------------------------
-- Parsing responses
------------------------------------------------------------------------------

local function parse_error(msg, buf)
  error("bad HTTP response from server: " .. msg .. "; bytes: " .. shorten(buf, 400), 0)
end

-- Parses one response at the start of `buf`. Returns the response and the
-- number of bytes it took; nil, "more" if `buf` holds only part of it; nil,
-- "eof" if the stream ended cleanly before any byte. Raises on bytes that
-- are not HTTP/1.1.
local function parse_response(buf, eof, is_head)
  local head_end = buf:find("\r\n\r\n", 1, true)
  if not head_end then
    if #buf == 0 and eof then return nil, "eof" end
    if eof then parse_error("stream ended inside the head", buf) end
    if buf:find("\n\n", 1, true) then parse_error("head ends with bare LF", buf) end
    return nil, "more"
  end
  local head = buf:sub(1, head_end - 1)
  local lines = {}
  for line in (head .. "\r\n"):gmatch("(.-)\r\n") do lines[#lines + 1] = line end
  for _, line in ipairs(lines) do
    if line:find("[\r\n]") then parse_error("bare CR or LF in the head", buf) end
  end
  local version, status, reason = lines[1]:match("^HTTP/(%d%.%d) (%d%d%d) ?(.*)$")
  if not version then parse_error("bad status line", buf) end
  local resp = {
    version = version, status = tonumber(status), reason = reason,
    header_list = {}, headers = {}, head = head,
  }
  for i = 2, #lines do
    local name, value = lines[i]:match("^([!#$%%&'*+%-.^_`|~%w]+):[ \t]*(.-)[ \t]*$")
    if not name then parse_error("bad header line " .. shorten(lines[i]), buf) end
    resp.header_list[#resp.header_list + 1] = { name, value }
    local key = name:lower()
    if resp.headers[key] then
      resp.headers[key] = resp.headers[key] .. ", " .. value
    else
      resp.headers[key] = value
    end
  end

  local pos = head_end + 4
  local code = resp.status
  local te = resp.headers["transfer-encoding"]
  local cl = resp.headers["content-length"]
  if is_head or code < 200 or code == 204 or code == 304 then
    resp.body = ""
    return resp, pos - 1
  end
  if te then
    if cl then parse_error("both Content-Length and Transfer-Encoding", buf) end
    if te:lower() ~= "chunked" then parse_error("unexpected Transfer-Encoding " .. te, buf) end
    resp.chunked = true
    resp.chunk_sizes = {}
    local parts = {}
    while true do
      local line_end = buf:find("\r\n", pos, true)
      if not line_end then
        if eof then parse_error("stream ended inside a chunk size line", buf) end
        return nil, "more"
      end
      local line = buf:sub(pos, line_end - 1)
      local hex = line:match("^(%x+)[ \t]*;?.*$")
      if not hex or line:find("[\r\n]") then parse_error("bad chunk size line " .. shorten(line), buf) end
      local size = tonumber(hex, 16)
      pos = line_end + 2
      if size == 0 then
        -- Trailer section: header lines until an empty line.
        while true do
          local t_end = buf:find("\r\n", pos, true)
          if not t_end then
            if eof then parse_error("stream ended inside the trailer", buf) end
            return nil, "more"
          end
          local t = buf:sub(pos, t_end - 1)
          pos = t_end + 2
          if t == "" then break end
        end
        break
      end
      if #buf < pos + size + 1 then
        if eof then parse_error("stream ended inside a chunk", buf) end
        return nil, "more", pos + size + 1
      end
      parts[#parts + 1] = buf:sub(pos, pos + size - 1)
      resp.chunk_sizes[#resp.chunk_sizes + 1] = size
      if buf:sub(pos + size, pos + size + 1) ~= "\r\n" then
        parse_error("chunk data not followed by CRLF", buf)
      end
      pos = pos + size + 2
    end
    resp.body = table.concat(parts)
    return resp, pos - 1
  end
  if cl then
    if not cl:match("^%d+$") then parse_error("bad Content-Length " .. cl, buf) end
    local n = tonumber(cl)
    if #buf < pos + n - 1 then
      if eof then
        parse_error(("stream ended after %d of %d body bytes"):format(#buf - pos + 1, n), buf)
      end
      return nil, "more", pos + n - 1
    end
    resp.body = buf:sub(pos, pos + n - 1)
    return resp, pos + n - 1
  end
  if not eof then return nil, "more" end
  resp.body = buf:sub(pos)
  resp.until_close = true
  return resp, #buf
end
helpers.parse_response = parse_response

------------------------------------------------------------------------------
-- Raw client connections
------------------------------------------------------------------------------

-- A connection keeps what it has read as `buf`. Reads are kept as a list
-- of pieces and joined only when `buf` is asked for, and a response whose
-- length is known is not parsed again until enough bytes are in: a large
-- body read in 64 KiB pieces costs linear time, not quadratic.
local Conn = {}

function Conn.__index(self, key)
  if key == "buf" then
    local parts = rawget(self, "parts")
    if #parts > 0 then
      rawset(self, "joined", rawget(self, "joined") .. table.concat(parts))
      for i = #parts, 1, -1 do parts[i] = nil end
      rawset(self, "pending", 0)
    end
    return rawget(self, "joined")
  end
  return Conn[key]
end

function Conn.__newindex(self, key, value)
  if key ~= "buf" then return rawset(self, key, value) end
  rawset(self, "joined", value)
  local parts = rawget(self, "parts")
  for i = #parts, 1, -1 do parts[i] = nil end
  rawset(self, "pending", 0)
  rawset(self, "need", nil)
end

--- Opens a TCP connection to 127.0.0.1:port. Returns a connection object.
function helpers.connect(port, timeout)
  local sock = assert(socket.tcp())
  sock:settimeout(timeout or helpers.timeout)
  local ok, err = sock:connect("127.0.0.1", port)
  if not ok then
    sock:close()
    error(("connect to 127.0.0.1:%s failed: %s"):format(tostring(port), tostring(err)), 2)
  end
  return setmetatable({ sock = sock, joined = "", parts = {}, pending = 0, eof = false,
                        port = port }, Conn)
end

--- Turns on TCP_NODELAY so that each send goes out as its own segment.
function Conn:nodelay()
  assert(self.sock:setoption("tcp-nodelay", true))
  return self
end

--- Sends all of `data`, within `timeout` seconds. Returns true, or nil and
-- the error ("closed", "timeout", ...).
function Conn:try_send(data, timeout)
  local deadline = helpers.now() + (timeout or helpers.timeout)
  local i = 1
  while i <= #data do
    local left = deadline - helpers.now()
    if left <= 0 then return nil, "timeout", i - 1 end
    self.sock:settimeout(left)
    local last, err, partial = self.sock:send(data, i)
    if last then
      i = last + 1
    elseif err == "timeout" then
      i = partial + 1
    else
      return nil, err, partial
    end
  end
  return true
end

--- Sends all of `data`; raises on failure.
function Conn:send(data, timeout)
  local ok, err, sent = self:try_send(data, timeout)
  if not ok then
    error(("send failed after %d of %d bytes: %s"):format(sent or 0, #data, err), 2)
  end
  return self
end

--- Sends `data` one byte per send call (turn on nodelay first).
function Conn:send_bytewise(data, timeout)
  for i = 1, #data do self:send(data:sub(i, i), timeout) end
  return self
end

--- Reads whatever is available, waiting until `deadline` at most. Returns
-- true if something changed (data or end of stream), false on timeout.
function Conn:fill(deadline)
  if self.eof then return false end
  local left = deadline - helpers.now()
  if left <= 0 then return false end
  local readable = socket.select({ self.sock }, nil, left)
  if not readable or #readable == 0 then return false end
  return self:read_available()
end

--- Reads what the socket holds now without waiting. Returns true if it read
-- bytes or saw the end of the stream.
function Conn:read_available()
  if self.eof then return false end
  self.sock:settimeout(0)
  local data, err, partial = self.sock:receive(65536)
  local chunk = data or partial
  local changed = false
  if chunk and #chunk > 0 then
    self.parts[#self.parts + 1] = chunk
    self.pending = self.pending + #chunk
    changed = true
  end
  if err == "closed" then
    self.eof, changed = true, true
  elseif err and err ~= "timeout" then
    self.eof, self.error, changed = true, err, true
  end
  return changed
end

--- Tries to take one complete response off the buffer without reading.
-- Returns the response, or nil and "more" / "eof".
function Conn:take_response(opts)
  opts = opts or {}
  while true do
    if self.need and not self.eof and #self.joined + self.pending < self.need then
      return nil, "more"
    end
    local resp, used, need = parse_response(self.buf, self.eof, opts.head)
    if not resp then
      self.need = need
      return nil, used
    end
    self.buf = self.buf:sub(used + 1)
    if resp.status >= 200 or resp.status == 101 or opts.interim then return resp end
  end
end

--- Reads one response. `opts.head`: the request was HEAD (no body);
-- `opts.timeout`: seconds to wait (default 5); `opts.interim`: return 1xx
-- responses instead of skipping them. Returns nil if the server closed the
-- connection cleanly before sending any byte of a response; raises on a
-- timeout or malformed bytes.
function Conn:read_response(opts)
  opts = opts or {}
  local deadline = helpers.now() + (opts.timeout or helpers.timeout)
  while true do
    local resp, why = self:take_response(opts)
    if resp then return resp end
    if why == "eof" then return nil, self.error or "closed" end
    if not self:fill(deadline) and helpers.now() >= deadline then
      error(("timed out after %gs waiting for a response; have %d bytes: %s"):format(
        opts.timeout or helpers.timeout, #self.buf, shorten(self.buf)), 2)
    end
  end
end

--- Waits up to `timeout` seconds for the server to close the connection.
-- Returns true if the stream ended with no further bytes; false and the
-- extra bytes (or "timeout") otherwise.
function Conn:wait_eof(timeout)
  local deadline = helpers.now() + (timeout or helpers.timeout)
  while not self.eof do
    if not self:fill(deadline) and helpers.now() >= deadline then break end
  end
  if self.eof and #self.buf == 0 then return true end
  if #self.buf > 0 then return false, "unexpected bytes before EOF: " .. shorten(self.buf) end
  return false, ("connection still open after %gs"):format(timeout or helpers.timeout)
end

--- Sends one request and reads its response.
function Conn:request(method, target, headers, body, opts)
  self:send(helpers.build_request(method, target, headers, body, opts and opts.version))
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.head = o.head or method == "HEAD"
  local resp = self:read_response(o)
  if not resp then error(("connection closed before a response to %s %s"):format(method, target), 2) end
  return resp
end

--- POSTs `piece` to `target` as `count` chunks sent `gap` seconds apart
-- (default 0.05), so that the body arrives in pieces, and returns the
-- response.
function Conn:post_in_pieces(target, piece, count, gap)
  self:nodelay()
  self:send("POST " .. target .. " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
  for _ = 1, count do
    self:send(("%x\r\n%s\r\n"):format(#piece, piece))
    socket.select(nil, nil, gap or 0.05)
  end
  self:send("0\r\n\r\n")
  return self:read_response()
end

function Conn:close()
  if self.sock then self.sock:close() end
  self.sock = nil
end

--- One request on a new connection. Returns status, headers (lowercase
-- map), body, and the whole response object.
function helpers.request(port, method, target, headers, body, opts)
  local conn = helpers.connect(port)
  local ok, resp = pcall(conn.request, conn, method, target, headers, body, opts)
  conn:close()
  if not ok then error(resp, 2) end
  return resp.status, resp.headers, resp.body, resp
end

--- Decodes a JSON body; raises with the body if it is not JSON.
function helpers.json(body)
  local v, err = cjson.decode(body)
  if v == nil then error(("body is not JSON (%s): %s"):format(tostring(err), shorten(body)), 2) end
  return v
end

--- Whether `text` is the JSON object made of `members` (each a
-- '"key":value' text) in some order: objects are written in table order,
-- which Lua does not fix. Returns true, or false and why.
function helpers.json_object_text(members, text)
  local function orders(list, n, out)
    if n <= 1 then
      out[#out + 1] = "{" .. table.concat(list, ",") .. "}"
      return out
    end
    for i = 1, n do
      list[i], list[n] = list[n], list[i]
      orders(list, n - 1, out)
      list[i], list[n] = list[n], list[i]
    end
    return out
  end
  for _, candidate in ipairs(orders({ unpack(members) }, #members, {})) do
    if candidate == text then return true end
  end
  return false, ("%s is not {%s} in any order"):format(tostring(text), table.concat(members, ","))
end

--- Checks that `resp` carries a JSON error body: {"error": "<string>"}.
-- Returns the message.
function helpers.json_error(resp)
  local ct = resp.headers["content-type"] or ""
  if not ct:lower():find("^application/json") then
    error(("error response Content-Type is %q, want application/json; body: %s"):format(
      ct, shorten(resp.body)), 2)
  end
  local v, err = cjson.decode(resp.body)
  if type(v) ~= "table" or type(v.error) ~= "string" or v.error == "" then
    error(("want a JSON body with a string \"error\" key, got %s (%s)"):format(
      shorten(resp.body), tostring(err)), 2)
  end
  return v.error
end

--- Values of every header named `name` (case-insensitive), in order.
function helpers.header_values(resp, name)
  local out = {}
  name = name:lower()
  for _, h in ipairs(resp.header_list) do
    if h[1]:lower() == name then out[#out + 1] = h[2] end
  end
  return out
end

--- Index of the first byte where `a` and `b` differ, or nil if equal.
function helpers.first_difference(a, b)
  if a == b then return nil end
  local n = math.min(#a, #b)
  local lo = 1
  -- Compare in blocks, then bytes, so megabyte bodies stay cheap.
  while lo <= n do
    local hi = math.min(lo + 4095, n)
    if a:sub(lo, hi) ~= b:sub(lo, hi) then
      for i = lo, hi do
        if a:byte(i) ~= b:byte(i) then return i end
      end
    end
    lo = hi + 1
  end
  return n + 1
end

------------------------------------------------------------------------------
-- Scratch files
------------------------------------------------------------------------------

--- Writes `text` to `path` (replacing it).
function helpers.write_file(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

--- What an editor that saves by rename does: a new file, renamed over.
function helpers.write_by_rename(path, text)
  helpers.write_file(path .. ".swp", text)
  assert(os.rename(path .. ".swp", path))
end

--- A new empty directory under /tmp.
function helpers.scratch_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(require("posix.sys.stat").mkdir(dir, 493))
  return dir
end

--- Removes a scratch directory and the files in it.
function helpers.remove_dir(dir)
  for name in dirent.files(dir) do
    if name ~= "." and name ~= ".." then os.remove(dir .. "/" .. name) end
  end
  unistd.rmdir(dir)
end

--- Waits until `fn()` returns a true value or `timeout` seconds pass.
-- Returns that value, or nil on timeout.
function helpers.eventually(fn, timeout)
  local deadline = helpers.now() + (timeout or helpers.timeout)
  repeat
    local v = fn()
    if v then return v end
    helpers.nap(0.02)
  until helpers.now() >= deadline
  return nil
end

return helpers
