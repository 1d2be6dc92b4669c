--- A Handlebars subset for WireMock-style response templates.
--
--     local template = require("moonport.mock.template")
--     local body = template.render('{"id": {{request.path.id}}}', ctx, { json = true })
--
-- Expressions: `request.url`, `request.path`, `request.path.<param>`,
-- `request.path.[n]`, `request.pathSegments.[n]`, `request.query.<name>`
-- (`.[n]` for the nth repeat), `request.headers.<name>` (case-insensitive;
-- `request.headers.[Content-Type]` too), `request.method`, `request.body`,
-- `request.baseUrl`, and the helpers `jsonPath`, `now`, `randomValue`,
-- `upper`, `lower`, `capitalize`, `trim`, `size`, `base64` (`decode=true`,
-- `padding=false`) and `urlEncode` (`decode=true`).
-- Indexes are 0-based. A request field that is not there renders as the
-- empty string. What this subset does not implement does not compile, so
-- that it is refused when a stub is loaded rather than served wrong: block
-- helpers and their tags (`{{#if}}`, `{{else}}`, `{{/if}}`), inverted
-- sections, partials, any helper other than those above, and values
-- other than `request.*` (`{{parameters.x}}`). `{{! comment }}` and
-- `{{!-- comment --}}` render nothing; `~` beside a tag is taken off and
-- trims nothing, as WireMock's Handlebars does; `{{&x}}` is `{{x}}`.
--
-- No HTML escaping is ever applied: `{{x}}` and `{{{x}}}` render alike, as
-- WireMock does for JSON bodies. A literal `\{{` is not supported; every
-- `{{` opens an expression.
--
-- With `opts.json`, a value inserted inside a JSON string literal of the
-- template (`"name": "{{...}}"`) is escaped as JSON string content, so the
-- output stays valid JSON whatever the request holds. A value outside a
-- string literal (`"id": {{...}}`) is inserted as it is: a number stays a
-- number, and a missing value leaves nothing there.
-- @module moonport.mock.template

local json = require("moonport.json")
local jsonpath = require("moonport.mock.jsonpath")

local type, tostring, tonumber, pairs, next, pcall, error =
  type, tostring, tonumber, pairs, next, pcall, error
local setmetatable, getmetatable = setmetatable, getmetatable
local sub, find, match, gsub, format, lower, upper, char =
  string.sub, string.find, string.match, string.gsub, string.format,
  string.lower, string.upper, string.char
local concat = table.concat
local floor = math.floor
local random = math.random
local os_time = os.time

local null = json.null
local encode, decode = json.encode, json.decode

local template = {}

local Compiled = {}
Compiled.__index = Compiled

-- Compiled templates by source text, emptied whole when full.
local CACHE_MAX = 256
local cache, cache_n = {}, 0

------------------------------------------------------------------------
-- Values to text.
------------------------------------------------------------------------

-- Integers without a fraction (42, not 42.0); other numbers with the
-- fewest digits that read back as the same number.
local function number_text(n)
  if n == floor(n) and n > -1e15 and n < 1e15 then return format("%d", n) end
  if n ~= n or n == 1 / 0 or n == -1 / 0 then return tostring(n) end
  local s = format("%.14g", n)
  if tonumber(s) ~= n then s = format("%.17g", n) end
  return s
end

-- nil renders as nothing, null as "null", tables as JSON.
local function text_of(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then return number_text(v) end
  if t == "boolean" then return v and "true" or "false" end
  if v == null then return "null" end
  if t == "table" then
    local ok, s = pcall(encode, v)
    if ok then return s end
  end
  return ""
end

local JSON_ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b",
                       ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r",
                       ["\t"] = "\\t" }
for b = 0, 31 do
  local c = char(b)
  if not JSON_ESCAPES[c] then JSON_ESCAPES[c] = format("\\u%04x", b) end
end
JSON_ESCAPES["\127"] = "\\u007f"

local function json_escape(s)
  return (gsub(s, '[%c"\\]', JSON_ESCAPES))
end

------------------------------------------------------------------------
-- Expressions. An expression is a list of tokens: paths such as
-- request.headers.[Content-Type] (a list of segments), quoted strings,
-- numbers, booleans, and key=value hash arguments.
------------------------------------------------------------------------

-- Reads a path of dot-separated segments; [...] holds a segment literally.
-- Returns the segments and the position after the path.
local function read_path(s, i)
  local segs, n, cur = {}, 0, {}
  local len = #s
  while i <= len do
    local c = sub(s, i, i)
    if match(c, "%s") then break end
    if c == "[" then
      local j = find(s, "]", i + 1, true)
      if not j then return nil, "unclosed '[' at position " .. i end
      cur[#cur + 1] = sub(s, i + 1, j - 1)
      i = j + 1
    elseif c == "." then
      n = n + 1
      segs[n] = concat(cur)
      cur = {}
      i = i + 1
    else
      cur[#cur + 1] = c
      i = i + 1
    end
  end
  n = n + 1
  segs[n] = concat(cur)
  -- "request.path.[0]" leaves no empty segment; "a..b" would, and is
  -- read as unknown.
  return segs, i
end

local function read_string(s, i)
  local quote, start = sub(s, i, i), i
  local buf = {}
  i = i + 1
  while true do
    local j = find(s, "[\\" .. quote .. "]", i)
    if not j then return nil, "unterminated string at position " .. start end
    buf[#buf + 1] = sub(s, i, j - 1)
    if sub(s, j, j) == quote then return concat(buf), j + 1 end
    buf[#buf + 1] = sub(s, j + 1, j + 1)
    i = j + 2
  end
end

-- One argument: a quoted string, a number, a boolean or a path.
local function read_value(s, i)
  local c = sub(s, i, i)
  if c == "'" or c == '"' then
    local str, j = read_string(s, i)
    if not str then return nil, j end
    return { kind = "lit", value = str }, j
  end
  local word = match(s, "^[^%s%[]+", i)
  if word and not find(word, ".", 1, true) then
    local num = tonumber(word)
    if num then return { kind = "lit", value = num }, i + #word end
    if word == "true" or word == "false" then
      return { kind = "lit", value = word == "true" }, i + #word
    end
  end
  local segs, j = read_path(s, i)
  if not segs then return nil, j end
  return { kind = "path", segs = segs }, j
end

local function tokenize(s)
  local tokens, hash = {}, {}
  local i = find(s, "%S")
  while i do
    local key = match(s, "^([%w_]+)=", i)
    if key then
      local v, j = read_value(s, i + #key + 1)
      if not v then return nil, j end
      hash[key] = v
      i = j
    else
      local v, j = read_value(s, i)
      if not v then return nil, j end
      tokens[#tokens + 1] = v
      i = j
    end
    i = find(s, "%S", i)
  end
  return tokens, hash
end

local HELPERS = { jsonPath = true, now = true, randomValue = true, upper = true, lower = true,
                  capitalize = true, trim = true, size = true, base64 = true, urlEncode = true,
                  xPath = true, soapXPath = true }

local SUPPORTED = "request.*, jsonPath, now, randomValue, upper, lower, capitalize, trim, "
  .. "size, base64, urlEncode, xPath and soapXPath"

-- Turns the text between the braces into a node, or returns nil, err.
local function parse_expr(body)
  local lead = match(body, "^%s*(%S)")
  if lead == "#" or lead == "/" or lead == "^" or lead == ">" then
    return nil, "block helpers, sections and partials are not supported (only "
      .. SUPPORTED .. ")"
  end
  if lead == "&" then body = gsub(body, "^%s*&", "", 1) end
  local tokens, hash = tokenize(body)
  if not tokens then return nil, hash end
  local first = tokens[1]
  if not first or first.kind ~= "path" then return { k = "none" } end
  local name = #first.segs == 1 and first.segs[1]
  if name and HELPERS[name] then
    local node = { k = name, args = { tokens[2], tokens[3] }, hash = hash }
    if name == "jsonPath" then
      local path = tokens[3]
      if not path or path.kind ~= "lit" or type(path.value) ~= "string" then
        return nil, "jsonPath needs a value and a quoted path"
      end
      local compiled, err = jsonpath.compile(path.value)
      if not compiled then return nil, err end
      node.path = compiled
    end
    return node
  end
  if first.segs[1] ~= "request" then
    return nil, "'" .. concat(first.segs, ".") .. "' is not a helper or value this "
      .. "server knows (only " .. SUPPORTED .. ")"
  end
  if #tokens > 1 or next(hash) then
    return nil, "'" .. concat(first.segs, ".") .. "' takes no arguments"
  end
  return { k = "path", segs = first.segs }
end

------------------------------------------------------------------------
-- Request lookups.
------------------------------------------------------------------------

-- "3" -> 4, the Lua index of a 0-based index segment; nil otherwise.
local function index_of(seg)
  if seg and match(seg, "^%d+$") then return tonumber(seg) + 1 end
end

-- A query or header value: a string, or a list for repeats. Without an
-- index, the first value.
local function pick(v, seg)
  if type(v) == "table" then
    if seg == nil then return v[1] end
    local k = index_of(seg)
    return k and v[k]
  end
  if seg == nil or index_of(seg) == 1 then return v end
end

local function header(headers, name)
  if type(headers) ~= "table" then return nil end
  local lname = lower(name)
  local v = headers[lname]
  if v ~= nil then return v end
  for k, hv in pairs(headers) do
    if type(k) == "string" and lower(k) == lname then return hv end
  end
end

local function lookup(ctx, segs)
  local req = ctx.request
  if segs[1] ~= "request" or type(req) ~= "table" then return nil end
  local field, n = segs[2], #segs
  if n == 2 then
    if field == "url" or field == "path" or field == "method" or field == "body" then
      return req[field]
    elseif field == "baseUrl" then
      return req.base_url
    elseif field == "pathSegments" then
      return req.path_segments
    end
    return nil
  end
  if field == "path" and n == 3 then
    local params = req.path_params
    local v = type(params) == "table" and params[segs[3]]
    if v then return v end
    local k = index_of(segs[3])
    return k and type(req.path_segments) == "table" and req.path_segments[k] or nil
  elseif field == "pathSegments" and n == 3 then
    local k = index_of(segs[3])
    return k and type(req.path_segments) == "table" and req.path_segments[k] or nil
  elseif field == "query" and n <= 4 then
    local q = req.query
    return type(q) == "table" and pick(q[segs[3]], segs[4]) or nil
  elseif field == "headers" and n <= 4 then
    return pick(header(req.headers, segs[3]), segs[4])
  end
  return nil
end

local function arg_value(tok, ctx)
  if not tok then return nil end
  if tok.kind == "lit" then return tok.value end
  return lookup(ctx, tok.segs)
end

------------------------------------------------------------------------
-- Helpers.
------------------------------------------------------------------------

-- Days since 1970-01-01 of a proleptic Gregorian date, and back (Howard
-- Hinnant's algorithms); they keep dates in UTC without os.time, which
-- reads a date table as local time.
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local UNIT_SECONDS = { second = 1, seconds = 1, minute = 60, minutes = 60,
                       hour = 3600, hours = 3600, day = 86400, days = 86400,
                       week = 604800, weeks = 604800 }

-- Applies offset ('3 days', '-1 months') to t, seconds since the epoch.
-- An offset it cannot read leaves t as it is.
local function add_offset(t, offset)
  local amount, unit = match(offset, "^%s*([%+%-]?%d+)%s+(%a+)%s*$")
  if not amount then return t end
  amount, unit = tonumber(amount), lower(unit)
  if UNIT_SECONDS[unit] then return t + amount * UNIT_SECONDS[unit] end
  local months = (unit == "month" or unit == "months") and amount
    or (unit == "year" or unit == "years") and amount * 12
  if not months then return t end
  local days, secs = floor(t / 86400), t % 86400
  local y, m, d = civil_from_days(days)
  local total = y * 12 + (m - 1) + months
  y, m = floor(total / 12), total % 12 + 1
  local last = days_from_civil(m == 12 and y + 1 or y, m == 12 and 1 or m + 1, 1)
    - days_from_civil(y, m, 1)
  if d > last then d = last end
  return days_from_civil(y, m, d) * 86400 + secs
end

-- Formats t (seconds since the epoch, UTC) with Java's date letters:
-- yyyy, yy, MM, M, dd, d, HH, H, mm, m, ss, s, SSS; 'quoted' text is
-- literal, '' a quote. Other letters are copied.
local function format_date(t, fmt)
  local days = floor(t / 86400)
  local secs = t - days * 86400
  local y, mo, d = civil_from_days(days)
  local fields = {
    y = y, M = mo, d = d, H = floor(secs / 3600), m = floor(secs % 3600 / 60),
    s = floor(secs % 60), S = floor((secs % 1) * 1000),
  }
  local out, i, len = {}, 1, #fmt
  while i <= len do
    local c = sub(fmt, i, i)
    if c == "'" then
      if sub(fmt, i + 1, i + 1) == "'" then
        out[#out + 1] = "'"
        i = i + 2
      else
        local j = find(fmt, "'", i + 1, true) or len + 1
        out[#out + 1] = sub(fmt, i + 1, j - 1)
        i = j + 1
      end
    elseif fields[c] then
      local j = i
      while sub(fmt, j + 1, j + 1) == c do j = j + 1 end
      local width, v = j - i + 1, fields[c]
      if c == "y" and width == 2 then v = v % 100 end
      out[#out + 1] = format("%0" .. width .. "d", v)
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return concat(out)
end

local function helper_now(node, ctx, opts)
  local t = opts and opts.now or os_time()
  local hash = node.hash
  local offset = arg_value(hash.offset, ctx)
  if type(offset) == "string" then t = add_offset(t, offset) end
  local fmt = arg_value(hash.format, ctx)
  if fmt == "epoch" then return format("%d", floor(t * 1000)) end
  if fmt == "unix" then return format("%d", floor(t)) end
  if type(fmt) ~= "string" then fmt = "yyyy-MM-dd'T'HH:mm:ss'Z'" end
  return format_date(t, fmt)
end

-- Seeded on first use rather than at load: a module loaded before the
-- server forks would otherwise give every worker the same sequence.
local ALPHABETS = {
  ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
  ALPHABETIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
  NUMERIC = "0123456789",
  HEXADECIMAL = "0123456789abcdef",
}
do
  local symbols = {}
  for b = 33, 126 do symbols[#symbols + 1] = char(b) end
  ALPHABETS.ALPHANUMERIC_AND_SYMBOLS = concat(symbols)
end

local HEX = ALPHABETS.HEXADECIMAL

local function random_from(alphabet, length)
  local out, n = {}, #alphabet
  for k = 1, length do
    local r = random(n)
    out[k] = sub(alphabet, r, r)
  end
  return concat(out)
end

-- A version 4 UUID: random but for the version nibble and the variant.
local function uuid()
  local s = random_from(HEX, 32)
  local variant = random(9, 12)
  return sub(s, 1, 8) .. "-" .. sub(s, 9, 12) .. "-4" .. sub(s, 14, 16) .. "-"
    .. sub(HEX, variant, variant) .. sub(s, 18, 20) .. "-" .. sub(s, 21, 32)
end

local function helper_random(node, ctx)
  local hash = node.hash
  local kind = arg_value(hash.type, ctx) or "ALPHANUMERIC"
  local s
  if kind == "UUID" then
    s = uuid()
  else
    local alphabet = ALPHABETS[kind]
    local length = tonumber(arg_value(hash.length, ctx))
    if not alphabet or not length or length < 0 then return "" end
    s = random_from(alphabet, floor(length))
  end
  if arg_value(hash.uppercase, ctx) == true then s = upper(s) end
  return s
end

-- Bodies decoded during one render, so that several jsonPath tags on the
-- same body decode it once.
local function helper_jsonpath(node, ctx, state)
  local source = arg_value(node.args[1], ctx)
  local default = arg_value(node.hash.default, ctx)
  local results
  if type(source) == "string" then
    local decoded = state[source]
    if decoded == nil then
      local v = decode(source)
      decoded = v ~= nil and { v } or false
      state[source] = decoded
    end
    if decoded then results = jsonpath.query(decoded[1], node.path) end
  elseif type(source) == "table" then
    results = jsonpath.query(source, node.path)
  end
  if not results or #results == 0 then
    return default ~= nil and text_of(default) or ""
  end
  if #results == 1 then return text_of(results[1]) end
  return text_of(results)
end

-- Java's URLEncoder: letters, digits and ".-*_" as they are, space as
-- "+", every other byte as %XX; and back.
local function url_encode(s)
  return (gsub(s, "[^%w%.%-%*_ ]", function(c) return format("%%%02X", c:byte()) end):gsub(" ", "+"))
end
local function url_decode(s)
  return (gsub(gsub(s, "+", " "), "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

-- The string helpers WireMock's Handlebars has: the first argument's
-- text changed.
local STRING_HELPERS = {
  upper = upper,
  lower = lower,
  trim = function(s) return (match(s, "^%s*(.-)%s*$")) end,
  capitalize = function(s) return (gsub(s, "(%w)(%w*)", function(a, b) return upper(a) .. b end)) end,
}

local function helper_value(node, ctx)
  local k = node.k
  local v = arg_value(node.args[1], ctx)
  if k == "size" then
    -- A query parameter counts its values, as WireMock's lists do.
    local tok = node.args[1]
    if tok and tok.kind == "path" and #tok.segs == 3 and tok.segs[2] == "query" then
      local q = ctx.request and ctx.request.query
      local values = type(q) == "table" and q[tok.segs[3]]
      if values == nil then return "0" end
      return tostring(type(values) == "table" and #values or 1)
    end
    if type(v) == "table" then
      local n = 0
      for _ in pairs(v) do n = n + 1 end
      return tostring(n)
    end
    return v == nil and "" or tostring(#text_of(v))
  end
  local s = v == nil and "" or text_of(v)
  local decode = arg_value(node.hash.decode, ctx)
  decode = decode == true or decode == "true"
  if k == "base64" then
    if decode then return require("moonport.mock.model").base64_decode(s) or "" end
    local out = require("moonport.mock.model").base64_encode(s)
    local padding = arg_value(node.hash.padding, ctx)
    if padding == false or padding == "false" then out = gsub(out, "=+$", "") end
    return out
  end
  if k == "urlEncode" then return decode and url_decode(s) or url_encode(s) end
  if k == "xPath" or k == "soapXPath" then
    local expr = text_of(arg_value(node.args[2], ctx))
    -- soapXPath: the path within a SOAP envelope's body, whatever its
    -- prefix and namespace.
    if k == "soapXPath" then expr = "/*[local-name()='Envelope']/*[local-name()='Body']" .. expr end
    return require("moonport.mock.xmlmatch").template_xpath(s, expr)
  end
  return STRING_HELPERS[k](s)
end

local function eval(node, ctx, opts, state)
  local k = node.k
  if k == "path" then return text_of(lookup(ctx, node.segs)) end
  if k == "jsonPath" then return helper_jsonpath(node, ctx, state) end
  if k == "now" then return helper_now(node, ctx, opts) end
  if k == "randomValue" then return helper_random(node, ctx) end
  if HELPERS[k] then return helper_value(node, ctx) end
  return ""
end

------------------------------------------------------------------------
-- Compiling.
------------------------------------------------------------------------

-- Whether a JSON string literal is still open after text, given whether
-- one was open before it.
local function string_state(text, open)
  local i = 1
  while true do
    local j = find(text, '[\\"]', i)
    if not j then return open end
    if sub(text, j, j) == '"' then
      open = not open
      i = j + 1
    elseif open then
      i = j + 2
    else
      i = j + 1
    end
  end
end

local function compile(text)
  local parts, n = {}, 0
  local in_string = false
  local i = 1

  local function literal(s)
    if s ~= "" then
      n = n + 1
      parts[n] = s
      in_string = string_state(s, in_string)
    end
  end

  while true do
    local a = find(text, "{{", i, true)
    if not a then
      literal(sub(text, i))
      break
    end
    literal(sub(text, i, a - 1))
    local body_start, close
    if sub(text, a + 2, a + 4) == "!--" then
      body_start, close = a + 5, "--}}"
    elseif sub(text, a + 2, a + 2) == "{" then
      body_start, close = a + 3, "}}}"
    else
      body_start, close = a + 2, "}}"
    end
    local b = find(text, close, body_start, true)
    if not b then
      return nil, format("unclosed '%s' at position %d", sub(text, a, body_start - 1), a)
    end
    local body = sub(text, body_start, b - 1)
    i = b + #close
    -- WireMock's Handlebars takes `~` off a tag but trims nothing.
    if sub(body, 1, 1) == "~" then body = sub(body, 2) end
    if sub(body, -1) == "~" then body = sub(body, 1, -2) end
    if close ~= "--}}" and sub(body, 1, 1) ~= "!" then
      local node, err = parse_expr(body)
      if not node then
        return nil, format("bad expression '{{%s}}' at position %d: %s", body, a, err)
      end
      if node.k ~= "none" then
        node.in_string = in_string
        n = n + 1
        parts[n] = node
      end
    end
  end
  return setmetatable({ parts = parts, n = n }, Compiled)
end

------------------------------------------------------------------------
-- Public API.
------------------------------------------------------------------------

--- Compiles a template; compiled templates are cached by their text.
-- @tparam string text the template
-- @return a compiled template, or `nil, err` when a `{{` is never closed,
-- an expression cannot be read (a quote left open, a bad JSONPath) or
-- uses what this subset does not implement (a block helper, an unknown
-- helper)
-- @usage local t = assert(template.compile('{"path": "{{request.path}}"}'))
function template.compile(text)
  if type(text) ~= "string" then error("template must be a string", 2) end
  local hit = cache[text]
  if hit then return hit end
  local compiled, err = compile(text)
  if not compiled then return nil, err end
  if cache_n >= CACHE_MAX then cache, cache_n = {}, 0 end
  cache[text] = compiled
  cache_n = cache_n + 1
  return compiled
end

--- Renders a template against a request.
-- @param tpl a template string (compiled and cached) or a compiled template
-- @tparam table ctx `{ request = { url, path, path_segments, path_params,
-- query, headers, body, method, base_url } }`; header names lowercase,
-- repeated query parameters as lists
-- @tparam[opt] table opts `json = true` to escape values placed inside
-- JSON string literals; `now` (seconds since the epoch) to fix the clock
-- @treturn string the output; when tpl is a string that does not compile,
-- tpl itself, unrendered, and the compile error as a second value (a
-- caller that wants to refuse such a template calls compile first)
-- @usage res:send(template.render(mapping.body, { request = r }, { json = true }))
function template.render(tpl, ctx, opts)
  local compiled = tpl
  if type(tpl) == "string" then
    local err
    compiled, err = template.compile(tpl)
    if not compiled then return tpl, err end
  elseif getmetatable(tpl) ~= Compiled then
    error("template must be a string or a compiled template", 2)
  end
  if ctx == nil then ctx = {} end
  if type(ctx) ~= "table" then error("ctx must be a table", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("opts must be a table", 2) end
  local json = opts and opts.json
  local parts, out, state = compiled.parts, {}, {}
  for k = 1, compiled.n do
    local part = parts[k]
    if type(part) == "string" then
      out[k] = part
    else
      local v = eval(part, ctx, opts, state)
      if json and part.in_string then v = json_escape(v) end
      out[k] = v
    end
  end
  return concat(out)
end

return template
