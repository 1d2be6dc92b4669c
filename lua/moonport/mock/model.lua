--- The stub model: one shape for stubs written in Lua (snake_case keys)
-- and in WireMock's JSON (camelCase keys), and the conversions between.
--
-- Names that are the user's (header, query, cookie and path parameter
-- names, a JSON body, transformer parameters) are never converted.
--
--     local model = require("moonport.mock.model")
--     local stub = model.from_wiremock(json.decode(text, { literals = true }))
--     local mapping = model.to_wiremock(stub)
--
-- @module moonport.mock.model

local json = require("moonport.json")
local crypto = require("moonport.core.crypto")
local bit = require("bit")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local getmetatable, setmetatable = getmetatable, setmetatable
local array_mt, literal_mt = json.array_mt, json.literal_mt
local byte, char, concat = string.byte, string.char, table.concat

local model = {}

local function snake(name)
  return (name:gsub("%u", function(c) return "_" .. c:lower() end))
end

local function camel(name)
  return (name:gsub("_(%l)", string.upper))
end
--- A snake_case key in WireMock's camelCase, for messages.
model.camel = camel

-- How the value under a key is converted: nil (a plain value or a table
-- whose own keys convert), "opaque" (kept as it is), "matcher",
-- "matcher_map" (user names to matchers), "matcher_list".
local REQUEST = {
  path_parameters = "matcher_map", query_parameters = "matcher_map",
  headers = "matcher_map", cookies = "matcher_map",
  body_patterns = "matcher_list",
}
local RESPONSE = { headers = "opaque", json_body = "opaque",
                   transformer_parameters = "opaque",
                   additional_proxy_request_headers = "opaque",
                   remove_proxy_request_headers = "opaque" }
local MATCHER = { equal_to_json = "opaque", matches_json_path = "matcher",
                  ["and"] = "matcher_list", ["or"] = "matcher_list", ["not"] = "matcher",
                  has_exactly = "matcher_list", includes = "matcher_list",
                  matches_x_path = "matcher", x_path_namespaces = "opaque",
                  matches_json_schema = "opaque" }
-- Webhooks' parameters are WireMock's as given (header names are the
-- user's), and listed as given.
local TOP = { request = REQUEST, response = RESPONSE, metadata = "opaque",
              serve_event_listeners = "opaque", post_serve_actions = "opaque" }

local convert

local function convert_map(map, key_fn, shape)
  local out = {}
  for k, v in pairs(map) do out[k] = convert(v, key_fn, shape) end
  return out
end

-- Converts value, whose shape is given, with key_fn for our own keys.
-- Mappings are decoded with literal numbers, so that an opaque value (a
-- JSON body) is written back as it was; our own fields get plain numbers.
-- A copied JSON array keeps its array marker, so an empty one stays [].
function convert(value, key_fn, shape)
  if shape == "opaque" then return value end
  if getmetatable(value) == literal_mt then return tonumber(tostring(value)) end
  if type(value) ~= "table" then return value end
  if shape == "matcher_map" then
    return convert_map(value, key_fn, "matcher")
  end
  local mt = getmetatable(value) == array_mt and array_mt or nil
  if shape == "matcher_list" then
    local out = setmetatable({}, mt)
    for i, m in ipairs(value) do out[i] = convert(m, key_fn, "matcher") end
    return out
  end
  local fields = shape == "matcher" and MATCHER or (type(shape) == "table" and shape) or {}
  local out = setmetatable({}, mt)
  for k, v in pairs(value) do
    if type(k) == "string" then
      local nk = key_fn(k)
      out[nk] = convert(v, key_fn, fields[snake(k)])
    else
      out[k] = convert(v, key_fn, nil)
    end
  end
  return out
end

--- A stub from WireMock's JSON mapping (a decoded table): snake_case keys,
-- `basicAuthCredentials` as `basic_auth`, the scenario fields kept flat.
-- @usage local stub = model.from_wiremock(json.decode(text, { literals = true }))
function model.from_wiremock(mapping)
  local stub = convert(mapping, snake, TOP)
  if stub.request and stub.request.basic_auth_credentials then
    stub.request.basic_auth = stub.request.basic_auth_credentials
    stub.request.basic_auth_credentials = nil
  end
  stub.id = stub.id or stub.uuid
  stub.uuid = nil
  -- postServeActions as WireMock 2 wrote them, {"webhook": {parameters}},
  -- are listed as WireMock 3 lists them: [{name, parameters}].
  local psa = stub.post_serve_actions
  if type(psa) == "table" and psa[1] == nil and next(psa) ~= nil then
    local list = setmetatable({}, array_mt)
    for name, p in pairs(psa) do list[#list + 1] = { name = name, parameters = p } end
    stub.post_serve_actions = list
  end
  return stub
end

--- WireMock's JSON form of a stub (a table for json.encode), as WireMock
-- lists it: a priority only when one was given, a response's status 200
-- when it names none. A response that is a Lua function appears as a body
-- saying so.
-- @usage res:json(model.to_wiremock(stub))
function model.to_wiremock(stub)
  local copy = {}
  for k, v in pairs(stub) do
    if k ~= "compiled" and k ~= "seq" and k ~= "source" and k ~= "lua" and k ~= "default_priority"
      and k ~= "webhooks" then
      copy[k] = v
    end
  end
  if stub.default_priority then copy.priority = nil end
  if type(copy.response) == "function" then
    copy.response = { status = 200, body = "(a Lua function)" }
  elseif type(copy.response) == "table" and copy.response.status == nil then
    local r = { status = 200 }
    for k, v in pairs(copy.response) do r[k] = v end
    copy.response = r
  end
  if copy.request and copy.request.basic_auth then
    local r = {}
    for k, v in pairs(copy.request) do r[k] = v end
    r.basic_auth_credentials, r.basic_auth = r.basic_auth, nil
    copy.request = r
  end
  local out = convert(copy, camel, TOP)
  out.uuid = out.id
  return out
end

-- The first place in value (named by path) holding a number that is not
-- finite (1e309 decodes to infinity), skipping the keys in skip and the
-- literal numbers kept as written. nil when there is none.
local function non_finite(value, path, skip)
  if type(value) == "number" then
    if value ~= value or value == math.huge or value == -math.huge then return path end
  elseif type(value) == "table" and getmetatable(value) ~= literal_mt then
    for k, v in pairs(value) do
      if not (skip and skip[k]) then
        local at = non_finite(v, path .. "." .. tostring(k))
        if at then return at end
      end
    end
  end
end

--- Checks and completes a stub written in Lua: `scenario = {name,
-- required_state, new_state}` becomes the flat fields, a string matcher
-- stands for equal_to, the method defaults to ANY and the priority to 5.
-- Returns the stub, or nil and what is wrong.
-- @usage local stub = assert(model.normalize(spec))
function model.normalize(spec)
  if type(spec) ~= "table" then return nil, "a stub is a table" end
  local req, res = spec.request, spec.response
  if req == nil then req = {} end
  if type(req) ~= "table" then return nil, "request must be a table" end
  if res == nil then res = {} end
  if type(res) ~= "table" and type(res) ~= "function" then
    return nil, "response must be a table or a function(req, res)"
  end
  local stub = {}
  for k, v in pairs(spec) do stub[k] = v end
  local sc = spec.scenario
  if sc ~= nil then
    if type(sc) ~= "table" or type(sc.name) ~= "string" then
      return nil, "scenario must be {name = ..., required_state = ..., new_state = ...}"
    end
    stub.scenario_name = sc.name
    stub.required_scenario_state = sc.required_state
    stub.new_scenario_state = sc.new_state
    stub.scenario = nil
  end
  local r = {}
  for k, v in pairs(req) do r[k] = v end
  r.method = type(r.method) == "string" and r.method:upper() or "ANY"
  for _, key in ipairs({ "headers", "query_parameters", "cookies", "path_parameters" }) do
    if r[key] ~= nil then
      if type(r[key]) ~= "table" then return nil, "request." .. key .. " must be a table" end
      local m = {}
      for name, matcher in pairs(r[key]) do
        m[name] = type(matcher) == "table" and matcher or { equal_to = tostring(matcher) }
      end
      r[key] = m
    end
  end
  if r.body_patterns ~= nil and type(r.body_patterns) ~= "table" then
    return nil, "request.body_patterns must be a list of matchers"
  end
  stub.request = r
  stub.response = res
  -- A priority not given is 5, and is not listed (default_priority).
  stub.default_priority = stub.priority == nil or nil
  stub.priority = tonumber(stub.priority) or 5
  -- A body is served as written; a number moonport itself must use (a
  -- status, a delay, a priority, a matcher's value) has to be one.
  local bad = non_finite(stub.priority, "priority") or non_finite(r, "request")
    or (type(res) == "table" and non_finite(res, "response", { json_body = true }))
  if bad then return nil, bad .. ": not a finite number" end
  return stub
end

-- Base64 ----------------------------------------------------------------

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local B64_INDEX = {}
for i = 1, 64 do B64_INDEX[byte(B64, i)] = i - 1 end
B64_INDEX[byte("-")] = 62 -- the URL-safe alphabet too
B64_INDEX[byte("_")] = 63

--- Base64 of s.
-- @usage model.base64_encode("user:pass")
model.base64_encode = crypto.base64_encode

--- The bytes base64 text stands for (either alphabet, white space and
-- padding allowed), or nil when it is not base64.
-- @usage model.base64_decode("dXNlcjpwYXNz")
function model.base64_decode(s)
  if not s:find("[^%w+/=]") then
    local bytes = crypto.base64_decode(s)
    if bytes then return bytes end
  end
  s = s:gsub("%s", ""):gsub("=+$", "")
  local out, acc, bits = {}, 0, 0
  for i = 1, #s do
    local v = B64_INDEX[byte(s, i)]
    if v == nil then return nil end
    acc = bit.bor(bit.lshift(acc, 6), v)
    bits = bits + 6
    if bits >= 8 then
      bits = bits - 8
      out[#out + 1] = char(bit.band(bit.rshift(acc, bits), 255))
      acc = bit.band(acc, bit.lshift(1, bits) - 1)
    end
  end
  return concat(out)
end

-- Whether s is valid UTF-8 (what JSON text may hold): no overlong
-- forms, surrogates or code points past U+10FFFF.
function model.is_utf8(s)
  if not s:find("[\128-\255]") then return true end
  local i, n = 1, #s
  while i <= n do
    local c = byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local len, lo, hi = 0, 0x80, 0xBF
      if c >= 0xC2 and c <= 0xDF then len = 2
      elseif c >= 0xE0 and c <= 0xEF then
        len = 3
        if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F end
      elseif c >= 0xF0 and c <= 0xF4 then
        len = 4
        if c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end
      end
      if len == 0 or i + len - 1 > n then return false end
      local b = byte(s, i + 1)
      if b < lo or b > hi then return false end
      for k = i + 2, i + len - 1 do
        b = byte(s, k)
        if b < 0x80 or b > 0xBF then return false end
      end
      i = i + len
    end
  end
  return true
end

--- Sets a journaled body on t: `body` when it is UTF-8 text, else
-- `bodyAsBase64` (JSON text holds no other bytes).
-- @usage model.put_body(entry.request, body)
function model.put_body(t, body)
  if model.is_utf8(body) then t.body = body else t.bodyAsBase64 = model.base64_encode(body) end
end

--- The bytes of a journaled body (model.put_body's), "" when none.
-- @usage local body = model.logged_body(entry.request)
function model.logged_body(t)
  if t.body ~= nil then return t.body end
  return t.bodyAsBase64 and model.base64_decode(t.bodyAsBase64) or ""
end

--- A random version 4 UUID.
-- @usage stub.id = model.uuid()
function model.uuid()
  local t = {}
  for i = 1, 16 do t[i] = math.random(0, 255) end
  t[7] = bit.bor(bit.band(t[7], 0x0f), 0x40)
  t[9] = bit.bor(bit.band(t[9], 0x3f), 0x80)
  local hex = {}
  for i = 1, 16 do hex[i] = ("%02x"):format(t[i]) end
  return concat(hex, "", 1, 4) .. "-" .. concat(hex, "", 5, 6) .. "-"
    .. concat(hex, "", 7, 8) .. "-" .. concat(hex, "", 9, 10) .. "-" .. concat(hex, "", 11, 16)
end

model.null = json.null

return model
