--- The core's side of the door between handlers and C.
--
-- Every `ffi.cdef` of moonport lives here, along with the `req` and `res`
-- objects handlers receive and the runner that executes handlers inside
-- pooled coroutines. Handler scripts never see a pointer: `req` and `res`
-- are request contexts, numbers holding a request's slot and generation
-- (server/req/request.h), and every C call checks them, so an object kept past
-- its request raises "request already finished". Being numbers, they cost
-- no allocation and pass through JIT-compiled FFI calls as plain integers;
-- their methods come from the number metatable, which gives other numbers
-- nothing.
--
-- C functions return status codes and never raise; this module turns the
-- codes into Lua errors for misuse (`error(msg, 2)`), and into `nil, err`
-- for expected failures.
-- @module moonport.core

local ffi = require("ffi")
local json = require("moonport.json")
-- json._encode_buffer is json.encode for res:json: the text stays in
-- moonport.json's buffer, which res:json copies into the response, so no
-- Lua string is made for it.
local json_decode, json_encode_buffer = json.decode, json._encode_buffer

local C = ffi.C
local type, tostring, error = type, tostring, error
local ffi_string = ffi.string
local co_create, co_resume = coroutine.create, coroutine.resume
local yield = coroutine.yield
local concat = table.concat
local xpcall, traceback = xpcall, debug.traceback

ffi.cdef[[
int mp_req_method(uint64_t ctx, const char **out);
int mp_req_target(uint64_t ctx, int which, const char **out);
int mp_req_header(uint64_t ctx, const char *name, size_t nlen,
                  const char **out);
int mp_req_header_count(uint64_t ctx);
int mp_req_header_at(uint64_t ctx, int i, const char **name,
                     int32_t *nlen, const char **value);
int mp_req_query(uint64_t ctx, const char *name, size_t nlen,
                 const char **out);
int mp_req_param_count(uint64_t ctx);
int mp_req_param_at(uint64_t ctx, int i, const char **name,
                    const char **value);
int mp_req_read(uint64_t ctx, const char **out);
int mp_req_abort_told(uint64_t ctx);
int mp_req_remote_addr(uint64_t ctx, const char **out);
int mp_req_trailers(uint64_t ctx, const char **out);
int mp_res_status(uint64_t ctx, int status);
int mp_res_reason(uint64_t ctx, const char *text, size_t len);
int mp_res_header(uint64_t ctx, const char *name, size_t nlen,
                  const char *value, size_t vlen);
int mp_res_send(uint64_t ctx, const char *body, size_t len,
                int json);
int mp_res_write(uint64_t ctx, const char *data, size_t len);
int mp_res_finish(uint64_t ctx);
int mp_res_fault(uint64_t ctx, int kind);
int mp_sleep(double ms);
void mp_lua_file_loaded(const char *path, size_t len);
void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen);
int mp_regex_match(void *re, const char *subject, size_t len);
int mp_regex_prefix(void *re, const char *subject, size_t len);
void mp_regex_free(void *re);
int mp_dir_list(const char *path, const char **out, size_t *len);
int mp_file_confine(const char *root, const char *name, size_t nlen,
                    char *out, size_t cap, double *size);
typedef struct mp_mock_config {
  const char *dir;
  const char *listen_host;
  const char *admin_hosts;
  int cors;
  int admin_cors;
  int journal_size;
} mp_mock_config;
int mp_mock_settings(mp_mock_config *out);
double mp_clock_wall(void);
void mp_lua_log(int level, const char *msg, size_t len);
char *strerror(int errnum);
int mp_store_get(int store, const char *key, size_t klen, double *num,
                 const char **str, size_t *len);
int mp_store_set(int store, const char *key, size_t klen, int type,
                 double num, const char *str, size_t len, double ttl,
                 int add);
int mp_store_incr(int store, const char *key, size_t klen, double by,
                  double init, double ttl, double *result);
int mp_store_delete(int store, const char *key, size_t klen);
int mp_store_ttl(int store, const char *key, size_t klen, double *ttl);
int mp_store_keys(int store, unsigned max, const char **out, size_t *len);
int mp_store_flush(int store);
]]

-- Every C function, looked up once now: the lookups walk the symbol tables
-- of every loaded library, and that is startup's work, not a request's.
local mp_req_header = C.mp_req_header
local mp_req_read = C.mp_req_read
local mp_req_abort_told = C.mp_req_abort_told
local mp_req_header_at = C.mp_req_header_at
local mp_req_header_count = C.mp_req_header_count
local mp_req_method = C.mp_req_method
local mp_req_param_at = C.mp_req_param_at
local mp_req_param_count = C.mp_req_param_count
local mp_req_query = C.mp_req_query
local mp_req_remote_addr = C.mp_req_remote_addr
local mp_req_target = C.mp_req_target
local mp_req_trailers = C.mp_req_trailers
local mp_res_finish = C.mp_res_finish
local mp_res_fault = C.mp_res_fault
local mp_res_reason = C.mp_res_reason
local mp_regex_compile = C.mp_regex_compile
local mp_regex_match = C.mp_regex_match
local mp_regex_free = C.mp_regex_free
local mp_res_header = C.mp_res_header
local mp_res_send = C.mp_res_send
local mp_res_status = C.mp_res_status
local mp_res_write = C.mp_res_write
local mp_sleep = C.mp_sleep
local mp_lua_log = C.mp_lua_log
local mp_lua_file_loaded = C.mp_lua_file_loaded
local mp_store_get = C.mp_store_get
local mp_store_set = C.mp_store_set
local mp_store_incr = C.mp_store_incr
local mp_store_delete = C.mp_store_delete
local mp_store_ttl = C.mp_store_ttl
local mp_store_keys = C.mp_store_keys
local mp_store_flush = C.mp_store_flush

-- Return codes (server/base/errors.h).
local MP_AGAIN = -30001
local MP_DECLINED = -30002
local MP_BAD_CONTEXT = -30003
local MP_NOMEM = -30004
local MP_INVALID = -30005
local MP_STATE = -30006
local MP_NOT_FOUND = -30007
local MP_CLOSED = -30008

local core = {}

-- Out-parameters, made once and reused by every call.
local out = ffi.new("const char *[1]")
local out2 = ffi.new("const char *[1]")
local outlen = ffi.new("int32_t[1]")

--- Raises the error for a failed C call, blaming the handler's caller line.
local function fail(rc, what)
  if rc == MP_BAD_CONTEXT then
    error("request already finished", 3)
  elseif rc == MP_STATE then
    error(what .. ": response already sent", 3)
  elseif rc == MP_NOMEM then
    error(what .. ": out of memory", 3)
  end
  error(what .. ": failed (" .. tostring(rc) .. ")", 3)
end

-- The lowest context value (server/req/request.c): req and res are at least
-- this, so a method called with '.' finds its first argument is not one.
local CTX_TAG = 2^38

--- Raises for a req or res method called with '.' instead of ':',
-- blaming the handler's line.
local function check_self(self, name)
  if type(self) ~= "number" or self < CTX_TAG then
    error(name .. ": called with '.' instead of ':'", 3)
  end
end

-- Waiting ------------------------------------------------------------------

--- What a handler yields to wait on the core: server/lua/vm.c resumes the
-- request's coroutine when the wait is over, and knows this value by its
-- address.
local WAIT = newproxy()
core.WAIT = WAIT

local on_error

-- Values kept in Lua for a request while its handler runs: the body read
-- whole (so that req:body() answers the same every time it is asked) and
-- the on_abort functions. core.run drops a request's entries when its
-- handler returns; a handler stopped mid-way never gets there, so once
-- more than 64 are kept, those of requests that are over are swept.
local bodies, aborts = {}, {}
local kept = 0

local function sweep_kept()
  for _, t in ipairs({ bodies, aborts }) do
    for ctx in pairs(t) do
      if mp_req_method(ctx, out) < 0 then
        t[ctx] = nil
        kept = kept - 1
      end
    end
  end
end

local function keep(t, ctx, value)
  if t[ctx] == nil then
    if kept >= 64 then sweep_kept() end
    kept = kept + 1
  end
  t[ctx] = value
end

local function drop(t, ctx)
  if t[ctx] ~= nil then
    t[ctx] = nil
    kept = kept - 1
  end
end

-- Runs the on_abort functions of the request ctx, once, each protected.
local function run_aborts(ctx)
  local fns = aborts[ctx]
  if fns == nil then return end
  drop(aborts, ctx)
  for i = 1, #fns do
    local ok, err = xpcall(fns[i], on_error)
    if not ok then core.log("error", "on_abort function failed: " .. tostring(err)) end
  end
end

--- Suspends the running request until the core resumes it, whatever
-- depth of user coroutines this runs in. Returns true, or false when the
-- client has just gone (after the request's on_abort functions ran).
local function suspend()
  local gone, ctx = yield(WAIT)
  if gone then
    run_aborts(ctx)
    return false
  end
  return true
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

-- The request ------------------------------------------------------------

local req_methods = {}
local req_fields = {}

local function target(self, which)
  local n = mp_req_target(self, which, out)
  if n < 0 then fail(n, "req") end
  return ffi_string(out[0], n)
end

function req_fields.method(self)
  local n = mp_req_method(self, out)
  if n < 0 then fail(n, "req.method") end
  return ffi_string(out[0], n)
end

function req_fields.path(self) return target(self, 0) end
function req_fields.query_string(self) return target(self, 1) end
function req_fields.target(self) return target(self, 2) end

function req_fields.remote_addr(self)
  local n = mp_req_remote_addr(self, out)
  if n == MP_BAD_CONTEXT then fail(n, "req.remote_addr") end
  if n < 0 then return nil end
  return ffi_string(out[0], n)
end

-- A new table on each use: keep it in a local.
function req_fields.params(self)
  local count = mp_req_param_count(self)
  if count < 0 then fail(count, "req.params") end
  local params = {}
  for i = 0, count - 1 do
    local n = mp_req_param_at(self, i, out2, out)
    if n < 0 then fail(n, "req.params") end
    params[ffi_string(out2[0])] = ffi_string(out[0], n)
  end
  return params
end

--- The value of a request header, or nil.
-- Names are case-insensitive; a repeated field's values are joined by ", ".
-- @usage local ua = req:header("User-Agent")
function req_methods.header(self, name)
  check_self(self, "req:header")
  if type(name) ~= "string" then error("req:header: name must be a string", 2) end
  local n = mp_req_header(self, name, #name, out)
  if n == MP_NOT_FOUND then return nil end
  if n < 0 then fail(n, "req:header") end
  return ffi_string(out[0], n)
end

--- All request headers as a table of lower-case names to values.
-- @usage for name, value in pairs(req:headers()) do ... end
function req_methods.headers(self)
  check_self(self, "req:headers")
  local count = mp_req_header_count(self)
  if count < 0 then fail(count, "req:headers") end
  local headers = {}
  for i = 0, count - 1 do
    local n = mp_req_header_at(self, i, out2, outlen, out)
    if n < 0 then fail(n, "req:headers") end
    local name = ffi_string(out2[0], outlen[0]):lower()
    local value = ffi_string(out[0], n)
    local seen = headers[name]
    headers[name] = seen and (seen .. ", " .. value) or value
  end
  return headers
end

--- A query parameter, percent-decoded with '+' as a space, or nil.
-- @usage local q = req:query("q")
function req_methods.query(self, name)
  check_self(self, "req:query")
  if type(name) ~= "string" then error("req:query: name must be a string", 2) end
  local n = mp_req_query(self, name, #name, out)
  if n == MP_NOT_FOUND then return nil end
  if n < 0 then fail(n, "req:query") end
  return ffi_string(out[0], n)
end

local function read(self)
  while true do
    local n = mp_req_read(self, out)
    if n > 0 then return ffi_string(out[0], n) end
    if n == 0 then return nil end
    if n == MP_AGAIN then
      if not suspend() then return nil, "closed" end
    elseif n == MP_CLOSED then
      return nil, "closed"
    else
      fail(n, "req:read")
    end
  end
end

--- The next piece of the request body as it arrives, or nil at its end;
-- nil, "closed" when the client left before sending the rest. Waits
-- (other requests go on) while none has come; the first wait sends 100
-- Continue to a client that asked for it.
-- @usage local piece, err = req:read()
function req_methods.read(self)
  check_self(self, "req:read")
  return read(self)
end

--- Iterates over the pieces of the request body as they arrive (the loop
-- also ends when the client leaves; req:read says which).
-- @usage for piece in req:chunks() do sink(piece) end
function req_methods.chunks(self)
  check_self(self, "req:chunks")
  return function() return (read(self)) end
end

local function body_closed()
  error("req:body: the client closed the connection before sending the "
        .. "whole body", 3)
end

--- The request body as a string ("" when there is none): the whole body,
-- or what is left of it after req:read; asked again, the same string.
-- Raises when the client leaves before sending all of it.
-- @usage local raw = req:body()
function req_methods.body(self)
  check_self(self, "req:body")
  local cached = bodies[self]
  if cached ~= nil then return cached end
  local body
  local first, err = read(self)
  if err then body_closed() end
  if first == nil then
    body = ""
  else
    local second
    second, err = read(self)
    if err then body_closed() end
    if second == nil then
      body = first
    else
      local parts = { first, second }
      while true do
        local piece
        piece, err = read(self)
        if err then body_closed() end
        if piece == nil then break end
        parts[#parts + 1] = piece
      end
      body = concat(parts)
    end
  end
  keep(bodies, self, body)
  return body
end

--- Calls fn once, in the handler's context, when the client goes away
-- before the response is complete: the wait in progress then returns
-- nil, "closed" after fn has run. Called after the client has gone, fn
-- runs at once. Several functions run in the order given. Returns true.
-- @usage req:on_abort(function() moonport.shared:incr("online", -1) end)
function req_methods.on_abort(self, fn)
  check_self(self, "req:on_abort")
  if type(fn) ~= "function" then error("req:on_abort: fn must be a function", 2) end
  local told = mp_req_abort_told(self)
  if told < 0 then fail(told, "req:on_abort") end
  if told == 1 then
    local ok, err = xpcall(fn, on_error)
    if not ok then core.log("error", "on_abort function failed: " .. tostring(err)) end
    return true
  end
  local fns = aborts[self]
  if fns == nil then
    fns = {}
    keep(aborts, self, fns)
  end
  fns[#fns + 1] = fn
  return true
end

--- The trailer fields of a chunked body, as a table of lower-case names
-- to values ({} when none); complete once the body has been read to its
-- end. Fields that must not be trailers (Content-Length, Host, ...) are
-- never there.
-- @usage for piece in req:chunks() do end; local sum = req:trailers()["x-checksum"]
function req_methods.trailers(self)
  check_self(self, "req:trailers")
  local n = mp_req_trailers(self, out)
  if n < 0 then fail(n, "req:trailers") end
  local fields = {}
  for name, value in ffi_string(out[0], n):gmatch("([^:\n]*): ([^\n]*)\n") do
    name = name:lower()
    fields[name] = fields[name] and (fields[name] .. ", " .. value) or value
  end
  return fields
end

--- The body decoded as JSON (moonport.json: arrays carry the array
-- marker, null is json.null); nil and "invalid JSON: <what> at byte N"
-- when it is not JSON.
-- @usage local doc, err = req:json()
function req_methods.json(self)
  check_self(self, "req:json")
  local value, err = json_decode(self:body())
  if value == nil then return nil, "invalid JSON: " .. err end
  return value
end

-- The response -----------------------------------------------------------

local Res = {}

--- Sets the status code (200..599) and, optionally, a reason phrase of its
-- own instead of the standard one; returns res.
-- @usage res:status(201):json({id = id})
function Res:status(code, reason)
  check_self(self, "res:status")
  if type(code) ~= "number" or code % 1 ~= 0 then
    error("res:status: code must be an integer", 2)
  end
  local rc = mp_res_status(self, code)
  if rc == MP_INVALID then error("res:status: code must be 200..599", 2) end
  if rc ~= 0 then fail(rc, "res:status") end
  if reason ~= nil then
    reason = tostring(reason)
    rc = mp_res_reason(self, reason, #reason)
    if rc == MP_INVALID then
      error("res:status: a reason phrase is 1 to 63 visible characters", 2)
    end
    if rc ~= 0 then fail(rc, "res:status") end
  end
  return self
end

--- Adds a response header (repeated names stay repeated, but a second
-- Content-Type replaces the first); returns res.
-- @usage res:header("Set-Cookie", "a=1"):header("Set-Cookie", "b=2")
function Res:header(name, value)
  check_self(self, "res:header")
  if type(name) ~= "string" then error("res:header: name must be a string", 2) end
  if type(value) == "number" then value = tostring(value) end
  if type(value) ~= "string" then error("res:header: value must be a string", 2) end
  local rc = mp_res_header(self, name, #name, value, #value)
  if rc == MP_INVALID then
    error("res:header: invalid header '" .. name ..
      "': a name is a token, a value has no control byte but HTAB", 2)
  elseif rc == MP_DECLINED then
    error("res:header: '" .. name .. "' is set by the server", 2)
  end
  if rc ~= 0 then fail(rc, "res:header") end
  return self
end

--- Sends the whole response with body (text/plain unless a Content-Type was
-- set); returns res.
-- @usage res:send("Hello, World!")
function Res:send(body)
  check_self(self, "res:send")
  if body == nil then body = "" end
  if type(body) == "number" then body = tostring(body) end
  if type(body) ~= "string" then error("res:send: body must be a string", 2) end
  local rc = mp_res_send(self, body, #body, 0)
  if rc ~= 0 then fail(rc, "res:send") end
  return self
end

--- Sends value encoded as JSON by moonport.json (application/json);
-- returns res. Raises for what JSON cannot hold (a function, a cycle, NaN).
-- @usage res:json({ok = true, items = moonport.json.empty_array})
function Res:json(value)
  check_self(self, "res:json")
  local ok, body, len = pcall(json_encode_buffer, value)
  if not ok then error("res:json: " .. tostring(body):gsub("^.-json%.encode: ", ""), 2) end
  local rc = mp_res_send(self, body, len, 1)
  if rc ~= 0 then fail(rc, "res:json") end
  return self
end

--- Streams a piece of the body. Without a declared Content-Length the
-- response is chunked; with one, raw. While more than --write-high-water
-- bytes wait for the client, the handler waits here. Returns res, or
-- nil, "closed" when the client has gone.
-- @usage if not res:write(event) then return end
function Res:write(chunk)
  check_self(self, "res:write")
  if type(chunk) == "number" then chunk = tostring(chunk) end
  if type(chunk) ~= "string" then error("res:write: chunk must be a string", 2) end
  local rc = mp_res_write(self, chunk, #chunk)
  if rc == 0 then return self end
  if rc == MP_AGAIN then
    -- Queued; the client is behind: wait for it to catch up.
    if suspend() then return self end
    return nil, "closed"
  end
  if rc == MP_CLOSED then
    -- Nobody reads any more. The loop gets a turn first, so that a
    -- handler writing in a loop that ignores this cannot hold the worker.
    if mp_sleep(0) == 0 then suspend() end
    return nil, "closed"
  end
  fail(rc, "res:write")
end

--- Ends the response (also done when the handler returns).
-- @usage res:finish()
function Res:finish()
  check_self(self, "res:finish")
  local rc = mp_res_finish(self)
  if rc ~= 0 then fail(rc, "res:finish") end
end

local fault_kinds = {
  CONNECTION_RESET_BY_PEER = 1,
  EMPTY_RESPONSE = 2,
  MALFORMED_RESPONSE_CHUNK = 3,
  RANDOM_DATA_THEN_CLOSE = 4,
}

--- Breaks the response on purpose and ends the connection, as WireMock's
-- faults do: "CONNECTION_RESET_BY_PEER" (a TCP reset), "EMPTY_RESPONSE"
-- (closed without a byte), "MALFORMED_RESPONSE_CHUNK" (a chunked head, then
-- garbage), "RANDOM_DATA_THEN_CLOSE" (bytes that are not HTTP). Only
-- before anything of the response was sent.
-- @usage res:fault("CONNECTION_RESET_BY_PEER")
function Res:fault(kind)
  check_self(self, "res:fault")
  local k = fault_kinds[kind]
  if k == nil then error("res:fault: unknown fault '" .. tostring(kind) .. "'", 2) end
  local rc = mp_res_fault(self, k)
  if rc ~= 0 then fail(rc, "res:fault") end
end

-- The metatable of every number: a context (bit 38 set) dispatches on its
-- kind, the lowest bit (server/req/request.c); other numbers get nothing.
debug.setmetatable(0, {
  __index = function(self, key)
    if self < CTX_TAG then return nil end
    if self % 2 == 0 then
      local method = req_methods[key]
      if method then return method end
      local field = req_fields[key]
      if field then return field(self) end
      return nil
    end
    return Res[key]
  end,
})

-- Sleeping -----------------------------------------------------------------

--- Suspends the running handler for ms milliseconds (from inside its own
-- coroutines too); other requests go on. Returns true, or nil, "closed"
-- when the sleep was cut short because the client left before the
-- response was complete. ms past 2^53 sleeps 2^53 ms.
-- @usage moonport.sleep(200)
function core.sleep(ms)
  if type(ms) ~= "number" or ms < 0 or ms ~= ms then
    error("moonport.sleep: ms must be a non-negative number", 2)
  end
  local rc = mp_sleep(ms)
  if rc == MP_BAD_CONTEXT then
    error("moonport.sleep: only a request handler can sleep", 2)
  end
  if rc ~= 0 then fail(rc, "moonport.sleep") end
  if suspend() then return true end
  return nil, "closed"
end

-- The error log ----------------------------------------------------------

local log_levels = { error = 0, warn = 1, info = 2 }

--- Writes a line to the error log, which adds the time, the level and the
-- worker. With one argument the level is info.
-- @usage moonport.log("warn", "cache miss for " .. key)
function core.log(level, msg)
  if msg == nil then level, msg = "info", level end
  local n = log_levels[level]
  if n == nil then
    error("moonport.log: level must be 'error', 'warn' or 'info'", 2)
  end
  msg = tostring(msg)
  mp_lua_log(n, msg, #msg)
end

-- moonport.shared -----------------------------------------------------------

-- A store of the shared segment. moonport.shared is one; the mock server
-- keeps its state and its journal in two more (server/proc/worker.h's
-- MP_STORE_*), out of reach of what scripts store and of each other.
local Shared = {}
Shared.__index = Shared
local store_ids, store_names = {}, {}

local function new_store(id, name)
  local st = setmetatable({}, Shared)
  store_ids[st], store_names[st] = id, name
  return st
end

local shared = new_store(0, "moonport.shared")
core.shared = shared
--- The mock server's state: admin-added mappings, scenario states and
-- counters. Never evicted: a set that does not fit returns false,
-- "no memory" (--mock-state-size).
core.mock_state = new_store(1, "core.mock_state")
--- The mock server's journal entries; when full, the oldest written are
-- dropped (--journal-memory).
core.mock_journal = new_store(2, "core.mock_journal")

local num_out = ffi.new("double[1]")
local len_out = ffi.new("size_t[1]")
local KEY_MAX = 65535
local value_types = { string = 1, number = 2, boolean = 3 }

-- Checks the receiver of a store method; returns its store's index.
-- level: where the caller of the method is.
local function store_of(self, name, level)
  local id = store_ids[self]
  if id == nil then
    error("moonport.shared:" .. name .. ": call it with ':' (moonport.shared:"
          .. name .. "(...))", level + 1)
  end
  return id
end

-- Checks the receiver and the key of a store method; returns the index.
local function check(self, key, name)
  local id = store_of(self, name, 3)
  if type(key) ~= "string" or #key == 0 or #key > KEY_MAX then
    error(store_names[self] .. ":" .. name .. ": key must be a string of 1 to "
          .. KEY_MAX .. " bytes", 3)
  end
  return id
end

local function check_ttl(self, ttl, name)
  if ttl == nil then return 0 end
  if type(ttl) ~= "number" or ttl < 0 or ttl ~= ttl then
    error(store_names[self] .. ":" .. name .. ": ttl must be a non-negative "
          .. "number of seconds", 3)
  end
  return ttl
end

--- The value stored under key (a string, number or boolean), or nil when
-- there is none or it expired.
-- @usage local n = moonport.shared:get("hits")
function Shared:get(key)
  local id = check(self, key, "get")
  local t = mp_store_get(id, key, #key, num_out, out, len_out)
  if t == 1 then return ffi_string(out[0], len_out[0]) end
  if t == 2 then return num_out[0] end
  if t == 3 then return num_out[0] ~= 0 end
  return nil
end

-- set and add: true, nil, evicted; or false and why.
local function store(self, key, value, ttl, add, name)
  local id = check(self, key, name)
  ttl = check_ttl(self, ttl, name)
  local vt = type(value)
  local t = value_types[vt]
  if t == nil then
    if value == nil and not add then
      mp_store_delete(id, key, #key)
      return true, nil, false
    end
    error(store_names[self] .. ":" .. name .. ": value must be a string, "
          .. "number or boolean (got " .. vt .. ")", 3)
  end
  local rc
  if t == 1 then
    rc = mp_store_set(id, key, #key, 1, 0, value, #value, ttl, add and 1 or 0)
  elseif t == 2 then
    rc = mp_store_set(id, key, #key, 2, value, nil, 0, ttl, add and 1 or 0)
  else
    rc = mp_store_set(id, key, #key, 3, value and 1 or 0, nil, 0, ttl,
                      add and 1 or 0)
  end
  if rc >= 0 then return true, nil, rc == 1 end
  if rc == MP_DECLINED then return false, "exists" end
  if rc == MP_NOMEM then return false, "no memory" end
  return false, "invalid"
end

--- Stores value under key, for ttl seconds (nil or 0: until evicted);
-- nil deletes. Returns true, nil, evicted: evicted is true when the store
-- was full and least recently used entries made room. Returns false,
-- "no memory" when the value is larger than the store can hold.
-- @usage moonport.shared:set("session:" .. id, user, 3600)
function Shared:set(key, value, ttl)
  return store(self, key, value, ttl, false, "set")
end

--- Like set, but only when the key is absent (or expired): false, "exists"
-- otherwise.
-- @usage local first = moonport.shared:add("lock:" .. job, true, 30)
function Shared:add(key, value, ttl)
  return store(self, key, value, ttl, true, "add")
end

--- Adds by (default 1) to the number under key and returns the new value,
-- atomically across workers. An absent key starts from init (default 0)
-- and expires after ttl seconds (nil or 0: never); an existing key keeps
-- its expiry. Returns nil, "not a number" when the value is not one.
-- @usage local n = moonport.shared:incr("hits")
function Shared:incr(key, by, init, ttl)
  local id = check(self, key, "incr")
  by, init = by or 1, init or 0
  if type(by) ~= "number" or type(init) ~= "number" then
    error(store_names[self] .. ":incr: by and init must be numbers", 2)
  end
  ttl = check_ttl(self, ttl, "incr")
  local rc = mp_store_incr(id, key, #key, by, init, ttl, num_out)
  if rc >= 0 then return num_out[0] end
  if rc == MP_NOMEM then return nil, "no memory" end
  return nil, "not a number"
end

--- Removes key. Returns true.
-- @usage moonport.shared:delete("session:" .. id)
function Shared:delete(key)
  local id = check(self, key, "delete")
  mp_store_delete(id, key, #key)
  return true
end

--- Seconds until key expires (0 when it never does), or nil, "not found".
-- @usage local left = moonport.shared:ttl("session:" .. id)
function Shared:ttl(key)
  local id = check(self, key, "ttl")
  local rc = mp_store_ttl(id, key, #key, num_out)
  if rc ~= 0 then return nil, "not found" end
  return num_out[0]
end

--- Up to max keys (default 1024; 0 for all) that have not expired, in no
-- particular order.
-- @usage for _, k in ipairs(moonport.shared:keys(0)) do ... end
function Shared:keys(max)
  local id = store_of(self, "keys", 2)
  max = max or 1024
  if type(max) ~= "number" or max < 0 or max % 1 ~= 0 then
    error(store_names[self] .. ":keys: max must be a whole number >= 0", 2)
  end
  local n = mp_store_keys(id, max, out, len_out)
  if n < 0 then fail(n, store_names[self] .. ":keys") end
  local keys, p, off = {}, out[0], 0
  for i = 1, n do
    local klen = ffi.cast("const uint32_t *", p + off)[0]
    keys[i] = ffi_string(p + off + 4, klen)
    off = off + 4 + klen
  end
  return keys
end

--- Removes every key.
-- @usage moonport.shared:flush_all()
function Shared:flush_all()
  mp_store_flush(store_of(self, "flush_all", 2))
end

-- Regular expressions ------------------------------------------------------

local Regex = {}
Regex.__index = Regex
local errbuf = ffi.new("char[256]")

--- Compiles a PCRE2 regular expression that must match a whole subject
-- (as Java's String.matches, which WireMock uses). Returns an object with
-- :match(subject) and :prefix(subject), or nil and the compiler's message.
-- @usage local re = assert(core.regex("/users/[0-9]+"))
function core.regex(pattern, caseless)
  local re = mp_regex_compile(pattern, #pattern, caseless and 1 or 0, errbuf, 256)
  if re == nil then return nil, ffi_string(errbuf) end
  return setmetatable({ re = ffi.gc(re, mp_regex_free), source = pattern,
                        caseless = caseless }, Regex)
end

local REGEX_LIMIT = "gave up at PCRE2's match limit (the pattern backtracks too much)"

--- True when the whole of subject matches, false when it does not; nil
-- and a message when the match was given up at PCRE2's limits, which is
-- neither.
-- @usage if re:match(path) then ... end
function Regex:match(subject)
  local rc = mp_regex_match(self.re, subject, #subject)
  if rc == 1 then return true end
  if rc == 0 then return false end
  if rc == 2 then return nil, REGEX_LIMIT end
  return nil, "the match failed (" .. tostring(rc) .. ")"
end

--- How many leading bytes of subject the pattern matches or could match
-- were more to follow (how near subject came); nil when that hit a limit.
-- @usage local near = re:prefix("/users/abc") -- 7 for "/users/[0-9]+"
function Regex:prefix(subject)
  local partial = self.partial
  if partial == nil then
    -- Compiled when first asked: most patterns never are.
    local src = self.source
    partial = mp_regex_compile(src, #src, self.caseless and 3 or 2, errbuf, 256)
    partial = partial ~= nil and ffi.gc(partial, mp_regex_free) or false
    self.partial = partial
  end
  if not partial then return nil end
  local n = C.mp_regex_prefix(partial, subject, #subject)
  if n < 0 then return nil end
  return n
end

--- The entries of a directory: a list of {name = ..., dir = true|false},
-- sorted by name, or nil and an error message.
-- @usage for _, e in ipairs(core.dir_list("mappings")) do ... end
function core.dir_list(path)
  local n = C.mp_dir_list(path, out, len_out)
  if n < 0 then return nil, path .. ": " .. core.strerror(-n) end
  local list, p, off, size = {}, out[0], 0, tonumber(len_out[0])
  while off < size do
    local kind = p[off]
    local name = ffi_string(p + off + 1)
    list[#list + 1] = { name = name, dir = kind == 100 } -- 'd'
    off = off + #name + 2
  end
  table.sort(list, function(a, b) return a.name < b.name end)
  return list
end

--- The system's message for an errno value.
-- @usage core.strerror(2) -- "No such file or directory"
function core.strerror(errnum)
  return ffi_string(C.strerror(errnum))
end

local path_buf = ffi.new("char[4096]")
local size_out = ffi.new("double[1]")

--- Finds the file name (a path relative to root, a directory) stands
-- for, following ".." and symbolic links, and refuses any that does not
-- end inside root (server/lua/ffi.h's mp_file_confine). Returns its resolved path and size; or nil and
-- "outside" (it leads out of root), "not found" (no such regular file) or
-- "invalid" (a NUL byte, too long).
-- @usage local path, size = core.confine(dir .. "/__files", name)
function core.confine(root, name)
  local n = C.mp_file_confine(root, name, #name, path_buf, 4096, size_out)
  if n >= 0 then return ffi_string(path_buf, n), size_out[0] end
  if n == MP_DECLINED then return nil, "outside" end
  if n == MP_NOT_FOUND then return nil, "not found" end
  return nil, "invalid"
end

--- The wall-clock time in seconds since the epoch, with microseconds.
-- @usage local ms = math.floor(core.now() * 1000)
function core.now()
  return C.mp_clock_wall()
end

local function opt_string(p)
  if p == nil then return nil end
  return ffi_string(p)
end

--- The mock settings from the command line: { dir = --mock DIR or nil,
-- listen_host = the host of --listen, admin_hosts = --admin-host or nil,
-- cors = true unless --no-cors, admin_cors = --admin-cors,
-- journal_size = --journal-size }.
-- @usage local settings = core.mock_settings()
function core.mock_settings()
  local cfg = ffi.new("mp_mock_config")
  C.mp_mock_settings(cfg)
  return { dir = opt_string(cfg.dir), listen_host = opt_string(cfg.listen_host),
           admin_hosts = opt_string(cfg.admin_hosts), cors = cfg.cors ~= 0,
           admin_cors = cfg.admin_cors ~= 0, journal_size = cfg.journal_size }
end

-- Running handlers -------------------------------------------------------

-- The error and where it happened, from the failing frame down to the
-- handler; moonport's own frames below it are left out.
function on_error(err)
  local trace = traceback(tostring(err), 2) -- 2: not this function
  return (trace:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
end

--- The body of every handler coroutine (started by server/lua/vm.c): run a
-- handler, report how it ended, wait for the next one.
function core.run(handler, req, res)
  local DONE = core.DONE
  while true do
    local ok, err = xpcall(handler, on_error, req, res)
    drop(bodies, req)
    drop(aborts, req)
    handler, req, res = yield(DONE, ok, err)
  end
end

-- Apps -------------------------------------------------------------------

local App = {}
App.__index = App
core.App = App

--- Files the app has loaded with require, dofile or loadfile, in order
-- (server/lua/vm.c hands them to the master, which watches them).
core.loaded_files = {}

--- Records a file the app read some other way (a mock mapping) so that
-- the master watches it too; a path ending in "/" stands for every file in
-- that directory.
-- @usage core.track_file(dir .. "/mappings/")
function core.track_file(path)
  local files = core.loaded_files
  files[#files + 1] = path
  mp_lua_file_loaded(path, #path)
end

--- Wraps the Lua-file searcher, dofile and loadfile so that every file the
-- app loads is recorded in core.loaded_files and, in a serving worker,
-- reported to the master (a require inside a handler loads late). Called
-- once per state, before the app script runs.
function core.track_loads()
  local files = core.loaded_files
  local function record(file)
    if type(file) ~= "string" then return end
    files[#files + 1] = file
    mp_lua_file_loaded(file, #file)
  end
  local searchpath = package.searchpath
  local loaders = package.loaders
  local lua_loader = loaders[2]
  loaders[2] = function(name)
    record(searchpath(name, package.path))
    return lua_loader(name)
  end
  local loadfile_, dofile_ = loadfile, dofile
  loadfile = function(file, ...)
    record(file)
    return loadfile_(file, ...)
  end
  dofile = function(file)
    record(file)
    return dofile_(file)
  end
end

--- Checks what an app script returned and lists its routes for the router
-- as {method, pattern, handler, line}.
function core.export(app, path)
  local mt = getmetatable(app)
  -- An App, or an app of a kind built on it (moonport.mock's).
  if mt ~= App and not (mt and getmetatable(mt) and getmetatable(mt).__index == App) then
    error(path .. ": the script must end with 'return app' (it returned "
          .. type(app) .. ")", 0)
  end
  return app.routes
end

return core
