--- WireMock's response templates: the Handlebars of its
-- `response-template` transformer, as WireMock 3.13 has it.
--
--     local template = require("moonport.mock.template")
--     local body = template.render('{"id": {{request.path.id}}}', ctx, { json = true })
--
-- Values: the request model (`request.url`, `request.path`,
-- `request.path.<param>`, `request.path.[n]`, `request.pathSegments.[n]`,
-- `request.query.<name>` (`.[n]` for the nth repeat),
-- `request.headers.<name>` (case-insensitive; `request.headers.[Content-Type]`
-- too), `request.cookies.<name>`, `request.method`, `request.body`,
-- `request.baseUrl`, `request.clientIp`), `parameters.<name>` (the
-- response's `transformerParameters`), `this`, `../x`, `@index`, `@key`,
-- `@first`, `@last`, and the variables that `assign`, `formData`,
-- `regexExtract` and `val assign=` set. Indexes are 0-based. A value that
-- is not there renders as the empty string.
--
-- Blocks: `{{#if}}`, `{{#unless}}` (with `{{else}}` and `{{else if ...}}`
-- chains), `{{#each}}` (lists and objects; `{{else}}` when empty),
-- `{{#with}}`, `{{#eq a b}}`, `{{#neq}}`, `{{#gt}}`, `{{#gte}}`, `{{#lt}}`,
-- `{{#lte}}`, `{{#and}}`, `{{#or}}`, `{{#not}}`, `{{#contains}}` and
-- `{{#assign 'name'}}`. Sub-expressions `(helper args)` nest anywhere an
-- argument goes; `key=value` hash arguments follow the others.
--
-- Helpers: `eq`, `neq`, `gt`, `gte`, `lt`, `lte`, `and`, `or`, `not`,
-- `contains`, `matches`, `math`, `val`, `size`, `array`, `range`, `join`,
-- `substring`, `replace`, `abbreviate`, `defaultIfEmpty`, `toJson`,
-- `formatJson`, `jsonMerge`, `jsonPath`, `xPath`, `soapXPath`, `pickRandom`, `regexExtract`,
-- `formData`, `now`, `date`, `dateFormat`, `parseDate`, `randomValue`,
-- `randomInt`, `randomDecimal`, `upper`, `lower`, `capitalize`,
-- `capitalizeFirst`, `trim`, `base64` and `urlEncode`. What this module
-- does not implement does not compile, so that it is refused when a stub
-- is loaded rather than served wrong: other helpers and blocks, inverted
-- sections (`{{^x}}`), partials, a value at the top level that is neither
-- the request, a parameter nor a variable set earlier, a named time zone
-- for `now` (UTC and fixed offsets only: there is no zone database).
-- `{{! comment }}` and `{{!-- comment --}}` render nothing; `~` beside a
-- tag is taken off and trims nothing, as WireMock's Handlebars does;
-- `{{&x}}` is `{{x}}`. A helper that WireMock
-- answers with an error in the text (`{{math 1 '^' 2}}`, `{{range}}`)
-- renders the same `[ERROR: ...]` text.
--
-- No HTML escaping is ever applied: `{{x}}` and `{{{x}}}` render alike, as
-- WireMock 3.13 does for every body, file and header. A literal `\{{` is
-- not supported; every `{{` opens an expression.
--
-- With `opts.json`, a value inserted inside a JSON string literal of the
-- template (`"name": "{{...}}"`) is escaped as JSON string content, so the
-- output stays valid JSON whatever the request holds. A value outside a
-- string literal (`"id": {{...}}`) is inserted as it is: a number stays a
-- number, and a missing value leaves nothing there.
--
-- A template is compiled once (and cached by its text); rendering one made
-- of text and plain request values builds nothing but the output.
-- @module moonport.mock.template

local json = require("moonport.json")
local jsonpath = require("moonport.mock.jsonpath")
local dates = require("moonport.mock.dates")
local string_buffer = require("string.buffer")

local type, tostring, tonumber, pairs, ipairs, next, pcall, error, select =
  type, tostring, tonumber, pairs, ipairs, next, pcall, error, select
local setmetatable, getmetatable, rawequal = setmetatable, getmetatable, rawequal
local sub, find, match, gsub, gmatch, format, lower, upper, char, rep, byte =
  string.sub, string.find, string.match, string.gsub, string.gmatch, string.format,
  string.lower, string.upper, string.char, string.rep, string.byte
local concat, sort = table.concat, table.sort
local floor, abs = math.floor, math.abs
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

-- How values of the marked kinds (below) render, by metatable.
local TEXT = {}

-- nil renders as nothing, null as "null", marked tables as their kind
-- says, other tables as JSON.
local function text_of(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then return number_text(v) end
  if t == "boolean" then return v and "true" or "false" end
  if v == null then return "null" end
  if t == "table" then
    local f = TEXT[getmetatable(v)]
    if f then return f(v) end
    local ok, s = pcall(encode, v)
    if ok then return s end
  end
  if t == "userdata" then return tostring(v) end
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

------------------------------------------------------------------------
-- Expressions. The text of a tag is a list of arguments: paths such as
-- request.headers.[Content-Type], ../name, this or @index; quoted
-- strings, numbers, booleans, null; sub-expressions (helper args); and
-- key=value hash arguments after them.
------------------------------------------------------------------------

-- Reads a path of dot- or slash-separated segments; [...] holds a segment
-- literally. Returns the path node and the position after it.
local function read_path(s, i)
  local segs, n, cur = {}, 0, {}
  local len = #s
  local up, data = 0, false
  if sub(s, i, i) == "@" then
    data = true
    i = i + 1
  end
  while sub(s, i, i + 2) == "../" do
    up = up + 1
    i = i + 3
  end
  while i <= len do
    local c = sub(s, i, i)
    if match(c, "[%s%)]") then break end
    if c == "[" then
      local j = find(s, "]", i + 1, true)
      if not j then return nil, "unclosed '[' at position " .. i end
      cur[#cur + 1] = sub(s, i + 1, j - 1)
      i = j + 1
    elseif c == "." or (c == "/" and #cur > 0) then
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
  local node = { t = "path", segs = segs, up = up }
  if data then
    node.data = segs[1]
    table.remove(segs, 1)
  elseif segs[1] == "this" or (segs[1] == "" and up > 0) then
    node.this = true
    table.remove(segs, 1)
  end
  return node, i
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
    -- \' is a quote; any other backslash stays (a regex's \d).
    local nxt = sub(s, j + 1, j + 1)
    buf[#buf + 1] = nxt == quote and nxt or "\\" .. nxt
    i = j + 2
  end
end

local LITERALS = { ["true"] = true, ["false"] = false, null = null, undefined = null }

local read_args

-- One argument: a quoted string, a number, a literal, a sub-expression or
-- a path.
local function read_value(s, i)
  local c = sub(s, i, i)
  if c == "'" or c == '"' then
    local str, j = read_string(s, i)
    if not str then return nil, j end
    return { t = "lit", value = str }, j
  end
  if c == "(" then
    local args, hash, j = read_args(s, i + 1, true)
    if not args then return nil, hash end
    local head = args[1]
    if not head or head.t ~= "path" or #head.segs ~= 1 or head.up > 0 or head.data or head.this then
      return nil, "a sub-expression at position " .. i .. " does not start with a helper's name"
    end
    table.remove(args, 1)
    return { t = "call", name = head.segs[1], params = args, hash = hash, pos = i }, j
  end
  local word = match(s, "^[^%s%)]+", i)
  if word then
    local num = match(word, "^%-?%d+%.?%d*$") and tonumber(word)
    if num then return { t = "lit", value = num, raw = word }, i + #word end
    if LITERALS[word] ~= nil then return { t = "lit", value = LITERALS[word] }, i + #word end
  end
  return read_path(s, i)
end

-- Reads arguments up to the end of s, or, for a sub-expression, up to its
-- ")". Returns the arguments, the hash and the position after.
function read_args(s, i, nested)
  local args, hash = {}, {}
  local len = #s
  while true do
    i = find(s, "%S", i)
    if not i then
      if nested then return nil, "a '(' is never closed" end
      return args, hash, len + 1
    end
    if sub(s, i, i) == ")" then
      if not nested then return nil, "a ')' at position " .. i .. " closes nothing" end
      return args, hash, i + 1
    end
    local key = match(s, "^([%w_%-]+)=", i)
    if key then
      local v, j = read_value(s, i + #key + 1)
      if not v then return nil, j end
      hash[key] = v
      i = j
    else
      if next(hash) then return nil, "an argument after key=value ones at position " .. i end
      local v, j = read_value(s, i)
      if not v then return nil, j end
      args[#args + 1] = v
      i = j
    end
  end
end

------------------------------------------------------------------------
-- Values. Lua values stand for Java's; a few tables carry a metatable so
-- that they render, compare and iterate as WireMock's objects do.
------------------------------------------------------------------------

-- A query parameter's, header's, cookie's or form field's values
-- (WireMock's ListOrSingle): renders its first value; .[n] the nth.
local MULTI = { name = "values" }
-- A Java list (array, range, split groups): renders as [a, b].
local JLIST = { name = "list" }
-- A date: { t = seconds since the epoch, off = seconds east of UTC }.
local DATE = { name = "date" }
-- The request model and its parts; { r = ctx.request }.
local REQ, RPATH, RSEGS, RQUERY, RHEADERS, RCOOKIES =
  { name = "request" }, { name = "path" }, { name = "pathSegments" },
  { name = "query" }, { name = "headers" }, { name = "cookies" }
-- formData's fields: { fields = name -> MULTI, keys = names in order }.
local FORM = { name = "form" }

local function multi(v)
  if type(v) == "table" then
    local m = { n = #v }
    for i = 1, #v do m[i] = v[i] end
    return setmetatable(m, MULTI)
  end
  return setmetatable({ v, n = 1 }, MULTI)
end

local function jlist(t)
  return setmetatable(t, JLIST)
end

-- The cookies of a Cookie header, name -> list of values.
local function parse_cookies(h)
  local out = {}
  local lines = type(h) == "table" and h or { h }
  for _, line in ipairs(lines) do
    for pair in gmatch(tostring(line), "[^;]+") do
      local k, v = match(pair, "^%s*([^=]-)%s*=%s*(.-)%s*$")
      if k and k ~= "" then
        local list = out[k]
        if not list then
          list = {}
          out[k] = list
        end
        list[#list + 1] = v
      end
    end
  end
  return out
end

-- Named fields of a value: a request part, a list by 0-based index, an
-- object by key. Literal numbers of a mapping's JSON become numbers.
local GET = {}

local function seg_index(list, key)
  local k = index_of(key)
  return k and list[k] or nil
end

GET[MULTI] = seg_index
GET[JLIST] = seg_index
GET[REQ] = function(w, key)
  local r = w.r
  if key == "url" or key == "method" or key == "body" then return r[key] end
  if key == "baseUrl" then return r.base_url end
  if key == "clientIp" then
    if r.client_ip == nil and r.req then return r.req.remote_addr end
    return r.client_ip
  end
  local mt = key == "path" and RPATH or key == "pathSegments" and RSEGS
    or key == "query" and RQUERY or key == "headers" and RHEADERS
    or key == "cookies" and RCOOKIES
  return mt and setmetatable({ r = r }, mt) or nil
end
GET[RPATH] = function(w, key)
  local params = w.r.path_params
  local v = type(params) == "table" and params[key]
  if v then return v end
  local segs = w.r.path_segments
  return type(segs) == "table" and seg_index(segs, key) or nil
end
GET[RSEGS] = function(w, key)
  local segs = w.r.path_segments
  return type(segs) == "table" and seg_index(segs, key) or nil
end
GET[RQUERY] = function(w, key)
  local q = w.r.query
  local v = type(q) == "table" and q[key]
  if v == nil or v == false then return nil end
  return multi(v)
end
GET[RHEADERS] = function(w, key)
  local v = header(w.r.headers, key)
  if v == nil then return nil end
  return multi(v)
end
GET[RCOOKIES] = function(w, key)
  local c = w.c
  if not c then
    c = parse_cookies(header(w.r.headers, "cookie") or {})
    w.c = c
  end
  local v = c[key]
  return v and multi(v) or nil
end
GET[FORM] = function(w, key) return w.fields[key] end

local function plain(v)
  if type(v) == "userdata" and v ~= null then
    local s = tostring(v)
    return tonumber(s) or s
  end
  return v
end

local function get(v, key)
  if type(v) ~= "table" or v == null then return nil end
  local f = GET[getmetatable(v)]
  if f then return f(v, key) end
  local x = v[key]
  if x == nil then
    local k = index_of(key)
    if k then x = v[k] end
  end
  return plain(x)
end

-- The items of a value for {{#each}}: values, and keys (nil for a list);
-- nil when it cannot be iterated.
local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    if type(k) == "string" then keys[#keys + 1] = k end
  end
  sort(keys)
  return keys
end

local function items(v)
  if type(v) ~= "table" or v == null then return nil end
  local mt = getmetatable(v)
  if mt == MULTI or mt == JLIST then return v end
  if mt == RSEGS then return type(v.r.path_segments) == "table" and v.r.path_segments or {} end
  if mt == RQUERY or mt == RHEADERS or mt == RCOOKIES then
    local src = mt == RQUERY and v.r.query or mt == RHEADERS and v.r.headers or nil
    local keys
    if mt == RCOOKIES then
      get(v, "")
      src = v.c
    end
    keys = sorted_keys(type(src) == "table" and src or {})
    local vals = {}
    for i, k in ipairs(keys) do vals[i] = multi(src[k]) end
    return vals, keys
  end
  if mt == FORM then
    local vals = {}
    for i, k in ipairs(v.keys) do vals[i] = v.fields[k] end
    return vals, v.keys
  end
  if GET[mt] then return nil end
  if v[1] ~= nil or next(v) == nil then
    local vals = {}
    for i = 1, #v do vals[i] = plain(v[i]) end
    return vals
  end
  local keys = sorted_keys(v)
  local vals = {}
  for i, k in ipairs(keys) do vals[i] = plain(v[k]) end
  return vals, keys
end

-- Handlebars' emptiness: nil, false, "", 0, null and empty lists are
-- false; everything else is true.
local function truthy(v)
  if v == nil or v == false or v == "" or v == 0 or v == null then return false end
  if type(v) == "table" then
    local mt = getmetatable(v)
    if mt == MULTI or mt == JLIST then return #v > 0 end
    if mt == nil then return next(v) ~= nil end
  end
  return true
end

-- Java's equals: values of different types are never equal; request
-- parts and lists only to themselves, dates by their instant.
local function equals(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "table" then
    local ma, mb = getmetatable(a), getmetatable(b)
    if ma == DATE and mb == DATE then return a.t == b.t end
    if ma == JLIST and mb == JLIST and #a == #b then
      for i = 1, #a do
        if not equals(a[i], b[i]) then return false end
      end
      return true
    end
    return rawequal(a, b)
  end
  return a == b
end

-- Java's compareTo for numbers, strings and dates; nil for other pairs.
local function compare(a, b)
  local ta, tb = type(a), type(b)
  if ta == "number" and tb == "number" then return a < b and -1 or a > b and 1 or 0 end
  if ta == "string" and tb == "string" then return a < b and -1 or a > b and 1 or 0 end
  if ta == "table" and tb == "table" and getmetatable(a) == DATE and getmetatable(b) == DATE then
    return a.t < b.t and -1 or a.t > b.t and 1 or 0
  end
  return nil
end

------------------------------------------------------------------------
-- Dates.
------------------------------------------------------------------------

-- Days since 1970-01-01 of a proleptic Gregorian date, and back; they
-- keep dates in UTC without os.time, which reads a date table as local time.
local days_from_civil, civil_from_days = dates.days_from_civil, dates.civil_from_days

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

local DAYS = { "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday" }
local MONTHS = { "January", "February", "March", "April", "May", "June", "July",
                 "August", "September", "October", "November", "December" }
local MONTH_NUM = {}
for i, m in ipairs(MONTHS) do MONTH_NUM[lower(sub(m, 1, 3))] = i end

local function offset_text(off, colon, zulu)
  if off == 0 and zulu then return "Z" end
  local sign = off < 0 and "-" or "+"
  off = abs(off)
  return format(colon and "%s%02d:%02d" or "%s%02d%02d", sign, floor(off / 3600), floor(off % 3600 / 60))
end

-- Formats t (seconds since the epoch) at off seconds east of UTC with
-- Java's date letters: y, M (MMM and MMMM as names), d, E (day names), H,
-- h, a, m, s, S, z, Z, X; 'quoted' text is literal, '' a quote. Other
-- characters are copied.
local function format_date(t, fmt, off)
  off = off or 0
  local lt = t + off
  local days = floor(lt / 86400)
  local secs = lt - days * 86400
  local y, mo, d = civil_from_days(days)
  local hour = floor(secs / 3600)
  local fields = {
    y = y, M = mo, d = d, H = hour, m = floor(secs % 3600 / 60),
    s = floor(secs % 60), S = floor((secs % 1) * 1000 + 0.5),
    h = (hour % 12 == 0) and 12 or hour % 12,
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
    elseif match(c, "%a") then
      local j = i
      while sub(fmt, j + 1, j + 1) == c do j = j + 1 end
      local width = j - i + 1
      local v = fields[c]
      if c == "M" and width >= 3 then
        out[#out + 1] = width == 3 and sub(MONTHS[mo], 1, 3) or MONTHS[mo]
      elseif c == "E" then
        local dow = (days + 3) % 7 + 1
        out[#out + 1] = width <= 3 and sub(DAYS[dow], 1, 3) or DAYS[dow]
      elseif c == "a" then
        out[#out + 1] = hour < 12 and "AM" or "PM"
      elseif c == "z" then
        out[#out + 1] = off == 0 and "UTC" or offset_text(off, true)
      elseif c == "Z" then
        out[#out + 1] = offset_text(off, false)
      elseif c == "X" then
        out[#out + 1] = off == 0 and "Z" or width == 1 and sub(offset_text(off, false), 1, 3)
          or offset_text(off, width >= 3)
      elseif c == "S" then
        out[#out + 1] = sub(format("%03d", v), 1, width)
      elseif v then
        if c == "y" and width == 2 then v = v % 100 end
        out[#out + 1] = format("%0" .. width .. "d", v)
      else
        out[#out + 1] = sub(fmt, i, j)
      end
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return concat(out)
end

local function new_date(t, off)
  return setmetatable({ t = t, off = off or 0 }, DATE)
end

-- ISO 8601 as Java's Instant or OffsetDateTime print it, to the second.
local function iso(d)
  return format_date(floor(d.t), "yyyy-MM-dd'T'HH:mm:ss", d.off) .. offset_text(d.off, true, true)
end

-- A time zone WireMock's helpers take: UTC or a fixed offset; nil for
-- others (named zones need a zone database).
local function zone_offset(z)
  if type(z) ~= "string" then return nil end
  if z == "UTC" or z == "GMT" or z == "Z" or z == "Etc/UTC" or z == "UCT" then return 0 end
  local sign, h, m = match(z, "^[UTCGM]*([%+%-])(%d%d?):?(%d?%d?)$")
  if not sign then return nil end
  local off = tonumber(h) * 3600 + (tonumber(m) or 0) * 60
  return sign == "-" and -off or off
end

-- Reads text with a Java date pattern (y, M, MMM, d, H, h, a, m, s, S,
-- X/Z offsets and literal text); nil when it does not fit.
local function parse_with(text, fmt)
  local f = { y = 1970, M = 1, d = 1, H = 0, m = 0, s = 0, S = 0 }
  local off, pm = 0, nil
  local i, p, len = 1, 1, #fmt
  while i <= len do
    local c = sub(fmt, i, i)
    if c == "'" then
      local j = find(fmt, "'", i + 1, true) or len + 1
      local lit = sub(fmt, i + 1, j - 1)
      if sub(text, p, p + #lit - 1) ~= lit then return nil end
      p = p + #lit
      i = j + 1
    elseif match(c, "%a") then
      local j = i
      while sub(fmt, j + 1, j + 1) == c do j = j + 1 end
      local width = j - i + 1
      if c == "M" and width >= 3 then
        local name = match(text, "^%a+", p)
        if not name or not MONTH_NUM[lower(sub(name, 1, 3))] then return nil end
        f.M = MONTH_NUM[lower(sub(name, 1, 3))]
        p = p + #name
      elseif c == "E" then
        local name = match(text, "^%a+", p)
        if not name then return nil end
        p = p + #name
      elseif c == "a" then
        local ap = upper(sub(text, p, p + 1))
        if ap ~= "AM" and ap ~= "PM" then return nil end
        pm = ap == "PM"
        p = p + 2
      elseif c == "X" or c == "Z" or c == "x" then
        if sub(text, p, p) == "Z" then
          p = p + 1
        else
          local sign, h, m, rest = match(text, "^([%+%-])(%d%d):?(%d%d)()", p)
          if not sign then return nil end
          off = (tonumber(h) * 3600 + tonumber(m) * 60) * (sign == "-" and -1 or 1)
          p = rest
        end
      elseif f[c] ~= nil or c == "h" then
        local digits = match(text, width > 1 and ("^" .. rep("%d", width)) or "^%d+", p)
        if c == "y" and width == 4 then digits = match(text, "^%d%d%d%d+", p) end
        if not digits then return nil end
        f[c == "h" and "H" or c] = tonumber(digits)
        p = p + #digits
      else
        return nil
      end
      i = j + 1
    else
      if sub(text, p, p) ~= c then return nil end
      p = p + 1
      i = i + 1
    end
  end
  if p <= #text then return nil end
  if pm ~= nil then f.H = f.H % 12 + (pm and 12 or 0) end
  local t = days_from_civil(f.y, f.M, f.d) * 86400 + f.H * 3600 + f.m * 60 + f.s + f.S / 1000
  return new_date(t - off, off)
end

-- A date as WireMock reads one without a format: ISO 8601 with a time
-- and an offset (kept), or RFC 1123; nil otherwise.
local function parse_date(s)
  if type(s) ~= "string" then return nil end
  local y, mo, d, h, mi, se, frac, zone =
    match(s, "^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):?(%d*)(%.?%d*)(.*)$")
  if y then
    local off
    if zone == "Z" then
      off = 0
    else
      local sign, zh, zm = match(zone, "^([%+%-])(%d%d):?(%d%d)$")
      if not sign then return nil end
      off = (tonumber(zh) * 3600 + tonumber(zm) * 60) * (sign == "-" and -1 or 1)
    end
    local t = days_from_civil(tonumber(y), tonumber(mo), tonumber(d)) * 86400
      + tonumber(h) * 3600 + tonumber(mi) * 60 + (tonumber(se) or 0) + (tonumber("0" .. frac) or 0)
    return new_date(t - off, off)
  end
  return parse_with(s, "EEE, dd MMM yyyy HH:mm:ss 'GMT'")
end

------------------------------------------------------------------------
-- Random values and URL encoding.
------------------------------------------------------------------------

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

-- Java's URLEncoder: letters, digits and ".-*_" as they are, space as
-- "+", every other byte as %XX; and back.
local function url_encode(s)
  return (gsub(s, "[^%w%.%-%*_ ]", function(c) return format("%%%02X", c:byte()) end):gsub(" ", "+"))
end
local function url_decode(s)
  return (gsub(gsub(s, "+", " "), "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

------------------------------------------------------------------------
-- Rendering values.
------------------------------------------------------------------------

-- Java's Double.toString for numbers that are not integers of a math
-- result: 3.0, 0.3, 1.0E10.
local function java_double(n)
  if n ~= n then return "NaN" end
  if n == 1 / 0 then return "Infinity" end
  if n == -1 / 0 then return "-Infinity" end
  local a = abs(n)
  if a == 0 or (a >= 1e-3 and a < 1e7) then
    if n == floor(n) then return format("%d.0", n) end
    return number_text(n)
  end
  local s = format("%.16e", n)
  for digits = 1, 16 do
    local c = format("%." .. digits .. "e", n)
    if tonumber(c) == n then
      s = c
      break
    end
  end
  local mant, ex = match(s, "^(.-)e([%+%-]%d+)$")
  mant = gsub(mant, "0+$", "")
  if sub(mant, -1) == "." then mant = mant .. "0" end
  if not find(mant, ".", 1, true) then mant = mant .. ".0" end
  return mant .. "E" .. tostring(tonumber(ex))
end

TEXT[MULTI] = function(v) return v[1] == nil and "" or text_of(v[1]) end
TEXT[JLIST] = function(v)
  local parts = {}
  for i = 1, #v do parts[i] = text_of(v[i]) end
  return "[" .. concat(parts, ", ") .. "]"
end
TEXT[DATE] = iso
TEXT[RPATH] = function(w) return w.r.path or "" end
TEXT[RSEGS] = TEXT[RPATH]
local function map_text(v)
  local vals, keys = items(v)
  local parts = {}
  for i, k in ipairs(keys or {}) do parts[i] = k .. "=" .. text_of(vals[i]) end
  return "{" .. concat(parts, ", ") .. "}"
end
TEXT[RQUERY], TEXT[RHEADERS], TEXT[RCOOKIES], TEXT[FORM] = map_text, map_text, map_text, map_text
TEXT[REQ] = function() return "" end

-- A value as plain Lua data for JSON: request parts and lists as tables.
local function to_data(v)
  if type(v) == "userdata" then return plain(v) end
  if type(v) ~= "table" or v == null then return v end
  local mt = getmetatable(v)
  if mt == DATE then return iso(v) end
  if mt == MULTI then
    if #v == 1 then return to_data(v[1]) end
  end
  if mt == RPATH or mt == RSEGS then return v.r.path end
  local vals, keys = items(v)
  if not vals then return text_of(v) end
  local out = {}
  if keys then
    for i, k in ipairs(keys) do out[k] = to_data(vals[i]) end
    return out
  end
  for i = 1, #vals do out[i] = to_data(vals[i]) end
  if #vals == 0 then return json.empty_array or out end
  return out
end

-- JSON as Jackson's default pretty printer writes it: objects one field a
-- line, indented by two, "key" : value; arrays on one line, [ a, b ].
local function pretty(v, indent)
  if type(v) ~= "table" or v == null or v == json.empty_array then return encode(v) end
  if v[1] ~= nil then
    local parts = {}
    for i = 1, #v do parts[i] = pretty(v[i], indent) end
    return "[ " .. concat(parts, ", ") .. " ]"
  end
  -- WireMock's Jackson leaves out null fields.
  local keys = {}
  for _, k in ipairs(sorted_keys(v)) do
    if v[k] ~= null then keys[#keys + 1] = k end
  end
  if #keys == 0 then return "{ }" end
  local inner = indent .. "  "
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = inner .. encode(k) .. " : " .. pretty(v[k], inner) end
  return "{\n" .. concat(parts, ",\n") .. "\n" .. indent .. "}"
end

local function json_value(v)
  if type(v) == "string" then
    local ok, d = pcall(decode, v)
    if ok and d ~= nil then return d end
    return nil
  end
  return to_data(v)
end

local function merge(a, b)
  if type(a) ~= "table" or type(b) ~= "table" or a[1] ~= nil or b[1] ~= nil
      or a == null or b == null then
    return b
  end
  local out = {}
  for k, v in pairs(a) do out[k] = v end
  for k, v in pairs(b) do out[k] = merge(out[k], v) end
  return out
end

------------------------------------------------------------------------
-- Helpers: each takes the call's node, the render's state and the
-- evaluated arguments, and returns a value.
------------------------------------------------------------------------

local eval_expr

local function hash_value(node, env, key)
  local e = node.hash[key]
  if e == nil then return nil end
  return eval_expr(e, env)
end

local function str(v)
  if v == nil then return "" end
  return text_of(v)
end

local function wm_error(msg)
  return "[ERROR: " .. msg .. "]"
end

local function set_var(env, name, value)
  local vars = env.vars
  if not vars then
    vars = {}
    env.vars = vars
  end
  vars[tostring(name)] = value
end

-- A decimal's value and scale (digits after the point), as Java's
-- BigDecimal reads it; 0 for text that is not a number.
local function decimal(v)
  local s = type(v) == "number" and number_text(v) or str(v)
  local n = match(s, "^%s*[%+%-]?%d*%.?%d+%s*$") and tonumber(s)
    or match(s, "^%s*[%+%-]?%d+%.?%s*$") and tonumber(s)
  if not n then return 0, 0 end
  local frac = match(s, "%.(%d*)")
  return n, frac and #frac or 0
end

local function round_half_up(x)
  if x < 0 then return -floor(-x + 0.5) end
  return floor(x + 0.5)
end

local function helper_math(node, env, args)
  if #args ~= 3 then
    return wm_error("All maths functions require two operands and an operator as parameters e.g. 3 '+' 2")
  end
  local a, sa = decimal(args[1])
  local op = str(args[2])
  local b, sb = decimal(args[3])
  local r, scale
  if op == "+" then r, scale = a + b, math.max(sa, sb)
  elseif op == "-" then r, scale = a - b, math.max(sa, sb)
  elseif op == "*" or op == "x" then r, scale = a * b, sa + sb
  elseif op == "/" then
    if b == 0 then return wm_error("Division by zero") end
    r, scale = a / b, sa
  elseif op == "%" then
    if b == 0 then return wm_error("Division by zero") end
    r, scale = math.fmod(a, b), math.max(sa, sb)
  else
    return wm_error(op .. " is not a valid mathematical operator")
  end
  local p = 10 ^ scale
  r = round_half_up(r * p) / p
  if scale == 0 then return r end
  return java_double(r)
end

local function helper_now(node, env, args)
  local opts = env.opts
  local t = opts and opts.now or os_time()
  local offset = hash_value(node, env, "offset")
  if type(offset) == "string" then t = add_offset(t, offset) end
  local off = zone_offset(hash_value(node, env, "timezone")) or 0
  local fmt = hash_value(node, env, "format")
  if fmt == "epoch" then return format("%d", floor(t * 1000)) end
  if fmt == "unix" then return format("%d", floor(t)) end
  if type(fmt) == "string" then return format_date(t, fmt, off) end
  return new_date(t, off)
end

local function as_date(v)
  if type(v) == "table" and getmetatable(v) == DATE then return v end
  return parse_date(v ~= nil and str(v) or nil)
end

local function helper_parse_date(node, env, args)
  local s = args[1] ~= nil and str(args[1]) or nil
  if not s then return nil end
  local fmt = hash_value(node, env, "format") or args[2]
  if fmt == "epoch" or fmt == "unix" then
    local n = tonumber(s)
    if not n then return nil end
    return new_date(fmt == "epoch" and n / 1000 or n, 0)
  end
  if type(fmt) == "string" then return parse_with(s, fmt) end
  return parse_date(s)
end

local function helper_date(node, env, args)
  local d = as_date(args[1])
  if not d then return nil end
  local t, off = d.t, d.off
  local offset = hash_value(node, env, "offset")
  if type(offset) == "string" then t = add_offset(t, offset) end
  local fmt = hash_value(node, env, "format")
  if node.name == "dateFormat" then fmt = args[2] or fmt end
  if fmt == "epoch" then return format("%d", floor(t * 1000)) end
  if fmt == "unix" then return format("%d", floor(t)) end
  if type(fmt) == "string" then return format_date(t, fmt, off) end
  return new_date(t, off)
end

local function helper_random(node, env, args)
  local kind = hash_value(node, env, "type") or "ALPHANUMERIC"
  local s
  if kind == "UUID" then
    s = uuid()
  else
    local alphabet = ALPHABETS[kind]
    local length = tonumber(hash_value(node, env, "length"))
    if not alphabet or not length or length < 0 then return "" end
    s = random_from(alphabet, floor(length))
  end
  if hash_value(node, env, "uppercase") == true then s = upper(s) end
  return s
end

local function helper_random_number(node, env, args)
  local lo = tonumber(hash_value(node, env, "lower"))
  local hi = tonumber(hash_value(node, env, "upper"))
  if node.name == "randomInt" then
    lo, hi = floor(lo or -2147483648), floor(hi or 2147483647)
    if hi <= lo then return lo end
    return random(lo, hi - 1)
  end
  lo, hi = lo or -1.7976931348623157e308 / 2, hi or 1.7976931348623157e308 / 2
  return lo + random() * (hi - lo)
end

-- Bodies decoded during one render, so that several jsonPath tags on the
-- same body decode it once.
local function helper_jsonpath(node, env, args)
  local source = args[1]
  local default = hash_value(node, env, "default")
  local results
  if type(source) == "string" then
    local state = env.decoded
    if not state then
      state = {}
      env.decoded = state
    end
    local decoded = state[source]
    if decoded == nil then
      local v = decode(source)
      decoded = v ~= nil and { v } or false
      state[source] = decoded
    end
    if decoded then results = jsonpath.query(decoded[1], node.path) end
  elseif type(source) == "table" then
    results = jsonpath.query(to_data(source), node.path)
  end
  if not results or #results == 0 then
    return default
  end
  if #results == 1 then return results[1] end
  return results
end

-- The string helpers: the first argument's text changed.
local STRING_HELPERS = {
  upper = upper,
  lower = lower,
  trim = function(s) return (match(s, "^%s*(.-)%s*$")) end,
  capitalize = function(s) return (gsub(s, "(%w)(%w*)", function(a, b) return upper(a) .. b end)) end,
  capitalizeFirst = function(s) return upper(sub(s, 1, 1)) .. sub(s, 2) end,
}

local function helper_string(node, env, args)
  local v = args[1]
  local s = v == nil and "" or text_of(v)
  local name = node.name
  local fn = STRING_HELPERS[name]
  if fn then return fn(s) end
  local dec = hash_value(node, env, "decode")
  dec = dec == true or dec == "true"
  if name == "base64" then
    local model = require("moonport.mock.model")
    if dec then return model.base64_decode(s) or "" end
    local out = model.base64_encode(s)
    local padding = hash_value(node, env, "padding")
    if padding == false or padding == "false" then out = gsub(out, "=+$", "") end
    return out
  end
  return dec and url_decode(s) or url_encode(s)
end

-- UTF-8 characters of s (Java counts UTF-16 units; the same for most text).
local function char_count(s)
  local _, n = gsub(s, "[^\128-\191]", "")
  return n
end

local function helper_size(node, env, args)
  local v = args[1]
  if v == nil then
    local p = node.params[1]
    if p and p.t == "path" and p.segs[1] == "request" and p.segs[2] == "query" then return 0 end
    return nil
  end
  if type(v) == "string" then return char_count(v) end
  if type(v) == "table" and v ~= null then
    local mt = getmetatable(v)
    if mt == MULTI or mt == JLIST then return #v end
    local vals = items(v)
    if vals then return #vals end
  end
  return char_count(text_of(v))
end

local function regex_lib()
  local ok, r = pcall(require, "moonport.core.regex")
  if not ok then return nil, "regular expressions need the server" end
  return r
end

local function helper_regex_extract(node, env, args)
  local subject, pattern, name = str(args[1]), str(args[2]), args[3]
  local default = hash_value(node, env, "default")
  local lib, err = regex_lib()
  if not lib then return wm_error(err) end
  local c = node.re
  if not c or node.re_src ~= pattern then
    c = lib.re_compile(pattern, 0)
    if not c then return wm_error("Invalid regex string " .. pattern) end
    node.re, node.re_src = c, pattern
  end
  local groups, pos = {}, 0
  while pos <= #subject do
    local ok = lib.re_exec(c, subject, pos)
    if not ok then break end
    local from, to = c.ov[0], c.ov[1]
    if name == nil then return sub(subject, from + 1, to) end
    for g = 1, c.ncaptures do
      local gf, gt = c.ov[2 * g], c.ov[2 * g + 1]
      groups[#groups + 1] = gf >= 0 and sub(subject, gf + 1, gt) or null
    end
    pos = to > from and to or to + 1
  end
  if #groups == 0 then
    if default ~= nil then return default end
    return wm_error("Nothing matched " .. pattern)
  end
  set_var(env, name, setmetatable(groups, MULTI))
  return nil
end

local function helper_matches(node, env, args)
  local lib = regex_lib()
  if not lib or args[1] == nil or args[2] == nil then return false end
  local re = lib.new(str(args[2]))
  if not re then return false end
  return re:match(str(args[1])) == true
end

local function helper_form_data(node, env, args)
  local body, name = str(args[1]), args[2]
  local dec = hash_value(node, env, "urlDecode")
  dec = dec == true or dec == "true"
  local fields, keys = {}, {}
  for pair in gmatch(body, "[^&]+") do
    local k, v = match(pair, "^([^=]*)=?(.*)$")
    if dec then k, v = url_decode(k), url_decode(v) end
    local m = fields[k]
    if not m then
      m = setmetatable({ n = 0 }, MULTI)
      fields[k] = m
      keys[#keys + 1] = k
    end
    m[#m + 1] = v
  end
  local form = setmetatable({ fields = fields, keys = keys }, FORM)
  if name == nil then return form end
  set_var(env, name, form)
  return nil
end

local function list_of(v)
  if type(v) ~= "table" or v == null then return nil end
  local vals = items(v)
  return vals
end

local function helper_pick_random(node, env, args)
  local pool = #args == 1 and list_of(args[1]) or args
  if #pool == 0 then return nil end
  local count = tonumber(hash_value(node, env, "count"))
  if not count then return pool[random(#pool)] end
  local copy = {}
  for i = 1, #pool do copy[i] = pool[i] end
  for i = #copy, 2, -1 do
    local j = random(i)
    copy[i], copy[j] = copy[j], copy[i]
  end
  local out = {}
  for i = 1, math.min(floor(count), #copy) do out[i] = copy[i] end
  return jlist(out)
end

local function helper_join(node, env, args)
  local list = list_of(args[1])
  if not list then return nil end
  local sep = args[2] ~= nil and str(args[2]) or ","
  local parts = {}
  for i = 1, #list do parts[i] = str(list[i]) end
  return (str(hash_value(node, env, "prefix"))) .. concat(parts, sep)
    .. (str(hash_value(node, env, "suffix")))
end

local function helper_range(node, env, args)
  local lo, hi = args[1], args[2]
  if type(lo) ~= "number" or type(hi) ~= "number" then
    return wm_error("The range helper requires both lower and upper bounds as integer parameters")
  end
  local out = {}
  for i = lo, hi do out[#out + 1] = i end
  return jlist(out)
end

local function helper_val(node, env, args)
  local v = args[1]
  if v == nil then v = hash_value(node, env, "or") end
  if v == nil then v = hash_value(node, env, "default") end
  local name = hash_value(node, env, "assign")
  if name ~= nil then
    set_var(env, name, v)
    return nil
  end
  return v
end

local function helper_contains(node, env, args)
  local a, b = args[1], args[2]
  if a == nil or b == nil then return false end
  if type(a) == "table" and a ~= null then
    local mt = getmetatable(a)
    if mt == MULTI or mt == JLIST or (mt == nil and a[1] ~= nil) then
      for i = 1, #a do
        if equals(plain(a[i]), b) then return true end
      end
      return false
    end
  end
  return find(text_of(a), str(b), 1, true) ~= nil
end

local function compare_helper(test)
  return function(node, env, args)
    local c = compare(args[1], args[2])
    return c ~= nil and test(c)
  end
end

local HELPERS = {
  eq = function(node, env, args) return equals(args[1], args[2]) end,
  neq = function(node, env, args) return not equals(args[1], args[2]) end,
  gt = compare_helper(function(c) return c > 0 end),
  gte = compare_helper(function(c) return c >= 0 end),
  lt = compare_helper(function(c) return c < 0 end),
  lte = compare_helper(function(c) return c <= 0 end),
  ["and"] = function(node, env, args)
    for i = 1, #args do
      if not truthy(args[i]) then return false end
    end
    return true
  end,
  ["or"] = function(node, env, args)
    for i = 1, #args do
      if truthy(args[i]) then return true end
    end
    return false
  end,
  ["not"] = function(node, env, args) return not truthy(args[1]) end,
  contains = helper_contains,
  matches = helper_matches,
  math = helper_math,
  val = helper_val,
  size = helper_size,
  array = function(node, env, args)
    local out = {}
    for i = 1, #args do out[i] = args[i] end
    return jlist(out)
  end,
  range = helper_range,
  join = helper_join,
  substring = function(node, env, args)
    local s = str(args[1])
    local from, to = tonumber(args[2]) or 0, tonumber(args[3])
    return sub(s, from + 1, to or #s)
  end,
  replace = function(node, env, args)
    local s, target, repl = str(args[1]), str(args[2]), str(args[3])
    if target == "" then return s end
    local out, i = {}, 1
    while true do
      local a, b = find(s, target, i, true)
      if not a then break end
      out[#out + 1] = sub(s, i, a - 1)
      out[#out + 1] = repl
      i = b + 1
    end
    out[#out + 1] = sub(s, i)
    return concat(out)
  end,
  abbreviate = function(node, env, args)
    local s, n = str(args[1]), tonumber(args[2]) or 0
    if #s <= n then return s end
    return sub(s, 1, math.max(n - 3, 0)) .. "..."
  end,
  defaultIfEmpty = function(node, env, args)
    if truthy(args[1]) then return args[1] end
    return args[2]
  end,
  toJson = function(node, env, args) return pretty(to_data(args[1]), "") end,
  formatJson = function(node, env, args)
    local v = json_value(args[1])
    if v == nil then return nil end
    if hash_value(node, env, "format") == "compact" then return encode(v) end
    return pretty(v, "")
  end,
  jsonMerge = function(node, env, args)
    local a, b = json_value(args[1]), json_value(args[2])
    if a == nil or b == nil then return nil end
    return encode(merge(a, b))
  end,
  jsonPath = helper_jsonpath,
  xPath = function(node, env, args)
    return require("moonport.mock.xmlmatch").template_xpath(str(args[1]), str(args[2]))
  end,
  -- The path within a SOAP envelope's body, whatever its prefix and namespace.
  soapXPath = function(node, env, args)
    return require("moonport.mock.xmlmatch").template_xpath(str(args[1]),
      "/*[local-name()='Envelope']/*[local-name()='Body']" .. str(args[2]))
  end,
  pickRandom = helper_pick_random,
  regexExtract = helper_regex_extract,
  formData = helper_form_data,
  now = helper_now,
  date = helper_date,
  dateFormat = helper_date,
  parseDate = helper_parse_date,
  randomValue = helper_random,
  randomInt = helper_random_number,
  randomDecimal = helper_random_number,
  upper = helper_string,
  lower = helper_string,
  capitalize = helper_string,
  capitalizeFirst = helper_string,
  trim = helper_string,
  base64 = helper_string,
  urlEncode = helper_string,
}

-- Helpers that may open a block, beside if, unless, each, with, assign.
local CONDITIONS = { eq = true, neq = true, gt = true, gte = true, lt = true, lte = true,
                     ["and"] = true, ["or"] = true, ["not"] = true, contains = true }
local BLOCKS = { ["if"] = true, unless = true, each = true, with = true, assign = true }
for k in pairs(CONDITIONS) do BLOCKS[k] = true end

-- Helpers that name a variable, and the argument (or hash key) naming it.
local SETS = { regexExtract = 3, formData = 2, val = "assign" }

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

------------------------------------------------------------------------
-- Evaluating.
------------------------------------------------------------------------

-- A path's value: @data of the enclosing {{#each}}, this or ../ of the
-- enclosing contexts, else the innermost context that has the first name,
-- else the root (request, parameters, variables).
local function root_value(env, name)
  if name == "request" then
    local req = env.ctx.request
    return type(req) == "table" and setmetatable({ r = req }, REQ) or nil
  elseif name == "parameters" then
    return env.ctx.parameters
  end
  local vars = env.vars
  return vars and vars[name]
end

local function follow(v, segs, from)
  for i = from, #segs do
    if v == nil then return nil end
    v = get(v, segs[i])
  end
  return v
end

local function resolve(p, env)
  local segs = p.segs
  if p.data then
    local frames = env.frames
    local f = frames and frames[env.fp - p.up]
    return follow(f and f[p.data], segs, 1)
  end
  local sp = env.sp
  if p.this or p.up > 0 then
    local level = sp - p.up
    if level >= 1 then return follow(env.stack[level], segs, 1) end
    if #segs == 0 then return nil end
    return follow(root_value(env, segs[1]), segs, 2)
  end
  local first, stack = segs[1], env.stack
  for level = sp, 1, -1 do
    local v = get(stack[level], first)
    if v ~= nil then return follow(v, segs, 2) end
  end
  return follow(root_value(env, first), segs, 2)
end

local function call(node, env)
  local params, args = node.params, {}
  for i = 1, #params do args[i] = eval_expr(params[i], env) end
  return HELPERS[node.name](node, env, args)
end

function eval_expr(e, env)
  local t = e.t
  if t == "lit" then return e.value end
  if t == "path" then return resolve(e, env) end
  return call(e, env)
end

local render_prog

local function push(env, value, frame)
  local sp = env.sp + 1
  env.sp = sp
  local stack = env.stack
  if not stack then
    stack = {}
    env.stack = stack
  end
  stack[sp] = value == nil and false or value
  if frame then
    local fp = env.fp + 1
    env.fp = fp
    local frames = env.frames
    if not frames then
      frames = {}
      env.frames = frames
    end
    frames[fp] = frame
  end
end

local function pop(env, frame)
  env.stack[env.sp] = nil
  env.sp = env.sp - 1
  if frame then
    env.frames[env.fp] = nil
    env.fp = env.fp - 1
  end
end

local function render_block(node, env, out, on)
  local name = node.name
  if name == "each" then
    local vals, keys = items(eval_expr(node.params[1], env))
    if not vals or #vals == 0 then
      if node.inverse then on = render_prog(node.inverse, env, out, on) end
      return on
    end
    local n = #vals
    for i = 1, n do
      local frame = { index = i - 1, key = keys and keys[i] or i - 1,
                      first = i == 1 and "first" or "", last = i == n and "last" or "" }
      push(env, vals[i], frame)
      on = render_prog(node.body, env, out, on)
      pop(env, frame)
    end
    return on
  elseif name == "with" then
    local v = eval_expr(node.params[1], env)
    if not truthy(v) then
      if node.inverse then on = render_prog(node.inverse, env, out, on) end
      return on
    end
    push(env, v)
    on = render_prog(node.body, env, out, on)
    pop(env)
    return on
  elseif name == "assign" then
    local first = on
    on = render_prog(node.body, env, out, on)
    local text = concat(out, "", first + 1, on)
    for i = on, first + 1, -1 do out[i] = nil end
    set_var(env, str(eval_expr(node.params[1], env)), text)
    return first
  end
  local cond
  if name == "if" then
    cond = truthy(eval_expr(node.params[1], env))
  elseif name == "unless" then
    cond = not truthy(eval_expr(node.params[1], env))
  else
    cond = truthy(call(node, env))
  end
  -- WireMock's contains renders nothing, not its {{else}}, when false.
  local prog = cond and node.body or (name ~= "contains" and node.inverse)
  if prog then on = render_prog(prog, env, out, on) end
  return on
end

function render_prog(prog, env, out, on)
  local json = env.json
  for k = 1, prog.n do
    local part = prog[k]
    if type(part) == "string" then
      on = on + 1
      out[on] = part
    elseif part.k == "block" then
      on = render_block(part, env, out, on)
    else
      local v
      if part.k == "path" then
        v = text_of(lookup(env.ctx, part.segs))
      elseif part.k == "value" then
        v = str(resolve(part.expr, env))
      else
        v = str(call(part.expr, env))
      end
      if json and part.in_string then v = json_escape(v) end
      on = on + 1
      out[on] = v
    end
  end
  return on
end

------------------------------------------------------------------------
-- Compiling.
------------------------------------------------------------------------

-- WireMock's date and dateFormat take no time zone; now does.
local TIME_HELPERS = { now = true }

-- Checks a call and what it nests; compiles a jsonPath's path. Returns
-- true or nil, err.
local check_expr

local function check_call(e, scope)
  local name = e.name
  if not HELPERS[name] then
    return nil, "'" .. name .. "' is not a helper this server knows"
  end
  for _, p in ipairs(e.params) do
    local ok, err = check_expr(p, scope)
    if not ok then return nil, err end
  end
  for _, p in pairs(e.hash) do
    local ok, err = check_expr(p, scope)
    if not ok then return nil, err end
  end
  if name == "jsonPath" then
    local path = e.params[2]
    if not path or path.t ~= "lit" or type(path.value) ~= "string" then
      return nil, "jsonPath needs a value and a quoted path"
    end
    local compiled, err = jsonpath.compile(path.value)
    if not compiled then return nil, err end
    e.path = compiled
  end
  local zone = TIME_HELPERS[name] and e.hash.timezone
  if zone and zone.t == "lit" and zone_offset(zone.value) == nil then
    return nil, "time zone '" .. tostring(zone.value) .. "': only UTC and fixed offsets "
      .. "(+02:00) are supported"
  end
  local sets = SETS[name]
  local target = sets and (type(sets) == "number" and e.params[sets] or e.hash[sets])
  if target and target.t == "lit" then scope.vars[tostring(target.value)] = true end
  return true
end

function check_expr(e, scope)
  if e.t == "call" then return check_call(e, scope) end
  if e.t == "path" and scope.depth == 0 and not e.data and not e.this and e.up == 0 then
    local first = e.segs[1]
    if first ~= "request" and first ~= "parameters" and not scope.vars[first] then
      return nil, "'" .. concat(e.segs, ".") .. "' is not a helper or value this server knows "
        .. "(values are request.*, parameters.* and variables set before)"
    end
  end
  return true
end

-- The tags and text of a template, in order: { text } or { tag = body,
-- pos, in_string }.
local function scan(text)
  local tokens = {}
  local in_string = false
  local i = 1
  while true do
    local a = find(text, "{{", i, true)
    local lit = sub(text, i, a and a - 1 or -1)
    if lit ~= "" then
      tokens[#tokens + 1] = { text = lit }
      in_string = string_state(lit, in_string)
    end
    if not a then break end
    local body_start, close
    if sub(text, a + 2, a + 4) == "!--" then
      body_start, close = a + 5, "--}}"
    elseif sub(text, a + 2, a + 2) == "{" then
      body_start, close = a + 3, "}}}"
    else
      body_start, close = a + 2, "}}"
    end
    -- The tag ends at the first close outside a quoted argument (a
    -- comment's at the first close).
    local b, j = nil, body_start
    local comment = match(text, "^~?!", body_start) ~= nil or close == "--}}"
    while true do
      local q = not comment and find(text, "['\"]", j)
      local c = find(text, close, j, true)
      if not c or not q or c < q then
        b = c
        break
      end
      j = find(text, sub(text, q, q), q + 1, true)
      if not j then
        b = find(text, close, body_start, true)
        break
      end
      j = j + 1
    end
    if not b then
      return nil, format("unclosed '%s' at position %d", sub(text, a, body_start - 1), a)
    end
    local body = sub(text, body_start, b - 1)
    i = b + #close
    -- WireMock's Handlebars takes `~` off a tag but trims nothing.
    if sub(body, 1, 1) == "~" then body = sub(body, 2) end
    if sub(body, -1) == "~" then body = sub(body, 1, -2) end
    if close ~= "--}}" and sub(body, 1, 1) ~= "!" then
      tokens[#tokens + 1] = { tag = body, pos = a, in_string = in_string }
    end
  end
  return tokens
end

-- Request paths the render loop looks up directly.
local FAST = {
  { url = true, path = true, method = true, body = true, baseUrl = true },
  { path = true, pathSegments = true, query = true, headers = true },
  { query = true, headers = true },
}

local function is_fast(e)
  local segs = e.segs
  if e.t ~= "path" or e.data or e.this or e.up > 0 or segs[1] ~= "request" then return false end
  local fields = FAST[#segs - 1]
  return fields ~= nil and fields[segs[2]] == true
end

local parse_prog

-- Parses an open tag's text: "#name args" -> name, args, hash.
local function parse_call(body, pos)
  local args, hash = read_args(body, 1, false)
  if not args then return nil, hash end
  local head = args[1]
  if not head then return nil, "an empty tag" end
  return head, args, hash
end

local function bad(tok, err)
  return nil, format("bad expression '{{%s}}' at position %d: %s", tok.tag, tok.pos, err)
end

-- Parses a block opened by tok (text after '#': name args) up to its
-- {{/name}}, with its {{else}} chain.
local function parse_block(tokens, k, tok, body, scope)
  local head, args, hash = parse_call(body, tok.pos)
  if not head then return bad(tok, args) end
  if head.t ~= "path" or #head.segs ~= 1 or head.data or head.this or head.up > 0 then
    return bad(tok, "a block must name a helper")
  end
  local name = head.segs[1]
  if not BLOCKS[name] then
    return bad(tok, "'#" .. name .. "' is not a block this server knows (if, unless, each, with, "
      .. "eq, neq, gt, gte, lt, lte, and, or, not, contains, assign)")
  end
  table.remove(args, 1)
  local node = { k = "block", name = name, params = args, hash = hash,
                 expr = { t = "call", name = name, params = args, hash = hash } }
  for _, p in ipairs(args) do
    local ok, err = check_expr(p, scope)
    if not ok then return bad(tok, err) end
  end
  if CONDITIONS[name] then
    local ok, err = check_call(node.expr, scope)
    if not ok then return bad(tok, err) end
    node.expr = nil
  end
  if (name == "if" or name == "unless" or name == "each" or name == "with") and #args ~= 1 then
    return bad(tok, "'#" .. name .. "' takes one argument")
  end
  if name == "assign" then
    local target = args[1]
    if not target then return bad(tok, "'#assign' needs a name") end
    if target.t == "lit" then scope.vars[tostring(target.value)] = true end
  end
  local inner = scope
  if name == "each" or name == "with" then
    inner = setmetatable({ depth = scope.depth + 1 }, { __index = scope })
  end
  local prog, term
  prog, k, term = parse_prog(tokens, k, inner)
  if not prog then return nil, k end
  node.body = prog
  local last = node
  while term and term.kind == "else" do
    if term.chain then
      -- {{else if x}}: the rest is a block of its own, closed by ours.
      local chead, cargs, chash = parse_call(term.chain, term.tok.pos)
      if not chead then return bad(term.tok, cargs) end
      local cname = chead.t == "path" and #chead.segs == 1 and chead.segs[1]
      if not cname or not (cname == "if" or cname == "unless" or CONDITIONS[cname]) then
        return bad(term.tok, "'else " .. tostring(cname or "?") .. "' is not a condition this server knows")
      end
      table.remove(cargs, 1)
      if (cname == "if" or cname == "unless") and #cargs ~= 1 then
        return bad(term.tok, "'else " .. cname .. "' takes one argument")
      end
      local cnode = { k = "block", name = cname, params = cargs, hash = chash }
      local ok, e2 = check_call({ t = "call", name = CONDITIONS[cname] and cname or "val",
                                  params = cargs, hash = chash }, scope)
      if not ok then return bad(term.tok, e2) end
      prog, k, term = parse_prog(tokens, k, scope)
      if not prog then return nil, k end
      cnode.body = prog
      last.inverse = { cnode, n = 1 }
      last = cnode
    else
      prog, k, term = parse_prog(tokens, k, scope)
      if not prog then return nil, k end
      last.inverse = prog
      if term and term.kind == "else" then return bad(term.tok, "a second {{else}}") end
    end
  end
  if not term or term.name ~= name then
    return bad(tok, "'#" .. name .. "' is never closed by {{/" .. name .. "}}")
  end
  return node, k
end

-- Parses tokens from k on, up to an {{else}}, a {{/name}} or the end.
-- Returns the program, the next k and what ended it.
function parse_prog(tokens, k, scope)
  local prog, n = {}, 0
  while k <= #tokens do
    local tok = tokens[k]
    k = k + 1
    if tok.text then
      n = n + 1
      prog[n] = tok.text
    else
      local body = match(tok.tag, "^%s*(.-)%s*$")
      local lead = sub(body, 1, 1)
      if lead == "#" then
        local node, nk = parse_block(tokens, k, tok, sub(body, 2), scope)
        if not node then return nil, nk end
        k = nk
        n = n + 1
        prog[n] = node
      elseif lead == "/" then
        prog.n = n
        return prog, k, { kind = "close", name = match(body, "^/%s*(%S*)"), tok = tok }
      elseif body == "else" or body == "^" or match(body, "^else%s") then
        prog.n = n
        local chain = match(body, "^else%s+(.-)$")
        return prog, k, { kind = "else", chain = chain ~= "" and chain or nil, tok = tok }
      elseif lead == "^" or lead == ">" then
        return bad(tok, "inverted sections and partials are not supported")
      else
        if lead == "&" then body = sub(body, 2) end
        local head, args, hash = parse_call(body, tok.pos)
        if not head then return bad(tok, args) end
        local node
        local name = head.t == "path" and #head.segs == 1 and not head.data and not head.this
          and head.up == 0 and head.segs[1]
        if name and HELPERS[name] then
          table.remove(args, 1)
          local e = { t = "call", name = name, params = args, hash = hash }
          local ok, err = check_call(e, scope)
          if not ok then return bad(tok, err) end
          node = { k = "call", expr = e }
        else
          if head.t == "call" then
            node = { k = "call", expr = head }
          elseif head.t == "lit" then
            node = { k = "call", expr = { t = "call", name = "val", params = { head }, hash = {} } }
          end
          if #args > 1 or next(hash) then
            if head.t == "path" and #head.segs == 1 then
              return bad(tok, "'" .. head.segs[1] .. "' is not a helper this server knows")
            end
            return bad(tok, "'" .. concat(head.segs or {}, ".") .. "' takes no arguments")
          end
          local ok, err = check_expr(head, scope)
          if not ok then return bad(tok, err) end
          if not node then
            node = scope.depth == 0 and is_fast(head) and { k = "path", segs = head.segs }
              or { k = "value", expr = head }
          end
        end
        node.in_string = tok.in_string
        n = n + 1
        prog[n] = node
      end
    end
  end
  prog.n = n
  return prog, k, nil
end

-- A simple template (text and request values only) from part k on, as a
-- chain of calls that put its output into buf, a string.buffer: calls,
-- not a loop over the parts, which would make a JIT trace of its own on
-- every templated response's path.
local function simple_chain(parts, k, n)
  if k > n then return function() end end
  local part, rest = parts[k], simple_chain(parts, k + 1, n)
  if type(part) == "string" then
    return function(ctx, json, buf)
      buf:put(part)
      rest(ctx, json, buf)
    end
  end
  local segs, in_string = part.segs, part.in_string
  return function(ctx, json, buf)
    local v = text_of(lookup(ctx, segs))
    if json and in_string then v = json_escape(v) end
    buf:put(v)
    rest(ctx, json, buf)
  end
end

local function compile(text)
  local tokens, err = scan(text)
  if not tokens then return nil, err end
  local prog, k, term = parse_prog(tokens, 1, { depth = 0, vars = {} })
  if not prog then return nil, k end
  if term then
    if term.kind == "else" then return bad(term.tok, "{{else}} outside a block") end
    return bad(term.tok, "{{/" .. tostring(term.name) .. "}} closes no block")
  end
  local simple = true
  for i = 1, prog.n do
    local part = prog[i]
    if type(part) ~= "string" and part.k ~= "path" then simple = false end
  end
  return setmetatable({ parts = prog, n = prog.n, simple = simple and simple_chain(prog, 1, prog.n) },
    Compiled)
end

-- Output buffers not in use. A render takes one and gives it back, so
-- that a render inside another (or one a yield interrupts) has its own.
local spare_buffers, spare_n = {}, 0
local SPARE_MAX = 64 * 1024

------------------------------------------------------------------------
-- Public API.
------------------------------------------------------------------------

--- Compiles a template; compiled templates are cached by their text.
-- @tparam string text the template
-- @return a compiled template, or `nil, err` when a `{{` is never closed,
-- an expression cannot be read (a quote left open, a bad JSONPath), a
-- block is not closed, or the template uses what this module does not
-- implement (an unknown helper or block, a partial, a value that is
-- neither the request's, a parameter nor a variable)
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
-- query, headers, body, method, base_url, client_ip (or req, whose
-- remote_addr is read when a template asks) }, parameters = {...} }`;
-- header names lowercase, repeated query parameters as lists; `parameters`
-- the response's `transformerParameters`
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
  local simple = compiled.simple
  if simple then
    -- Text and request values only: nothing to build but the output.
    local buf
    if spare_n > 0 then
      buf, spare_buffers[spare_n] = spare_buffers[spare_n], nil
      spare_n = spare_n - 1
    else
      buf = string_buffer.new()
    end
    simple(ctx, json, buf)
    local text = buf:tostring()
    -- One that grew for a large output goes, not to be held on to.
    if #text <= SPARE_MAX then
      buf:reset()
      spare_n = spare_n + 1
      spare_buffers[spare_n] = buf
    end
    return text
  end
  local parts, out = compiled.parts, {}
  local env = { ctx = ctx, opts = opts, json = json, sp = 0, fp = 0 }
  local on = render_prog(parts, env, out, 0)
  return concat(out, "", 1, on)
end

return template
