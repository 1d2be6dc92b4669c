--- Checks an app's responses against an OpenAPI document, as Prism's
-- validateOutput does (moonport.openapi.validate's `responses` option).
--
-- A response is looked up by its status in the operation's responses:
-- the code itself ("200"), then its range ("2XX"), then `default`. No
-- match is a violation (an error for a 2xx status, a warning, only
-- logged, for others). Then, as Prism checks them: the media type of the
-- Content-Type against the response's `content` keys (`*` wildcards, and
-- parameters the document gives must be there), the body against the
-- chosen media type's schema (JSON bodies, decoded; AJV's messages,
-- prefixed "Response body"), and the response's documented headers
-- (required ones present, values coerced to their schema's type and
-- checked). Schemas are compiled once, on first use, per response and
-- media type.
--
-- The holder is core/response.lua's hold: it sees the handler's whole
-- body before the core sends it, with the status and the header lines
-- set so far. With "enforce", a response with errors is replaced by a
-- 500 problem (Prism's VIOLATIONS) listing them; a streamed body (the
-- head alone is seen) and warnings are only logged.
-- @module moonport.openapi.response

local json = require("moonport.json")
local core = require("moonport.core")
local response = require("moonport.core.response")

local type, tostring, ipairs, pairs, next, concat = type, tostring, ipairs, pairs, next, table.concat
local lower, find, sub = string.lower, string.find, string.sub
local json_decode = json.decode
local log = core.log
local ffi_string = require("ffi").string

local M = {}

local function jsonschema() return require("moonport.jsonschema") end

-- The dialect moonport.jsonschema compiles a document's schemas in.
local function dialect(doc) return doc.version == "3.1" and "oas3.1" or "oas3.0" end

--- The response object of op for status: its code, its range (2XX), or
-- default; nil when none. Returns it and the key it is under.
-- @usage local def = response_check.find(op, 200)
function M.find(op, status)
  local responses = op.responses or {}
  local code = tostring(status)
  if responses[code] then return responses[code], code end
  local range = sub(code, 1, 1) .. "XX"
  if responses[range] then return responses[range], range end
  if responses[lower(range)] then return responses[lower(range)], lower(range) end
  if responses.default then return responses.default, "default" end
  return nil
end

-- A media type's essence and parameters: "application/json; charset=utf-8"
-- -> "application/json", { charset = "utf-8" }.
local function parse_type(text)
  text = lower(text or "")
  local essence = text:match("^%s*([^;%s]+)") or ""
  local params = {}
  for k, v in text:gmatch(";%s*([^=;%s]+)%s*=%s*\"?([^;\"]*)\"?") do params[k] = v end
  return essence, params
end

local function wildcard_match(pattern, essence)
  if pattern == "*/*" or pattern == essence then return true end
  local pt, ps = pattern:match("^([^/]+)/(.+)$")
  local et, es = essence:match("^([^/]+)/(.+)$")
  if not pt or not et then return false end
  return (pt == "*" or pt == et) and (ps == "*" or ps == es)
end

-- The keys of t (a content or headers map of the document) sorted, and
-- for content their parsed media types, made once per map in cache.
local function sorted_keys(cache, t)
  local keys = cache[t]
  if keys == nil then
    keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys)
    keys.parsed = {}
    for i, k in ipairs(keys) do
      local essence, params = parse_type(k)
      keys.parsed[i] = { essence, params }
    end
    cache[t] = keys
  end
  return keys
end

-- The key of content that the media type text matches (Prism's
-- validateMediaType), or nil.
local function match_content(content, text, cache)
  local essence, params = parse_type(text)
  local keys = sorted_keys(cache, content)
  for i, k in ipairs(keys) do
    local ke, kp = keys.parsed[i][1], keys.parsed[i][2]
    if wildcard_match(essence, ke) or wildcard_match(ke, essence) then
      local all = true
      for pk, pv in pairs(kp) do if params[pk] ~= pv then all = false end end
      if all then return k end
    end
  end
  return nil
end

local function is_json_type(essence)
  return essence == "application/json" or find(essence, "+json", 1, true) ~= nil
    or find(essence, "/json", 1, true) ~= nil
end

-- AJV's errors as Prism's violations (convertAjvErrors), as the request
-- check writes them: "Response body property a.b must be integer".
local violation = require("moonport.openapi.request").violation
local function convert(errors, prefix, context)
  local out = {}
  for i, e in ipairs(errors) do out[i] = violation(e, prefix, context) end
  return out
end
M._convert = convert

-- The compiled schema of a response's media type (or header), made once.
local function compiled(cache, key, schema, doc)
  local v = cache[key]
  if v == nil then
    local err
    v, err = jsonschema().compile(schema, { dialect = dialect(doc), formats = true, direction = "response" })
    if v == nil then
      log("warn", "openapi: cannot compile a response schema: " .. tostring(err))
      v = false
    end
    cache[key] = v
  end
  return v or nil
end

-- The header lines as a table of lower-case names to values (a repeated
-- name's values joined by ", ").
local function header_table(lines)
  local t = {}
  for name, value in (lines or ""):gmatch("([^\r\n:]+): ([^\r\n]*)\r\n") do
    local l = lower(name)
    t[l] = t[l] and (t[l] .. ", " .. value) or value
  end
  return t
end

--- The violations of a response to op (a list, empty when it conforms):
-- status, the header lines set ("Name: value\r\n" each, or the table
-- of lower-case names to values they make), its Content-Type
-- (what goes out), and body (a string; nil when none was sent or it was
-- streamed). cache keeps compiled schemas.
-- @usage local violations = response_check.check(op, doc, 200, lines, "application/json", body, {})
function M.check(op, doc, status, lines, content_type, body, cache)
  local out = {}
  local def = M.find(op, status)
  if def == nil then
    local codes = {}
    for k in pairs(op.responses or {}) do codes[#codes + 1] = k end
    table.sort(codes)
    out[1] = { location = {}, code = "", severity = (status >= 200 and status < 300) and "Error" or "Warning",
               message = "Unable to match the returned status code with those defined in the document: "
                 .. concat(codes, ",") }
    return out
  end
  local content = def.content
  if type(content) == "table" and next(content) ~= nil and body ~= nil and body ~= "" then
    local key = match_content(content, content_type, cache)
    if key == nil then
      local keys = sorted_keys(cache, content)
      out[#out + 1] = { location = {}, code = "", severity = "Error",
        message = ('The received media type "%s" does not match the one%s specified in the current response: %s')
          :format(content_type or "", #keys > 1 and "s" or "", concat(keys, ", ")) }
    else
      local media = content[key]
      local essence = parse_type(content_type)
      if type(media) == "table" and media.schema ~= nil and is_json_type(essence) then
        local value, err = json_decode(body)
        if value == nil and err ~= nil then
          out[#out + 1] = { location = { "body" }, code = "invalid_json", severity = "Error",
                            message = "Response body is not valid JSON: " .. tostring(err) }
        else
          local v = compiled(cache, media, media.schema, doc)
          if v and not v.valid(value) then
            for _, viol in ipairs(convert(v.errors(value), "body", "Response")) do out[#out + 1] = viol end
          end
        end
      end
    end
  end
  local headers = def.headers
  if type(headers) == "table" then
    local have = type(lines) == "table" and lines or header_table(lines)
    for _, name in ipairs(sorted_keys(cache, headers)) do
      local h = headers[name]
      local l = lower(name)
      if l ~= "content-type" and type(h) == "table" then
        local value = have[l]
        if value == nil then
          if h.required == true then
            out[#out + 1] = { location = { "header" }, code = "required", severity = "Error",
                              message = "Response header must have required property '" .. l .. "'" }
          end
        elseif h.schema ~= nil then
          local v = compiled(cache, h, h.schema, doc)
          local js = jsonschema()
          local coerced = js.coerce and js.coerce(value, h.schema) or value
          if v and not v.valid(coerced) then
            -- The header's name leads the path: "Response header
            -- parameter x-rate must be integer".
            local errors = v.errors(coerced)
            for _, e in ipairs(errors) do
              local path = { l }
              for i, p in ipairs(e.path or {}) do path[i + 1] = p end
              e.path = path
            end
            for _, viol in ipairs(convert(errors, "header", "Response")) do out[#out + 1] = viol end
          end
        end
      end
    end
  end
  return out
end

-- Whether a list of violations holds an error (not only warnings).
local function has_error(list)
  for _, v in ipairs(list) do if v.severity ~= "Warning" then return true end end
  return false
end

local function summary(list)
  local m = {}
  for i, v in ipairs(list) do m[i] = v.message end
  return concat(m, "; ")
end

--- The function core/response.lua's hold calls for a validated app's
-- response (see the module's comment), for the compiled document c;
-- enforce: errors turn the response into a 500 problem.
-- @usage response.hold(req, response_check.holder(c, true))
function M.holder(c, enforce)
  local doc = c.doc
  local cache = {}
  local openapi = require("moonport.openapi")
  return function(res, body, len, is_json)
    -- A head already out (res:send_file, res:fault) cannot be seen nor
    -- replaced: it goes unchecked.
    local lines = response.header_lines(res)
    local req = res - 1
    local op = lines and doc:route(req.method, req.path)
    if not op then
      if body ~= nil then return response.send_raw(res, body, len, is_json) end
      return 0
    end
    local status = res:get_status()
    local have = header_table(lines)
    local ct = have["content-type"]
    if ct == nil and body ~= nil then ct = is_json == 1 and "application/json" or "text/plain; charset=utf-8" end
    local text
    if body ~= nil then
      text = type(body) == "string" and body or ffi_string(body, len)
    end
    local violations = M.check(op, doc, status, have, ct, text, cache)
    if #violations == 0 then
      if body ~= nil then return response.send_raw(res, body, len, is_json) end
      return 0
    end
    local what = ("openapi: %s %s -> %d: the response does not match %s: %s"):format(
      req.method, req.path, status, c.path, summary(violations))
    local errors = has_error(violations)
    log(errors and "error" or "warn", what)
    -- A streamed body's head is out with its first piece: logged only.
    local replace = enforce and errors and (body ~= nil or len < 0)
    if not replace then
      if body ~= nil then return response.send_raw(res, body, len, is_json) end
      return 0
    end
    if not response.reset(res) then return 0 end
    local list = {}
    for _, v in ipairs(violations) do
      if v.severity ~= "Warning" then
        local loc = { "response" }
        for i, p in ipairs(v.location or {}) do loc[i + 1] = p end
        list[#list + 1] = { location = loc, severity = v.severity, code = v.code, message = v.message }
      end
    end
    openapi.problem(res, 500, "VIOLATIONS", "Request/Response not valid",
      "The response does not match the OpenAPI document " .. c.path
      .. ", and moonport.openapi.validate enforces it (responses = \"enforce\").",
      { { "validation", openapi._violations_json(list) } })
    return 0
  end
end

return M
