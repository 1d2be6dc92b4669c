--- OpenResty compatibility: `require("moonport.ngx")` at the top of an
-- app installs a global `ngx` with what OpenResty's Lua libraries use, so
-- that they run unmodified (lua-resty-redis, -memcached, -websocket, ...):
--
--     require("moonport.ngx")
--     local app = require("moonport").app()
--     app:get("/hi", function()
--       ngx.say("hello from ", ngx.var.uri)
--     end)
--     return app
--
-- It also makes `require("resty.core")` and its parts load harmlessly,
-- and resty.string, resty.md5/sha1/sha256 and resty.lrucache are in
-- moonport's lua/ folder. The README's "OpenResty compatibility" section
-- lists what is there, what differs and what is missing.
--
-- Seconds become milliseconds where moonport's own API counts them
-- (ngx.sleep, ngx.timer.at). The cosocket, timer, light thread and
-- semaphore functions are looked up in moonport when they are called, so
-- this module loads whatever else is there.
-- @module moonport.ngx

if rawget(_G, "ngx") ~= nil and rawget(_G, "ngx").moonport then
  return rawget(_G, "ngx")
end

local ffi = require("ffi")
require("moonport.core.base")
local current = require("moonport.core.current")
local time = require("moonport.core.time")
local log = require("moonport.core.log").log
local crypto = require("moonport.core.crypto")
local worker = require("moonport.core.worker")
local runner = require("moonport.core.runner")
local json = require("moonport.json")
local context = require("moonport.ngx.context")
local args = require("moonport.ngx.args")
local re = require("moonport.ngx.re")
local reqmod = require("moonport.ngx.req")
local shared = require("moonport.ngx.shared")
local probes = require("moonport.ngx.probes")

local type, tostring, error, pcall, select, rawset = type, tostring, error, pcall, select, rawset
local setmetatable, getmetatable = setmetatable, getmetatable
local floor, concat, lower, gsub = math.floor, table.concat, string.lower, string.gsub
local getinfo = debug.getinfo
local current_request, current_phase = current.request, current.phase
local request_of, state = context.request, context.state
local now = time.now
local digest, hmac = crypto.digest, crypto.hmac
local EXIT = runner.EXIT
local null = json.null

-- A request's res handle is its req handle's twin: the same slot and
-- generation, the other kind (server/req/request.h: the kind is bit 0).
local RES_OFFSET = ffi.C.MP_CTX_RES - ffi.C.MP_CTX_REQ

local ngx = { moonport = true }

-- Constants -----------------------------------------------------------------

ngx.OK, ngx.ERROR, ngx.AGAIN, ngx.DONE, ngx.DECLINED = 0, -1, -2, -4, -5

ngx.STDERR, ngx.EMERG, ngx.ALERT, ngx.CRIT, ngx.ERR = 0, 1, 2, 3, 4
ngx.WARN, ngx.NOTICE, ngx.INFO, ngx.DEBUG = 5, 6, 7, 8

local statuses = {
  HTTP_CONTINUE = 100, HTTP_SWITCHING_PROTOCOLS = 101, HTTP_OK = 200,
  HTTP_CREATED = 201, HTTP_ACCEPTED = 202, HTTP_NO_CONTENT = 204,
  HTTP_PARTIAL_CONTENT = 206, HTTP_SPECIAL_RESPONSE = 300,
  HTTP_MOVED_PERMANENTLY = 301, HTTP_MOVED_TEMPORARILY = 302,
  HTTP_SEE_OTHER = 303, HTTP_NOT_MODIFIED = 304,
  HTTP_TEMPORARY_REDIRECT = 307, HTTP_PERMANENT_REDIRECT = 308,
  HTTP_BAD_REQUEST = 400, HTTP_UNAUTHORIZED = 401,
  HTTP_PAYMENT_REQUIRED = 402, HTTP_FORBIDDEN = 403, HTTP_NOT_FOUND = 404,
  HTTP_NOT_ALLOWED = 405, HTTP_NOT_ACCEPTABLE = 406,
  HTTP_REQUEST_TIMEOUT = 408, HTTP_CONFLICT = 409, HTTP_GONE = 410,
  HTTP_UPGRADE_REQUIRED = 426, HTTP_TOO_MANY_REQUESTS = 429,
  HTTP_CLOSE = 444, HTTP_ILLEGAL = 451, HTTP_INTERNAL_SERVER_ERROR = 500,
  HTTP_METHOD_NOT_IMPLEMENTED = 501, HTTP_BAD_GATEWAY = 502,
  HTTP_SERVICE_UNAVAILABLE = 503, HTTP_GATEWAY_TIMEOUT = 504,
  HTTP_VERSION_NOT_SUPPORTED = 505, HTTP_INSUFFICIENT_STORAGE = 507,
  -- Methods, as the numbers ngx.location.capture takes.
  HTTP_GET = 2, HTTP_HEAD = 4, HTTP_POST = 8, HTTP_PUT = 16,
  HTTP_DELETE = 32, HTTP_MKCOL = 64, HTTP_COPY = 128, HTTP_MOVE = 256,
  HTTP_OPTIONS = 512, HTTP_PROPFIND = 1024, HTTP_PROPPATCH = 2048,
  HTTP_LOCK = 4096, HTTP_UNLOCK = 8192, HTTP_PATCH = 16384,
  HTTP_TRACE = 32768,
}
for name, value in pairs(statuses) do ngx[name] = value end

--- null as OpenResty's libraries see it: moonport.json's, lua-cjson's.
ngx.null = null

-- The directory of the script that required this module first.
local prefix do
  local info = getinfo(3, "S")
  local src = info and info.source or ""
  prefix = src:match("^@(.*/)") or "./"
end

--- ngx.config: a lua-nginx-module of version 0.10.26 (OpenResty 1.25) in
-- the http subsystem.
ngx.config = {
  subsystem = "http",
  ngx_lua_version = 10026,
  nginx_version = 1025003,
  debug = false,
  prefix = function() return prefix end,
  nginx_configure = function() return "" end,
}

-- Phases and context -----------------------------------------------------------

--- "init" while the app loads, "content" in handlers (and their light
-- threads), "timer" in timers.
-- @usage if ngx.get_phase() == "init" then ... end
function ngx.get_phase()
  return current_phase()
end

-- ngx.ctx outside a request: a table per coroutine (each timer has its
-- own), collected with it.
local loose_ctx = setmetatable({}, { __mode = "k" })

local function ctx_get()
  local req = current_request()
  if req then
    local st = state(req)
    return st.ctx or req.ctx
  end
  local co = coroutine.running() or "main"
  local t = loose_ctx[co]
  if t == nil then
    t = {}
    loose_ctx[co] = t
  end
  return t
end

local function ctx_set(t)
  if type(t) ~= "table" then error("ngx.ctx must be a table", 3) end
  local req = current_request()
  if req then
    state(req).ctx = t
  else
    loose_ctx[coroutine.running() or "main"] = t
  end
end

-- Time -----------------------------------------------------------------------

--- Seconds since the epoch, to the millisecond.
-- @usage local t = ngx.now()
function ngx.now()
  return floor(now() * 1000) / 1000
end

--- Whole seconds since the epoch.
-- @usage local t = ngx.time()
function ngx.time()
  return floor(now())
end

--- The clock is read at every call: nothing to update.
-- @usage ngx.update_time()
function ngx.update_time() end

--- "yyyy-mm-dd", local time.
-- @usage local d = ngx.today()
function ngx.today() return os.date("%Y-%m-%d", ngx.time()) end
--- "yyyy-mm-dd hh:mm:ss", local time.
-- @usage local t = ngx.localtime()
function ngx.localtime() return os.date("%Y-%m-%d %H:%M:%S", ngx.time()) end
--- "yyyy-mm-dd hh:mm:ss", UTC.
-- @usage local t = ngx.utctime()
function ngx.utctime() return os.date("!%Y-%m-%d %H:%M:%S", ngx.time()) end
--- An HTTP date ("Thu, 18 Nov 2010 11:27:35 GMT").
-- @usage res:header("Expires", ngx.http_time(ngx.time() + 60))
function ngx.http_time(sec) return os.date("!%a, %d %b %Y %H:%M:%S GMT", floor(sec)) end
--- A cookie date ("Thu, 18-Nov-10 11:27:35 GMT").
-- @usage ngx.cookie_time(ngx.time() + 3600)
function ngx.cookie_time(sec) return os.date("!%a, %d-%b-%y %H:%M:%S GMT", floor(sec)) end

-- Logging ----------------------------------------------------------------------

local log_levels = { [0] = "error", "error", "error", "error", "error", "warn", "info", "info" }

-- The text of one argument of ngx.log, ngx.say and ngx.print, into parts.
local function add_text(parts, v, what, i)
  local t = type(v)
  if t == "string" then
    parts[#parts + 1] = v
  elseif t == "number" or t == "boolean" or v == nil then
    parts[#parts + 1] = tostring(v)
  elseif v == null then
    parts[#parts + 1] = "null"
  elseif t == "table" and what ~= "log" then
    for k = 1, #v do add_text(parts, v[k], what, i) end
  elseif what == "log" then
    parts[#parts + 1] = tostring(v)
  else
    error("bad argument #" .. i .. " to '" .. what .. "' (string, number, boolean, "
          .. "nil, ngx.null or array table expected, got " .. t .. ")", 4)
  end
end

--- Writes its arguments, joined, to the error log at level (ngx.ERR,
-- ngx.WARN, ngx.INFO, ...), after "[lua] file:line: " as OpenResty does.
-- ngx.STDERR to ngx.ERR log as errors, ngx.NOTICE and ngx.INFO as info;
-- ngx.DEBUG lines are dropped (OpenResty drops them unless nginx runs
-- with debug logging).
-- @usage ngx.log(ngx.ERR, "failed to connect: ", err)
function ngx.log(level, ...)
  if type(level) ~= "number" then error("bad argument #1 to 'log' (number expected)", 2) end
  local name = log_levels[level]
  if name == nil then
    if level == ngx.DEBUG then return end
    error("bad log level", 2)
  end
  local parts = {}
  local info = getinfo(2, "Sl")
  if info then parts[1] = "[lua] " .. info.short_src .. ":" .. (info.currentline or 0) .. ": " end
  for i = 1, select("#", ...) do add_text(parts, (select(i, ...)), "log", i + 1) end
  log(name, concat(parts))
end

-- The response ----------------------------------------------------------------

local function output(what, newline, ...)
  local req = request_of(2)
  local parts = {}
  for i = 1, select("#", ...) do add_text(parts, (select(i, ...)), what, i) end
  if newline then parts[#parts + 1] = "\n" end
  local text = concat(parts)
  state(req).sent = true
  if text == "" then return 1 end
  local ok, err = (req + RES_OFFSET):write(text)
  if not ok then return nil, err end
  return 1
end

--- Writes its arguments to the response body (strings, numbers,
-- booleans, nil, ngx.null, arrays of these); the response streams
-- (chunked) from the first write. Returns 1, or nil, "closed" once the
-- client has gone.
-- @usage ngx.print("a", 1, {"b", "c"})
function ngx.print(...)
  return output("print", false, ...)
end

--- As ngx.print, with a newline after.
-- @usage ngx.say("hello, ", name)
function ngx.say(...)
  return output("say", true, ...)
end

--- Writes go out as they are made: returns 1.
-- @usage ngx.flush(true)
function ngx.flush()
  request_of(1)
  return 1
end

--- Ends the response; the handler goes on. Returns 1.
-- @usage ngx.eof()
function ngx.eof()
  local req = request_of(1)
  state(req).sent = true
  ;(req + RES_OFFSET):finish()
  return 1
end

--- Headers go out with the first write: marks them sent; returns 1.
-- @usage ngx.send_headers()
function ngx.send_headers()
  state(request_of(1)).sent = true
  return 1
end

--- Ends the handler at once. status >= 200 answers that status with an
-- empty body when nothing was sent yet (444 closes the connection without
-- an answer); 0 (ngx.OK) ends the response as it is; ngx.ERROR and other
-- codes below 200 answer 500 when nothing was sent. Runs in handlers
-- only; a pcall around it catches it.
-- @usage return ngx.exit(ngx.HTTP_NOT_FOUND)
function ngx.exit(status)
  if type(status) ~= "number" then error("bad argument #1 to 'exit' (number expected)", 2) end
  local req = request_of(1)
  local st = state(req)
  local res = req + RES_OFFSET
  if not st.sent and status ~= 0 then
    st.sent = true
    if status == 444 then
      res:fault("EMPTY_RESPONSE")
    else
      if status < 200 or status > 599 then status = 500 end
      res:status(status)
      res:send("")
    end
  else
    st.sent = true
    res:finish()
  end
  error(EXIT, 0)
end

--- Answers a redirect to uri (status 302 by default, or 301, 303, 307,
-- 308) and ends the handler, as ngx.exit.
-- @usage return ngx.redirect("/login")
function ngx.redirect(uri, status)
  status = status or 302
  if status ~= 301 and status ~= 302 and status ~= 303 and status ~= 307 and status ~= 308 then
    error("only ngx.HTTP_MOVED_TEMPORARILY, ngx.HTTP_MOVED_PERMANENTLY, "
          .. "ngx.HTTP_PERMANENT_REDIRECT, ngx.HTTP_SEE_OTHER, and "
          .. "ngx.HTTP_TEMPORARY_REDIRECT are allowed", 2)
  end
  local req = request_of(1)
  local st = state(req)
  if not st.sent then
    st.sent = true
    local res = req + RES_OFFSET
    res:status(status)
    res:header("Location", tostring(uri))
    res:send("")
  end
  error(EXIT, 0)
end

local function status_get()
  local req = request_of(2)
  local st = state(req)
  return st.status or (st.sent and 200 or 0)
end

local function status_set(code)
  local req = request_of(2)
  local st = state(req)
  if st.sent then
    log("error", "attempt to set ngx.status after sending out response headers")
    return
  end
  if type(code) ~= "number" then error("ngx.status must be a number", 3) end
  local ok, err = pcall((req + RES_OFFSET).status, req + RES_OFFSET, code)
  if not ok then error("ngx.status: " .. tostring(err):gsub("^.-res:status: ", ""), 3) end
  st.status = code
end

-- A response header's name as the response writes it: "_" for "-".
local function header_name(name)
  return (gsub(name, "_", "-"))
end

--- ngx.header: response headers, set before the first write
-- (ngx.header["X-Id"] = id; ngx.header.content_type = "text/html"; a table
-- sets the field once per value). Each assignment adds the field
-- (Content-Type replaces); nil adds nothing, and a field once set cannot
-- be taken back. Reading gives what was set.
ngx.header = setmetatable({}, {
  __index = function(_, name)
    local req = request_of(1)
    local headers = state(req).headers
    return headers and headers[lower(header_name(tostring(name)))]
  end,
  __newindex = function(_, name, value)
    local req = request_of(1)
    local st = state(req)
    name = header_name(tostring(name))
    if st.sent then
      log("error", "attempt to set ngx.header." .. name .. " after sending out response headers")
      return
    end
    if value == nil then return end
    local res = req + RES_OFFSET
    if type(value) == "table" then
      for i = 1, #value do res:header(name, tostring(value[i])) end
    else
      res:header(name, tostring(value))
    end
    st.headers = st.headers or {}
    st.headers[lower(name)] = value
  end,
})

--- Calls fn when the client leaves before the response is complete
-- (req:on_abort). Returns 1.
-- @usage ngx.on_abort(function() ngx.log(ngx.WARN, "client left") end)
function ngx.on_abort(fn)
  request_of(1):on_abort(fn)
  return 1
end

ngx.var = reqmod.var
ngx.req = reqmod.req
ngx.is_subrequest = false

--- Not in moonport: there are no nginx locations to capture.
-- @usage -- raises
ngx.location = {
  capture = function() error("ngx.location.capture: moonport has no nginx locations", 2) end,
  capture_multi = function() error("ngx.location.capture_multi: moonport has no nginx locations", 2) end,
}

-- Strings, hashes, encodings -------------------------------------------------

local function string_arg(s, what)
  local t = type(s)
  if t == "string" then return s end
  if t == "number" then return tostring(s) end
  if s == nil then return "" end
  error("bad argument #1 to '" .. what .. "' (string expected, got " .. t .. ")", 3)
end

--- Base64 of s; no_padding leaves out the trailing '='s.
-- @usage ngx.encode_base64("hello") --> "aGVsbG8="
function ngx.encode_base64(s, no_padding)
  return crypto.base64_encode(string_arg(s, "encode_base64"), no_padding)
end

--- The bytes base64 text s stands for, or nil when it is not base64.
-- @usage ngx.decode_base64("aGVsbG8=") --> "hello"
function ngx.decode_base64(s)
  if type(s) ~= "string" then error("bad argument #1 to 'decode_base64' (string expected)", 2) end
  return crypto.base64_decode(s)
end

--- The MD5 digest of s in hex.
-- @usage ngx.md5("") --> "d41d8cd98f00b204e9800998ecf8427e"
function ngx.md5(s) return crypto.hex(digest("md5", string_arg(s, "md5"))) end
--- The MD5 digest of s, 16 bytes.
-- @usage local bin = ngx.md5_bin(s)
function ngx.md5_bin(s) return digest("md5", string_arg(s, "md5_bin")) end
--- The SHA-1 digest of s, 20 bytes.
-- @usage local bin = ngx.sha1_bin(s)
function ngx.sha1_bin(s) return digest("sha1", string_arg(s, "sha1_bin")) end
--- HMAC-SHA1 of s under key, 20 bytes.
-- @usage local mac = ngx.hmac_sha1(secret, s)
function ngx.hmac_sha1(key, s)
  return hmac("sha1", string_arg(key, "hmac_sha1"), string_arg(s, "hmac_sha1"))
end
--- The CRC-32 of s, a number (the same for both, as in OpenResty, whose
-- two differ in speed only).
-- @usage local n = ngx.crc32_short("hello") --> 907060870
function ngx.crc32_short(s) return crypto.crc32(string_arg(s, "crc32_short")) end
ngx.crc32_long = ngx.crc32_short

ngx.escape_uri = args.escape_uri
ngx.unescape_uri = args.unescape_uri
ngx.encode_args = args.encode_args
ngx.decode_args = args.decode_args
ngx.quote_sql_str = args.quote_sql_str

ngx.re = {
  match = re.match, find = re.find, gmatch = re.gmatch, sub = re.sub, gsub = re.gsub,
}

-- Workers and shared dictionaries ----------------------------------------

ngx.worker = {
  --- This worker's number, from 0 (nil in --check).
  id = worker.id,
  --- How many workers the server runs.
  count = worker.count,
  --- This worker's pid.
  pid = worker.pid,
  --- false: a stopping worker tells its timers through their premature
  -- argument.
  exiting = function() return false end,
}

ngx.shared = shared.dicts

-- What moonport's other modules give: looked up when called ---------------

local function moonport_part(name, what)
  local part = require("moonport")[name]
  if part == nil then error(what .. ": moonport." .. name .. " is not available", 3) end
  return part
end

ngx.socket = {
  --- A TCP cosocket (moonport.socket.tcp).
  tcp = function(...) return moonport_part("socket", "ngx.socket.tcp").tcp(...) end,
  --- A UDP cosocket (moonport.socket.udp).
  udp = function(...) return moonport_part("socket", "ngx.socket.udp").udp(...) end,
}
ngx.socket.stream = ngx.socket.tcp
--- A TCP cosocket connected to host:port (or "unix:/path").
-- @usage local sock, err = ngx.socket.connect("127.0.0.1", 6379)
function ngx.socket.connect(...)
  local sock, err = ngx.socket.tcp()
  if not sock then return nil, err end
  local ok
  ok, err = sock:connect(...)
  if not ok then return nil, err end
  return sock
end

--- Suspends the running code for sec seconds (moonport.sleep, which
-- counts milliseconds).
-- @usage ngx.sleep(0.5)
function ngx.sleep(sec)
  if type(sec) ~= "number" or sec < 0 then error("bad argument #1 to 'sleep' (invalid sleep duration)", 2) end
  return require("moonport").sleep(sec * 1000)
end

ngx.timer = {
  --- Runs fn(premature, ...) after delay seconds (moonport.timer.at,
  -- which counts milliseconds).
  at = function(delay, fn, ...)
    if type(delay) ~= "number" or delay < 0 then error("bad argument #1 to 'at' (bad delay)", 2) end
    return moonport_part("timer", "ngx.timer.at").at(delay * 1000, fn, ...)
  end,
  --- Runs fn(premature, ...) every interval seconds.
  every = function(interval, fn, ...)
    if type(interval) ~= "number" or interval <= 0 then error("bad argument #1 to 'every' (bad interval)", 2) end
    return moonport_part("timer", "ngx.timer.every").every(interval * 1000, fn, ...)
  end,
  running_count = function() return moonport_part("timer", "ngx.timer.running_count").count() end,
  pending_count = function() return moonport_part("timer", "ngx.timer.pending_count").count() end,
}

ngx.thread = {
  spawn = function(...) return moonport_part("thread", "ngx.thread.spawn").spawn(...) end,
  wait = function(...) return moonport_part("thread", "ngx.thread.wait").wait(...) end,
  kill = function(...) return moonport_part("thread", "ngx.thread.kill").kill(...) end,
}

-- The global -----------------------------------------------------------------

-- Fields computed when read or set: ngx.ctx, ngx.status, ngx.headers_sent.
setmetatable(ngx, {
  __index = function(_, key)
    if key == "ctx" then return ctx_get() end
    if key == "status" then return status_get() end
    if key == "headers_sent" then return state(request_of(1)).sent or false end
    return nil
  end,
  __newindex = function(t, key, value)
    if key == "ctx" then return ctx_set(value) end
    if key == "status" then return status_set(value) end
    rawset(t, key, value)
  end,
})

for name, t in pairs(probes.modules) do
  if package.loaded[name] == nil then package.loaded[name] = t end
end

rawset(_G, "ngx", ngx)
return ngx
