--- `res`: the response a handler builds (server/lua/ffi/res.c). Methods
-- are called with ':'; those that set something return res, so calls
-- chain. core/handle.lua hands them to res handles.
-- @module moonport.core.response

local ffi = require("ffi")
local base = require("moonport.core.base")
local runner = require("moonport.core.runner")
local json = require("moonport.json")

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

-- ---- Files (core/static.lua) ----

--- Sends a file as the response, from the core (sendfile, off the loop),
-- with its type, validators, conditionals and ranges; see
-- moonport.core.static.send_file. Returns res, or nil and why.
-- @usage return res:send_file("public/report.pdf")
Res.send_file = require("moonport.core.static").send_file

return { methods = Res }
