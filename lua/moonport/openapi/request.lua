--- Request validation for one OpenAPI operation, as Prism 5.14 validates
-- (prism-http/dist/validator): security presence, the body, then header,
-- query and path parameters, each violation worded as Prism words it.
--
--     local oarequest = require("moonport.openapi.request")
--     local check = oarequest.compile(op, doc)         -- once per operation
--     local violations, status = check(req, params)    -- params from doc:route
--     -- nil for a valid request; else a list of
--     --   { location = { "query", "limit" }, severity = "Error", code = "type",
--     --     message = "Request query parameter limit must be integer" }
--     -- and 401 (security), 415 (content type), 400 (invalid JSON) or 422.
--
-- What Prism does, and so this module:
-- - Security: the operation's requirements are alternatives (any one
--   passing is enough), the schemes of one requirement must all pass. An
--   API key must be present (a header or query parameter that is not
--   empty, a cookie `name=` with a value); http bearer, oauth2 and
--   openIdConnect want `Authorization: Bearer <token>`; basic wants
--   `Basic <base64 of user:password>`; an empty requirement `{}` passes
--   only without an Authorization header. A failure is one violation,
--   code 401, "Invalid security scheme used", with `tags`: the
--   WWW-Authenticate challenges of every failed scheme.
-- - The body: absent when Content-Length is 0 or neither Content-Length nor
--   Transfer-Encoding came. A JSON media type (application/json,
--   application/*+json) is decoded (400 "Invalid JSON" when it does not
--   decode), any other body is text. A required body that is absent or
--   falsy in JavaScript's sense (null, false, 0, "") is "Body parameter is
--   required". With a Content-Length above 0, a Content-Type none of the
--   operation's media types matches (type and subtype, `*` in the
--   document matching any, `+json` suffixes matching `json`) is 415, as is
--   any body for an operation that declares none. The body is then checked
--   against the matching media type's schema (or the first one's when the
--   request names no type); form bodies (x-www-form-urlencoded) are split,
--   decoded and their fields coerced as parameters are.
-- - Parameters: header, query and path ones (Prism checks no cookie
--   parameter), names compared in lower case and reported so. Values are
--   deserialized by style (simple, label, matrix in paths; form,
--   spaceDelimited, pipeDelimited, deepObject in queries) with `explode`
--   false unless the document says true, then coerced to the schema's
--   types as AJV's coerceTypes does ("5" is 5, "abc" stays a string and
--   fails `type`). An empty query value counts as absent. Per location,
--   missing required parameters come first, then each parameter's errors,
--   then Warnings for deprecated parameters that were sent (listed only
--   when the request has errors, as Prism lists them in its 422).
--
-- The schemas are compiled by moonport.jsonschema (AJV 8's codes and
-- messages, formats asserted as ajv-formats does, readOnly properties not
-- required in requests). A valid request allocates nothing here beyond
-- what reading it allocates (header and query values, the decoded body).
--
-- Not validated (doc.warnings names them): XML and multipart bodies,
-- cookie parameters.
-- @module moonport.openapi.request

local crypto = require("moonport.core.crypto")
local json = require("moonport.json")
local jsonschema = require("moonport.jsonschema")
local oadoc = require("moonport.openapi.doc")
local url = require("moonport.url")

local type, pairs, ipairs, tostring, tonumber, setmetatable, getmetatable, error =
  type, pairs, ipairs, tostring, tonumber, setmetatable, getmetatable, error
local byte, find, sub, gsub, match, lower, upper, format =
  string.byte, string.find, string.sub, string.gsub, string.match,
  string.lower, string.upper, string.format
local concat, sort = table.concat, table.sort

local null, array_mt = json.null, json.array_mt

local oarequest = {}

local function array(t) return setmetatable(t or {}, array_mt) end

-- The text JavaScript's String() gives a JSON value (for Prism's
-- "allowed values" lists).
local function js_string(v)
  if v == null or v == nil then return "" end
  if type(v) == "number" then
    if v == math.floor(v) and v > -1e21 and v < 1e21 then return format("%d", v) end
    return (gsub(format("%.17g", v), "^(-?%d)%.?(%d-)0*e%+?(%-?)0*(%d+)$", "%1.%2e%3%4"))
  end
  if type(v) == "table" then
    if getmetatable(v) == array_mt then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = js_string(x) end
      return concat(parts, ",")
    end
    return "[object Object]"
  end
  return tostring(v)
end

-- Prism's violation for one AJV error (validator/validators/utils.js,
-- convertAjvErrors), under prefix ("body", "query", "header", "path");
-- context leads the message ("Request" when nil; "Response" for
-- moonport.openapi.response).
local function violation(err, prefix, context)
  local path = array({ prefix })
  local names = {}
  for i, k in ipairs(err.path or {}) do
    local s = type(k) == "number" and format("%d", k) or tostring(k)
    path[i + 1] = s
    names[i] = s
  end
  local desc = (context or "Request") .. " " .. prefix .. " "
  if #names > 0 then
    desc = desc .. (prefix == "body" and "property " or "parameter ") .. concat(names, ".") .. " "
  end
  local params = err.params or {}
  local extra = ""
  if params.allowedValues ~= nil then
    local vals = {}
    for i, v in ipairs(params.allowedValues) do vals[i] = js_string(v) end
    extra = extra .. ": " .. concat(vals, ", ")
  end
  if params.additionalProperty ~= nil then
    extra = extra .. "; found '" .. tostring(params.additionalProperty) .. "'"
  end
  if params.unevaluatedProperty ~= nil then
    extra = extra .. ": '" .. tostring(params.unevaluatedProperty) .. "'"
  end
  return {
    location = path, severity = "Error", code = err.code or "",
    message = desc .. (err.message or "") .. extra,
  }
end

--- Prism's violation for one AJV error (jsonschema's errors) under prefix
-- ("body", "header", ...), its message led by context ("Request" when
-- nil): { location, severity, code, message }.
-- @usage local v = oarequest.violation(err, "body", "Response")
oarequest.violation = violation

-- Splits s on the plain separator sep into an array.
local function split(s, sep)
  local out, i, n = array(), 1, 0
  local len = #sep
  while true do
    local j = find(s, sep, i, true)
    n = n + 1
    if not j then out[n] = sub(s, i); break end
    out[n] = sub(s, i, j - 1)
    i = j + len
  end
  return out
end

-- Prism's createObjectFromKeyValList: a, b, c, d -> { a = b, c = d }.
local function kv_list(items)
  local obj = {}
  for i = 1, #items, 2 do obj[items[i]] = items[i + 1] end
  return obj
end

-- "k=v,k2=v2" -> { k = v, k2 = v2 }.
local function kv_pairs(s, sep)
  local obj = {}
  for _, pair in ipairs(split(s, sep)) do
    local eq = find(pair, "=", 1, true)
    if eq then obj[sub(pair, 1, eq - 1)] = sub(pair, eq + 1) else obj[pair] = nil end
  end
  return obj
end

local function schema_type(schema)
  local t = type(schema) == "table" and schema.type
  if type(t) == "string" then return t end
  return nil
end

-- A value coerced to its schema as AJV's coerceTypes does, leaf by leaf
-- (jsonschema.coerce for text; arrays and objects by their items and
-- properties). Returns the value itself when nothing changes.
local function coerce(value, schema)
  if type(schema) ~= "table" then return value end
  local tv = type(value)
  if tv == "string" then return jsonschema.coerce(value, schema) end
  if tv == "table" then
    if getmetatable(value) == array_mt then
      local items = schema.items
      if type(items) == "table" and getmetatable(items) ~= array_mt then
        for i = 1, #value do value[i] = coerce(value[i], items) end
      end
    elseif type(schema.properties) == "table" then
      for k, v in pairs(value) do
        local ps = schema.properties[k]
        if ps ~= nil then value[k] = coerce(v, ps) end
      end
    end
  end
  return value
end

-- The query string as Prism's URLSearchParams gives it: names (lower
-- case, as Prism looks them up) to a string, or to an array of strings
-- for a repeated name.
local function parse_query(qs)
  local t = {}
  for name, value in pairs(url.parse_query(qs)) do
    local lname = lower(name)
    local seen = t[lname]
    if seen == nil and type(value) == "table" then
      t[lname] = array(value)
    elseif seen == nil then
      t[lname] = value
    else
      -- The same name in two spellings (LIMIT and limit): one list.
      local list = type(seen) == "table" and seen or array({ seen })
      if type(value) == "table" then
        for _, v in ipairs(value) do list[#list + 1] = v end
      else
        list[#list + 1] = value
      end
      t[lname] = list
    end
  end
  return t
end

local function last(v)
  if type(v) == "table" then return v[#v] end
  return v
end

-- Deserializers by location and style, as prism-http's deserializers/:
-- (param, raw value or the query table) -> value or nil.
local function simple(p, value)
  if value == nil then return nil end
  local t = p.type
  if t == "array" then
    if value == "" then return array() end
    return split(value, ",")
  elseif t == "object" then
    if p.explode then return kv_pairs(value, ",") end
    return kv_list(split(value, ","))
  end
  return value
end

local function label(p, value)
  if value == nil then return nil end
  -- Prism fails the request (an exception) without the "."; the value
  -- is taken as it is here.
  if sub(value, 1, 1) ~= "." then return value end
  value = sub(value, 2)
  -- After the ".", simple's rules but for an exploded array's separator.
  if p.type == "array" and p.explode and value ~= "" then return split(value, ".") end
  return simple(p, value)
end

local function matrix(p, value)
  if value == nil then return nil end
  if sub(value, 1, 1) ~= ";" then return value end
  value = sub(value, 2)
  local prefix = p.name .. "="
  local function prim(v)
    if sub(v, 1, #prefix) ~= prefix then return v end
    return sub(v, #prefix + 1)
  end
  local t = p.type
  if t == "array" then
    if p.explode then
      if value == "" then return array() end
      local out = array()
      for i, part in ipairs(split(value, ";")) do out[i] = prim(part) end
      return out
    end
    local raw = prim(value)
    if raw == "" then return array() end
    return split(raw, ",")
  elseif t == "object" then
    if p.explode then return kv_pairs(value, ";") end
    return kv_list(split(prim(value), ","))
  end
  return prim(value)
end

local function form(p, query)
  local values = query[p.lname]
  local t = p.type
  local falsy = values == nil or values == ""
  if not (t == "object" and p.explode) and falsy then return nil end
  if t == "array" then
    if p.explode then
      if type(values) == "table" then return values end
      return array({ values })
    end
    return split(last(values), ",")
  elseif t == "object" then
    if p.explode then
      local props = type(p.schema.properties) == "table" and p.schema.properties or {}
      local obj = {}
      for k, v in pairs(query) do
        if props[k] ~= nil then obj[k] = v end
      end
      return obj
    end
    return kv_list(split(last(values), ","))
  end
  return values
end

local function delimited(sep)
  return function(p, query)
    if p.type ~= "array" then return form(p, query) end
    local values = query[p.lname]
    if p.explode then
      if type(values) == "table" then return values end
      return array({ values })
    end
    values = last(values)
    if values == nil or values == "" then return "" end
    return split(values, sep)
  end
end

-- A schema met again inside itself (a recursive one) is a leaf, as in
-- Prism, whose dereferencer leaves that inner `$ref` unresolved (no
-- `type`): so the walk ends however deep the query's names go.
local function deep_object(p, query)
  local active = {}
  local function construct(path, def)
    if type(def) ~= "table" then def = {} end
    if active[def] then return query[path] end
    if def.type == "object" then
      active[def] = true
      local obj = {}
      for k, sub_def in pairs(type(def.properties) == "table" and def.properties or {}) do
        obj[k] = construct(path .. "[" .. k .. "]", sub_def)
      end
      active[def] = nil
      return obj
    elseif def.type == "array" then
      local indexes, list = {}, {}
      local prefix = path .. "["
      for k in pairs(query) do
        if sub(k, 1, #prefix) == prefix then
          local i = match(k, "^(%d+)%]", #prefix + 1)
          if i and not indexes[i] then indexes[i] = true; list[#list + 1] = i end
        end
      end
      sort(list, function(a, b) return tonumber(a) < tonumber(b) end)
      local out = array()
      active[def] = true
      for j, i in ipairs(list) do
        -- An item with no value is JavaScript's undefined in Prism's array.
        local item = construct(path .. "[" .. i .. "]", def.items)
        if item == nil then item = null end
        out[j] = item
      end
      active[def] = nil
      return out
    end
    return query[path]
  end
  return construct(p.lname, p.schema)
end

local QUERY_STYLES = {
  form = form, simple = form,
  spaceDelimited = delimited("%20"), pipeDelimited = delimited("|"),
  commaDelimited = delimited(","), deepObject = deep_object,
}
local PATH_STYLES = { simple = simple, label = label, matrix = matrix }

-- The bytes Node's Buffer.from(s, "base64") gives (Prism's basic
-- check): the text up to the first "=", characters of neither base64
-- alphabet skipped, "-" and "_" read as "+" and "/", a lone last
-- character dropped.
local function node_base64(s)
  s = gsub(match(s, "^[^=]*"), "[^%w+/%-_]", "")
  s = gsub(gsub(s, "%-", "+"), "_", "/")
  if #s % 4 == 1 then s = sub(s, 1, -2) end
  return crypto.base64_decode(s)
end

-- Security handlers (validator/validators/security/handlers): (req, scheme)
-- -> true, or false and the WWW-Authenticate challenge (or nil).
local BASIC_TAG = 'Basic realm="*"'
local DIGEST_TAG = 'Digest realm="*", nonce="abc123"'

local function bearer(tag)
  return function(req)
    local auth = req:header("authorization")
    if auth and find(auth, "^Bearer%s.") then return true end
    return false, tag
  end
end

local function basic(req)
  local auth = req:header("authorization")
  if not auth or auth == "" then return false, BASIC_TAG end
  local scheme, token = match(auth, "^([^ ]*) ?([^ ]*)")
  if lower(scheme) ~= "basic" then return false, BASIC_TAG end
  local decoded = token ~= "" and node_base64(token)
  if decoded then
    local _, colons = gsub(decoded, ":", "")
    if colons == 1 then return true end
  end
  return false
end

local function digest(req)
  local auth = req:header("authorization")
  if not auth or auth == "" then return false, DIGEST_TAG end
  local scheme, info = match(auth, "^([^ ]*) ?(.*)$")
  if lower(scheme) ~= "digest" then return false, DIGEST_TAG end
  for _, key in ipairs({ "username=", "realm=", "nonce=", "uri=", "response=" }) do
    if not find(info, key, 1, true) then return false end
  end
  return true
end

-- The handler for a security scheme, or nil when Prism checks none.
local function security_handler(scheme)
  if type(scheme) ~= "table" then return nil end
  local t = scheme.type
  if t == "apiKey" then
    local name = tostring(scheme.name or "")
    local where = scheme["in"]
    if where == "header" then
      return function(req)
        local v = req:header(name)
        return v ~= nil and v ~= ""
      end
    elseif where == "query" then
      return function(req)
        local v = req:query(name)
        return v ~= nil and v ~= ""
      end
    elseif where == "cookie" then
      local needle = gsub(name, "%p", "%%%0") .. "=."
      return function(req)
        local c = req:header("cookie")
        return c ~= nil and find(c, needle) ~= nil
      end
    end
  elseif t == "http" then
    local s = type(scheme.scheme) == "string" and lower(scheme.scheme) or ""
    if s == "bearer" then return bearer("Bearer") end
    if s == "basic" then return basic end
    if s == "digest" then return digest end
  elseif t == "oauth2" then
    return bearer("OAuth2")
  elseif t == "openIdConnect" then
    return bearer("OpenID")
  end
  return nil
end

-- The "none" handler of an empty requirement.
local function no_auth(req)
  if req:header("authorization") == nil then return true end
  return false, "None"
end

local function compile_security(op, doc)
  local schemes = doc.security_schemes or {}
  local alternatives = {}
  for _, requirement in ipairs(op.security or {}) do
    if type(requirement) == "table" then
      local handlers = {}
      local names = {}
      for name in pairs(requirement) do names[#names + 1] = name end
      sort(names)
      for _, name in ipairs(names) do
        local h = security_handler(schemes[name])
        if h then handlers[#handlers + 1] = h end
      end
      if #names == 0 then handlers[1] = no_auth end
      alternatives[#alternatives + 1] = handlers
    end
  end
  if #alternatives == 0 then return nil end
  -- A requirement whose schemes Prism does not check always passes.
  for _, handlers in ipairs(alternatives) do
    if #handlers == 0 then return nil end
  end
  return function(req)
    for _, handlers in ipairs(alternatives) do
      local ok = true
      for _, h in ipairs(handlers) do
        if not h(req) then ok = false; break end
      end
      if ok then return nil end
    end
    -- Failed: gather every challenge, as Prism's setErrorTag does.
    local tags = array()
    for _, handlers in ipairs(alternatives) do
      for _, h in ipairs(handlers) do
        local ok, tag = h(req)
        if not ok and tag then tags[#tags + 1] = tag end
      end
    end
    return {
      location = array(), severity = "Error", code = 401,
      message = "Invalid security scheme used", tags = tags,
    }
  end
end

-- type/subtype of a media type, lower case, and its parts as Prism's
-- wildcardMediaTypeMatch reads them (a "+suffix" subtype is the suffix).
local function media_parts(media)
  local essence = lower(match(media, "^%s*([^;%s]+)") or "")
  local t, rest = match(essence, "^([^/]+)/(.+)$")
  if not t then return nil end
  local sub_type = match(rest, "%+([^+]+)$") or rest
  return t, sub_type, essence
end

-- The first of contents (compiled with media_parts' t and sub) whose
-- media type the request's (essence) matches, or nil.
local function media_entry(essence, contents)
  local at, as = media_parts(essence)
  if not at then return nil end
  for _, e in ipairs(contents) do
    local bt, bs = e.t, e.sub
    if bt and (at == bt or bt == "*") and (as == bs or bs == "*") then return e end
  end
  return nil
end

local function is_json_media(essence)
  return essence == "application/json" or (find(essence, "^application/[^/]*%+json$") ~= nil)
end

-- JavaScript's falsiness for a body Prism parsed.
local function falsy(v)
  return v == nil or v == null or v == false or v == 0 or v == "" or v ~= v
end

local function compile_body(op, opts)
  local rb = op.request_body
  local contents = {}
  if rb and type(rb.content) == "table" then
    for _, media in ipairs(oadoc.keys(rb.content)) do
      local c = rb.content[media]
      local entry = { media = media }
      entry.t, entry.sub = media_parts(media)
      local essence = lower(match(media, "^%s*([^;%s]+)") or "")
      if essence == "application/x-www-form-urlencoded" then
        entry.form = true
      elseif find(essence, "^multipart/") or find(essence, "xml", 1, true) then
        entry.skip = true
      end
      if type(c) == "table" and type(c.schema) == "table" then
        entry.schema = c.schema
        entry.v = assert(jsonschema.compile(c.schema, opts))
      end
      contents[#contents + 1] = entry
    end
  end
  local supported = {}
  for i, e in ipairs(contents) do supported[i] = e.media end
  supported = "Supported content types: " .. concat(supported, ",")
  local required = rb and rb.required == true

  -- Returns the violations of the body (a list) and the status it alone
  -- forces (400, 415), or nil.
  return function(req)
    local cl = req:header("content-length")
    local te = req:header("transfer-encoding")
    local ctype = req:header("content-type")
    local body
    local present = not (cl == "0" or (te == nil and cl == nil))
    local essence = ctype and lower(match(ctype, "^%s*([^;%s]+)") or "")
    if present then
      local text = req:body()
      if essence and is_json_media(essence) then
        local value = json.decode(text)
        if value == nil then
          return { {
            location = array(), severity = "Error", code = "invalid_json",
            message = "Invalid JSON",
          } }, 400
        end
        body = value
      else
        body = text
      end
    end
    if required and falsy(body) then
      return { {
        location = array(), severity = "Error", code = "required",
        message = "Body parameter is required",
      } }
    end
    -- The request's media type is looked up once, for both the 415
    -- check and the schema.
    local entry = essence and media_entry(essence, contents)
    local length = tonumber(cl and match(cl, "^%s*(%d+)")) or 0
    if length ~= 0 then
      local ok = rb ~= nil and (not essence or #contents == 0 or entry ~= nil)
      if not ok then
        return { {
          location = array(), severity = "Error", code = 415,
          message = (rb and #contents > 0) and supported
            or "No supported content types, but request included a non-empty body",
        } }, 415
      end
    end
    if body == nil or body == null or not rb then return nil end
    entry = entry or contents[1]
    if not entry or not entry.v or entry.skip then return nil end
    local value = body
    if entry.form then
      if type(body) ~= "string" then return nil end
      -- Prism splits on "&" and "=", last value of a name winning, then
      -- decodes (with "+" as a space) and coerces.
      local fields = {}
      for pair in (body .. "&"):gmatch("([^&]*)&") do
        local eq = find(pair, "=", 1, true)
        local k, v = pair, ""
        if eq then k, v = sub(pair, 1, eq - 1), sub(pair, eq + 1) end
        fields[url.decode(k, true)] = url.decode(v, true)
      end
      value = coerce(fields, entry.schema)
    end
    if entry.v.valid(value) then return nil end
    local out = {}
    for _, err in ipairs(entry.v.errors(value)) do out[#out + 1] = violation(err, "body") end
    return out
  end
end

-- The checks of one location's parameters.
local function compile_params(op, where, opts)
  local list, by_lname = {}, {}
  for _, p in ipairs(op.parameters or {}) do
    if type(p) == "table" and p["in"] == where and type(p.name) == "string" then
      local schema = p.schema
      if type(schema) ~= "table" and type(p.content) == "table" then
        for _, c in pairs(p.content) do
          if type(c) == "table" and type(c.schema) == "table" then schema = c.schema; break end
        end
      end
      local lname = lower(p.name)
      local entry = {
        name = p.name, lname = lname, required = p.required == true,
        deprecated = p.deprecated == true, explode = p.explode == true,
        style = type(p.style) == "string" and p.style or nil,
        schema = type(schema) == "table" and schema or {},
      }
      entry.type = schema_type(entry.schema)
      entry.v = assert(jsonschema.compile(entry.schema, opts))
      if by_lname[lname] then
        list[by_lname[lname]] = entry
      else
        list[#list + 1] = entry
        by_lname[lname] = #list
      end
    end
  end
  if #list == 0 then return nil end
  local styles = where == "query" and QUERY_STYLES or PATH_STYLES
  local default = where == "query" and "form" or "simple"
  for _, e in ipairs(list) do
    e.deserialize = styles[e.style or default] or (where == "query" and form or simple)
    if where == "header" then e.deserialize = simple end
    -- The query's fast path: a form-style primitive read with req:query,
    -- unless the name is repeated (then Prism's value is a list).
    e.fast = where == "query" and e.deserialize == form and e.type ~= "array" and e.type ~= "object"
    e.needle = e.lname .. "="
  end
  local prefix_up = upper(sub(where, 1, 1)) .. sub(where, 2)

  -- The value Prism validates for entry e, or nil when absent.
  local function value_of(e, req, params)
    if where == "header" then
      return simple(e, req:header(e.name))
    elseif where == "path" then
      local raw = params and params[e.name]
      if raw == nil and params then
        for k, v in pairs(params) do
          if lower(k) == e.lname then raw = v; break end
        end
      end
      return e.deserialize(e, raw)
    end
    return nil
  end

  -- Whether the query string may spell e's name in another case
  -- ("LIMIT=", "%6Cimit=") or repeats it: both need the whole query
  -- parsed. Otherwise req:query(e.lname) reads what Prism would.
  local function needs_parse(e, qs)
    if find(qs, "[A-Z%%]") then return true end
    local first = find(qs, e.needle, 1, true)
    while first and first > 1 and byte(qs, first - 1) ~= 38 do
      first = find(qs, e.needle, first + 1, true)
    end
    return first ~= nil and find(qs, "&" .. e.needle, first + 1, true) ~= nil
  end

  return function(req, params)
    local query
    local qs = where == "query" and (req.query_string or "") or nil
    local failed = false
    -- Fast pass: nothing allocated for a valid request (but the values).
    for _, e in ipairs(list) do
      local v
      if where == "query" then
        if e.fast and not needs_parse(e, qs) then
          v = req:query(e.lname)
          if v == "" then v = nil end
        else
          query = query or parse_query(qs)
          v = e.deserialize(e, query)
        end
      else
        v = value_of(e, req, params)
      end
      if v == "" then v = nil end -- Prism's pickBy drops falsy values
      if v == nil then
        if e.required then failed = true; break end
      elseif not e.v.valid(coerce(v, e.schema)) then
        failed = true
        break
      end
    end
    if not failed then return nil end
    -- Slow pass: every value again, for the errors in Prism's order.
    local values = {}
    for i, e in ipairs(list) do
      local v
      if where == "query" then
        query = query or parse_query(qs)
        v = e.deserialize(e, query)
      else
        v = value_of(e, req, params)
      end
      if v == "" then v = nil end
      if v ~= nil then v = coerce(v, e.schema) end
      values[i] = v
    end
    local out = {}
    for i, e in ipairs(list) do
      if e.required and values[i] == nil then
        out[#out + 1] = {
          location = array({ where }), severity = "Error", code = "required",
          message = "Request " .. where .. " must have required property '" .. e.lname .. "'",
        }
      end
    end
    for i, e in ipairs(list) do
      local v = values[i]
      if v ~= nil and not e.v.valid(v) then
        for _, err in ipairs(e.v.errors(v)) do
          local path = array({ e.lname })
          for j, k in ipairs(err.path or {}) do path[j + 1] = k end
          out[#out + 1] = violation({ path = path, code = err.code, message = err.message,
            params = err.params }, where)
        end
      end
    end
    local raw_query
    for _, e in ipairs(list) do
      if e.deprecated then
        local sent
        if where == "query" then
          -- Prism looks the name up as written in the document, in the
          -- query as sent (not lower-cased).
          raw_query = raw_query or url.parse_query(qs)
          local q = raw_query[e.name]
          sent = q ~= nil and q ~= ""
        elseif where == "header" then
          local h = req:header(e.name)
          sent = h ~= nil and h ~= ""
        else
          sent = params and params[e.name] ~= nil and params[e.name] ~= ""
        end
        if sent then
          out[#out + 1] = {
            location = array({ where, e.name }), severity = "Warning", code = "deprecated",
            message = prefix_up .. " param " .. e.name .. " is deprecated",
          }
        end
      end
    end
    return out
  end
end

--- Compiles the request checks of an operation of a loaded document
-- (moonport.openapi.doc). Returns check(req, params): nil for a valid
-- request, or the list of Prism's violations and the status to answer
-- (401, 415, 400 or 422). `req` is moonport's request (or any table with
-- its methods: method, query_string, header, query, body); params are the
-- path parameters doc:route gave.
-- @usage local check = oarequest.compile(op, doc); local v, status = check(req, params)
function oarequest.compile(op, doc)
  if type(op) ~= "table" or type(doc) ~= "table" then
    error("moonport.openapi.request.compile: op and doc must be tables", 2)
  end
  -- Compiled schemas are shared by the document's operations (a
  -- component used by many is compiled once), properties checked in the
  -- document's order as AJV checks them.
  doc.request_memo = doc.request_memo or {}
  local opts = {
    dialect = doc.version == "3.1" and "oas3.1" or "oas3.0",
    formats = true, direction = "request", order = oadoc.keys, memo = doc.request_memo,
  }
  local security = compile_security(op, doc)
  local body = compile_body(op, opts)
  local checks = {}
  for _, where in ipairs({ "header", "query", "path" }) do
    local c = compile_params(op, where, opts)
    if c then checks[#checks + 1] = c end
  end

  return function(req, params)
    local sec = security and security(req)
    local body_v, body_status = body(req)
    if body_status == 400 then return body_v, 400 end
    local all
    if sec then all = { sec } end
    if body_v then
      all = all or {}
      for _, v in ipairs(body_v) do all[#all + 1] = v end
    end
    for i = 1, #checks do
      local v = checks[i](req, params)
      if v then
        all = all or {}
        for _, x in ipairs(v) do all[#all + 1] = x end
      end
    end
    if not all then return nil end
    local errors = false
    for _, v in ipairs(all) do
      if v.severity == "Error" then errors = true; break end
    end
    if not errors then return nil end
    if sec then return all, 401 end
    if body_status == 415 then return all, 415 end
    return all, 422
  end
end

return oarequest
