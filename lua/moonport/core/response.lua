--- `res`: the response a handler builds (server/lua/ffi/res.c). Methods
-- are called with ':'; those that set something return res, so calls
-- chain. core/handle.lua hands them to res handles.
-- @module moonport.core.response

local ffi = require("ffi")
local base = require("moonport.core.base")
local runner = require("moonport.core.runner")
local json = require("moonport.json")
local cookie = require("moonport.cookie")

ffi.cdef[[
int mp_res_status(uint64_t ctx, int status);
int mp_res_reason(uint64_t ctx, const char *text, size_t len);
int mp_res_header(uint64_t ctx, const char *name, size_t nlen,
                  const char *value, size_t vlen);
int mp_res_send(uint64_t ctx, const char *body, size_t len,
                int json);
int mp_res_write(uint64_t ctx, const char *data, size_t len);
int mp_res_finish(uint64_t ctx);
int mp_res_fault(uint64_t ctx, int kind);
int mp_res_headers(uint64_t ctx, const char **out);
int mp_res_reset(uint64_t ctx);
]]

local C = ffi.C
local mp_res_status = C.mp_res_status
local mp_res_reason = C.mp_res_reason
local mp_res_header = C.mp_res_header
local mp_res_send = C.mp_res_send
local mp_res_write = C.mp_res_write
local mp_res_finish = C.mp_res_finish
local mp_res_fault = C.mp_res_fault

local MP_AGAIN = C.MP_AGAIN
local MP_CLOSED = C.MP_CLOSED
local MP_DECLINED = C.MP_DECLINED
local MP_INVALID = C.MP_INVALID

local type, tostring, error, pcall = type, tostring, error, pcall
-- json._encode_buffer is json.encode for res:json: the text stays in
-- moonport.json's buffer, which res:json copies into the response, so no
-- Lua string is made for it.
local json_encode_buffer = json._encode_buffer
local fail, check_self = base.fail, base.check_self
local suspend, pass_turn = runner.suspend, runner.pass_turn

-- Held responses -----------------------------------------------------------
-- A middleware may hold a request's response to check it before it goes
-- out (moonport.openapi.validate): response.hold(req, fn) keeps fn, which
-- the first whole body the handler sends (res:send, res:json, res:html,
-- res:redirect) goes to instead of the core, as fn(res, body, len, json)
-- (body a string, or the char pointer of moonport.json's buffer for
-- res:json); fn sends it (response.send_raw) or something else, and
-- returns what mp_res_send would. A streamed body's first res:write calls
-- fn(res, nil, 0, 0) (the head alone, nothing sent), and a handler that
-- returns without sending fn(res, nil, -1, 0) (core/runner.lua). Only
-- once an app has held a response does a send look: others pay one test.
local holds = base.kept.holds
local holding = false

local function send_body(self, body, len, is_json)
  if holding then
    local h = holds[self - 1]
    if h ~= nil then
      holds[self - 1] = nil
      return h(self, body, len, is_json)
    end
  end
  return mp_res_send(self, body, len, is_json)
end

local response = {}

--- Holds req's response for fn (see above); raises once the handler
-- has returned.
-- @usage response.hold(req, function(res, body, len, json) ... end)
function response.hold(req, fn)
  holding = true
  local ok, rc = base.keep(holds, req, fn)
  if not ok then fail(rc, "response.hold") end
end

--- Sends a whole body past any hold: mp_res_send's return code.
-- @usage local rc = response.send_raw(res, body, #body, 0)
function response.send_raw(res, body, len, is_json)
  return mp_res_send(res, body, len, is_json)
end

local lines_out = ffi.new("const char *[1]")

--- The header lines set so far ("Name: value\r\n" each, without
-- Content-Length) as one string, or nil once the head has gone out.
-- @usage local lines = response.header_lines(res)
function response.header_lines(res)
  local n = C.mp_res_headers(res, lines_out)
  if n < 0 then return nil end
  return ffi.string(lines_out[0], n)
end

--- Forgets the header fields and reason set so far: returns true, or
-- false once the response has begun.
-- @usage if response.reset(res) then res:status(500):json(problem) end
function response.reset(res)
  return C.mp_res_reset(res) == 0
end

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
  local rc = send_body(self, body, #body, 0)
  if rc ~= 0 then fail(rc, "res:send") end
  return self
end

-- Sets the status for res:json, res:html and res:redirect: the code, or
-- MP_INVALID for a code that is no integer in 200..599.
local function set_status(self, code)
  if type(code) ~= "number" or code % 1 ~= 0 then return MP_INVALID end
  return mp_res_status(self, code)
end

--- Sends value encoded as JSON by moonport.json (application/json), with
-- status when given (as res:status(status):json(value)); returns res.
-- Raises for what JSON cannot hold (a function, a cycle, NaN).
-- @usage res:json({ok = true, items = moonport.json.empty_array})
-- @usage res:json({error = "no such user"}, 404)
function Res:json(value, status)
  check_self(self, "res:json")
  local ok, body, len = pcall(json_encode_buffer, value)
  if not ok then error("res:json: " .. tostring(body):gsub("^.-json%.encode: ", ""), 2) end
  if status ~= nil then
    local rc = set_status(self, status)
    if rc == MP_INVALID then error("res:json: status must be an integer, 200..599", 2) end
    if rc ~= 0 then fail(rc, "res:json") end
  end
  local rc = send_body(self, body, len, 1)
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
  if holding then
    local h = holds[self - 1]
    if h ~= nil then
      holds[self - 1] = nil
      h(self, nil, 0, 0)
    end
  end
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
    pass_turn()
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

-- WireMock's fault names.
local fault_kinds = {
  CONNECTION_RESET_BY_PEER = C.MP_FAULT_RESET,
  EMPTY_RESPONSE = C.MP_FAULT_EMPTY,
  MALFORMED_RESPONSE_CHUNK = C.MP_FAULT_MALFORMED_CHUNK,
  RANDOM_DATA_THEN_CLOSE = C.MP_FAULT_RANDOM_DATA,
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

-- Server-sent events -------------------------------------------------------

local concat = table.concat

-- A field's value on one line: CR, LF and NUL would end it or more.
local function one_line(v, what)
  v = tostring(v)
  if v:find("[%z\r\n]") then error("res:sse: " .. what .. " must be one line", 3) end
  return v
end

--- Sends one server-sent event: `data` (a string, split into a "data:"
-- line per line, or any other value sent as JSON), `event`, `id`,
-- `retry` (ms) and `comment`. The first event sends the stream's head
-- (Content-Type: text/event-stream, Cache-Control: no-cache); each event
-- is written, and flushed, as res:write writes. Returns res, or nil,
-- "closed" once the client has gone.
-- @usage while res:sse{ event = "tick", data = { n = n } } do moonport.sleep(1000) end
function Res:sse(ev)
  check_self(self, "res:sse")
  if type(ev) ~= "table" then error("res:sse: takes a table {data, event, id, retry, comment}", 2) end
  if not self:started() then -- (core/middleware.lua's)
    self:header("Content-Type", "text/event-stream")
    self:header("Cache-Control", "no-cache")
  end
  local out = {}
  if ev.comment ~= nil then
    for line in (tostring(ev.comment) .. "\n"):gmatch("([^\r\n]*)\r?\n") do out[#out + 1] = ": " .. line .. "\n" end
  end
  if ev.event ~= nil then out[#out + 1] = "event: " .. one_line(ev.event, "event") .. "\n" end
  if ev.id ~= nil then out[#out + 1] = "id: " .. one_line(ev.id, "id") .. "\n" end
  if ev.retry ~= nil then
    local ms = tonumber(ev.retry)
    if ms == nil or ms < 0 or ms % 1 ~= 0 then error("res:sse: retry must be a whole number of ms", 2) end
    out[#out + 1] = ("retry: %d\n"):format(ms)
  end
  local data = ev.data
  if data ~= nil then
    if type(data) ~= "string" then
      local ok, text = pcall(json.encode, data)
      if not ok then error("res:sse: data: " .. tostring(text), 2) end
      data = text
    end
    data = data:gsub("\r\n", "\n"):gsub("\r", "\n")
    for line in (data .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = "data: " .. line .. "\n" end
  end
  if #out == 0 then error("res:sse: an event needs data, event, id, retry or a comment", 2) end
  out[#out + 1] = "\n"
  return self:write(concat(out))
end

-- Cookies, HTML and redirects ---------------------------------------------

local find, gsub, format, byte = string.find, string.gsub, string.format, string.byte
local serialize_cookie = cookie._serialize

--- Adds a Set-Cookie field for name=value (moonport.cookie.serialize:
-- the name a token, the value percent-encoded where it has bytes a cookie
-- cannot hold) with opts path, domain, max_age, expires (seconds since
-- the epoch), secure, http_only, same_site ("Strict", "Lax", "None");
-- each call adds a field of its own. Raises for a name that is no token,
-- an unknown option, or a path or domain with ';' or a control byte.
-- Returns res.
-- @usage res:cookie("sid", id, {path = "/", http_only = true, same_site = "Lax", max_age = 3600})
function Res:cookie(name, value, opts)
  check_self(self, "res:cookie")
  local text = serialize_cookie("res:cookie", name, value, opts)
  local rc = mp_res_header(self, "Set-Cookie", 10, text, #text)
  if rc ~= 0 then fail(rc, "res:cookie") end
  return self
end

local HTML = "text/html; charset=utf-8"

--- Sends text as text/html; charset=utf-8, with status when given;
-- returns res.
-- @usage res:html("<h1>Hello</h1>")
function Res:html(text, status)
  check_self(self, "res:html")
  if type(text) == "number" then text = tostring(text) end
  if type(text) ~= "string" then error("res:html: text must be a string", 2) end
  local rc
  if status ~= nil then
    rc = set_status(self, status)
    if rc == MP_INVALID then error("res:html: status must be an integer, 200..599", 2) end
    if rc ~= 0 then fail(rc, "res:html") end
  end
  rc = mp_res_header(self, "Content-Type", 12, HTML, #HTML)
  if rc ~= 0 then fail(rc, "res:html") end
  rc = send_body(self, text, #text, 0)
  if rc ~= 0 then fail(rc, "res:html") end
  return self
end

local function pct(c) return format("%%%02X", byte(c)) end

--- Answers a redirect to url: status (300..399, 302 when not given),
-- Location and a short text/plain body. Bytes a URI cannot hold (space,
-- '"', '<', '>', bytes past 0x7e, a '%' that begins no %XX, ...) are
-- percent-encoded in Location; a control byte (CR, LF, ...) raises, so
-- that a URL taken from the request cannot add header fields. Returns
-- res.
-- @usage res:redirect("/login?next=" .. moonport.url.encode(req.target))
function Res:redirect(url, status)
  check_self(self, "res:redirect")
  if type(url) ~= "string" or url == "" then
    error("res:redirect: url must be a non-empty string", 2)
  end
  if find(url, "[%z\1-\31\127]") then
    error("res:redirect: url must have no control bytes (CR, LF, ...)", 2)
  end
  if status == nil then status = 302 end
  if type(status) ~= "number" or status % 1 ~= 0 or status < 300 or status > 399 then
    error("res:redirect: status must be an integer, 300..399", 2)
  end
  local location = gsub(url, "[^A-Za-z0-9%-%._~:/%?#%[%]@!%$&'%(%)%*%+,;=%%]", pct)
  if find(location, "%", 1, true) then
    local text = location
    location = gsub(text, "()%%", function(at)
      if not find(text, "^%x%x", at + 1) then return "%25" end
    end)
  end
  local rc = mp_res_status(self, status)
  if rc ~= 0 then fail(rc, "res:redirect") end
  rc = mp_res_header(self, "Location", 8, location, #location)
  if rc ~= 0 then fail(rc, "res:redirect") end
  local body = "Redirecting to " .. location .. "\n"
  rc = send_body(self, body, #body, 0)
  if rc ~= 0 then fail(rc, "res:redirect") end
  return self
end

-- ---- Files (core/static.lua) ----

--- Sends a file as the response, from the core (sendfile, off the loop),
-- with its type, validators, conditionals and ranges; see
-- moonport.core.static.send_file. Returns res, or nil and why.
-- @usage return res:send_file("public/report.pdf")
Res.send_file = require("moonport.core.static").send_file

response.methods = Res
return response
