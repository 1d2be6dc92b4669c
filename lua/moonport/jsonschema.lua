--- JSON Schema validation, the project's one engine: a schema compiled
-- once into Lua closures, then run on decoded JSON values (moonport.json's:
-- arrays carry json.array_mt, null is json.null). The mock's
-- matchesJsonSchema and the OpenAPI validator both use it.
--
--     local jsonschema = require("moonport.jsonschema")
--     local v = assert(jsonschema.compile(schema, { dialect = "oas3.0", formats = true }))
--     if not v.valid(body) then
--       for _, e in ipairs(v.errors(body)) do print(e.code, e.message) end
--     end
--
-- Design. compile() turns every schema table into one check function
-- check(value, c) -> boolean, memoized by the table's identity, so that a
-- schema that contains itself (an OpenAPI document whose $refs were
-- resolved into shared tables) compiles once and loops at run time, not at
-- compile time. A check holds the closures of its keywords in the order
-- AJV 8 evaluates them (the order of its rule groups: keywords for any
-- type, then number, string, array and object ones; a wrong type reported
-- first, or where its group would run, as AJV decides). The same closures
-- serve both uses:
--
-- - valid(value): c is nil. A closure returns false at the first failure;
--   nothing is allocated: no path, no message, no table (strings are
--   measured byte by byte, regular expressions run over the Lua string in
--   place, uniqueItems compares pairs).
-- - errors(value): c collects. Every keyword runs (AJV's allErrors), the
--   path is a stack in c, and each failure appends AJV's error
--   { path, code, message, params }. The errors of a branch that did not
--   decide (an anyOf alternative when another matched, the "if" schema,
--   "not"'s subschema, contains' items when enough matched) are taken
--   back, as AJV resets them.
--
-- Dialects: draft numbers 4, 6, 7, 2019, 2020, and "oas3.0" / "oas3.1",
-- which read the schema as Prism does after @stoplight/http-spec converts
-- it: nullable (with a type) adds "null" to the type and to an enum;
-- boolean exclusiveMinimum/Maximum take the minimum/maximum's value;
-- int32/int64/float/double bound minimum and maximum; byte adds a
-- base64-ish pattern; allOf is merged into its schema (Prism merges
-- bodies' schemas, so errors come in the merged schema's order); $ref's
-- siblings are evaluated (AJV 8 does);
-- discriminator, xml, example are annotations. "oas3.0" has draft-07's
-- keywords (Prism validates with AJV's draft-07 class), "oas3.1" 2020-12's.
--
-- It does not: fetch remote $refs (a "#..." pointer into opts.root or the
-- schema, or a table the caller resolved, only), $id-based resolution,
-- $dynamicRef, unevaluatedProperties/Items (ignored), content* keywords.
--
-- @module moonport.jsonschema

local json = require("moonport.json")
local regex = require("moonport.core.regex")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local getmetatable, setmetatable, next = getmetatable, setmetatable, next
local floor, huge, abs = math.floor, math.huge, math.abs
local find, gsub, sub, byte, format, match = string.find, string.gsub, string.sub, string.byte,
  string.format, string.match
local concat, sort = table.concat, table.sort
local re_compile, re_exec = regex.re_compile, regex.re_exec
local RE = regex.flags

local null, array_mt, literal_mt = json.null, json.array_mt, json.literal_mt

local jsonschema = {}

--- The drafts WireMock's schemaVersion names, as compile()'s dialect numbers.
jsonschema.versions = { V4 = 4, V6 = 6, V7 = 7, V201909 = 2019, V202012 = 2020 }

local DIALECTS = { [4] = 4, [6] = 6, [7] = 7, [2019] = 2019, [2020] = 2020,
                   ["oas3.0"] = 7, ["oas3.1"] = 2020 }

-- Values ------------------------------------------------------------------

local function is_array(v)
  if getmetatable(v) == array_mt then return true end
  return next(v) ~= nil and #v > 0 and next(v, #v) == nil and v[1] ~= nil
end

-- The JSON type of a value ("integer" is never answered: numbers are
-- "number"). Allocates nothing.
local function json_type(v)
  local t = type(v)
  if t == "string" or t == "number" or t == "boolean" then return t end
  if t == "table" then return is_array(v) and "array" or "object" end
  if v == null or v == nil then return "null" end
  if t == "userdata" and getmetatable(v) == literal_mt then return "number" end
  return t
end

local function num(v)
  if type(v) ~= "number" and getmetatable(v) == literal_mt then return tonumber(tostring(v)) end
  return v
end

-- An integer as AJV sees one: no fraction; JavaScript's Infinity % 1 is
-- NaN, which AJV's `!(x % 1)` takes for an integer too.
local function is_integer(n)
  return n % 1 == 0 or n == huge or n == -huge
end

--- Whether two JSON values are equal (1 and 1.0 are; objects by their
-- members, arrays item by item). Allocates nothing.
-- @usage jsonschema.equal({ a = 1 }, { a = 1.0 }) -- true
local function equal(a, b)
  if a == b then return true end
  local ta, tb = json_type(a), json_type(b)
  if ta ~= tb then return false end
  if ta == "number" then return num(a) == num(b) end
  if ta == "array" then
    if #a ~= #b then return false end
    for i = 1, #a do if not equal(a[i], b[i]) then return false end end
    return true
  end
  if ta == "object" then
    for k, v in pairs(a) do if b[k] == nil or not equal(v, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
  end
  return false
end
jsonschema.equal = equal

-- The number of code points in a UTF-8 string (AJV's ucs2length counts a
-- surrogate pair once, which is the same). Allocates nothing.
local function length(s)
  local n = 0
  for i = 1, #s do
    local b = byte(s, i)
    if b < 128 or b >= 192 then n = n + 1 end
  end
  return n
end

--- A number as JavaScript prints it (String(n)): AJV's messages hold
-- their limits that way ("must be <= 3.402823669209385e+38").
-- @usage jsonschema.jsnum(1e21) -- "1e+21"
local function jsnum(n)
  if n ~= n then return "NaN" end
  if n == huge then return "Infinity" elseif n == -huge then return "-Infinity" end
  if n == 0 then return "0" end
  if n % 1 == 0 and abs(n) < 1e21 then return format("%.0f", n) end
  local s
  for p = 1, 17 do
    s = format("%." .. (p - 1) .. "e", n)
    if tonumber(s) == n then break end
  end
  local sign, d1, rest, e = match(s, "^(-?)(%d)%.?(%d*)e([-+]%d+)$")
  local digits = (d1 .. rest):gsub("0+$", "")
  if digits == "" then digits = "0" end
  e = tonumber(e)
  if e >= 21 or e <= -7 then
    local m = #digits > 1 and sub(digits, 1, 1) .. "." .. sub(digits, 2) or digits
    return sign .. m .. "e" .. (e > 0 and "+" or "-") .. abs(e)
  end
  if e < 0 then return sign .. "0." .. string.rep("0", -e - 1) .. digits end
  if #digits <= e + 1 then return sign .. digits .. string.rep("0", e + 1 - #digits) end
  return sign .. sub(digits, 1, e + 1) .. "." .. sub(digits, e + 2)
end
jsonschema.jsnum = jsnum

local TYPES = { string = true, number = true, integer = true, boolean = true, null = true,
                object = true, array = true }

-- Regular expressions -----------------------------------------------------

-- ECMAScript patterns on PCRE2: UTF, JavaScript's escapes (\uhhhh; not
-- \u{...}), and `$` at the end only (JavaScript's, where PCRE2's would
-- also match before a final newline).
local JS_FLAGS = RE.u + RE.J + RE.j

local function js_source(src, multiline)
  if multiline then return src end
  -- An unescaped `$` outside a character class becomes \z.
  local out, i, n, class = {}, 1, #src, false
  while i <= n do
    local ch = sub(src, i, i)
    if ch == "\\" then
      out[#out + 1] = sub(src, i, i + 1)
      i = i + 2
    else
      if class then
        if ch == "]" then class = false end
      elseif ch == "[" then
        class = true
        -- A `]` first in a class is a literal in PCRE2; JavaScript's []
        -- is the empty class (ALLOW_EMPTY_CLASS keeps it so).
      elseif ch == "$" then
        ch = "(?!(?s:.))"
      end
      out[#out + 1] = ch
      i = i + 1
    end
  end
  return concat(out)
end

--- Compiles an ECMAScript regular expression (a schema's pattern) to a
-- test(s) -> boolean that finds it anywhere in s, allocating nothing; or
-- nil and PCRE2's message.
-- @usage local test = assert(jsonschema.regex("^[a-z]+$"))
local function js_regex(src, caseless, multiline)
  local flags = JS_FLAGS + (caseless and RE.i or 0) + (multiline and RE.m or 0)
  local c, err = re_compile(js_source(src, multiline), flags)
  if not c then return nil, err end
  return function(s)
    return re_exec(c, s, 0) == true
  end
end
jsonschema.regex = js_regex

-- Formats (ajv-formats 2.1.1 "full", with Prism's date-time) -------------

local formats = {}

local function digits(s, i, n)
  local v = 0
  for k = i, i + n - 1 do v = v * 10 + byte(s, k) - 48 end
  return v
end

local function leap(y) return y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0) end
local DAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

local function date_ok(s, at)
  local y, m, d = digits(s, at, 4), digits(s, at + 5, 2), digits(s, at + 8, 2)
  return m >= 1 and m <= 12 and d >= 1 and d <= (m == 2 and leap(y) and 29 or DAYS[m])
end

local function hms_ok(h, m, sec)
  return (h <= 23 and m <= 59 and sec <= 59) or (h == 23 and m == 59 and sec == 60)
end

local lazy = {}
-- A regular expression compiled when a format first needs it.
local function lazy_re(src, caseless, multiline)
  local f
  return function(s)
    if f == nil then f = assert(js_regex(src, caseless, multiline)) end
    return f(s)
  end
end
lazy.date = lazy_re("^\\d\\d\\d\\d-\\d\\d-\\d\\d$")
lazy.time = lazy_re("^\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?(?:z|[+-]\\d\\d(?::?\\d\\d)?)?$", true)
lazy.date_time = lazy_re("^\\d\\d\\d\\d-\\d\\d-\\d\\d[t\\s]\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?(?:z|[+-]\\d\\d(?::?\\d\\d)?)$", true)

function formats.date(s)
  return lazy.date(s) and date_ok(s, 1)
end

function formats.time(s)
  return lazy.time(s) and hms_ok(digits(s, 1, 2), digits(s, 4, 2), digits(s, 7, 2))
end

-- Prism's date-time (prism-http's validator/validators/dateTime.js): an
-- RFC 3339 date and time with a zone: Z, +hh:mm (a valid time of day),
-- or ISO 8601's +hh, +hhmm (hours to 24).
formats["date-time"] = function(s)
  if not lazy.date_time(s) or not date_ok(s, 1) then return false end
  if not hms_ok(digits(s, 12, 2), digits(s, 15, 2), digits(s, 18, 2)) then return false end
  local z = 20
  if byte(s, z) == 46 then -- fraction
    z = z + 1
    while byte(s, z) and byte(s, z) >= 48 and byte(s, z) <= 57 do z = z + 1 end
  end
  local c = byte(s, z)
  if c == 90 or c == 122 then return true end -- Z, z
  local n = #s - z -- characters after the sign
  local h = digits(s, z + 1, 2)
  if n == 5 then -- +hh:mm
    return h <= 23 and digits(s, z + 4, 2) <= 59
  end
  if n == 4 then return h <= 24 and digits(s, z + 3, 2) <= 59 end -- +hhmm
  return h <= 24 -- +hh
end

formats.duration = lazy_re("^P(?!$)((\\d+Y)?(\\d+M)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+S)?)?|(\\d+W)?)$")

local IPV4 = "(?:(?:25[0-5]|2[0-4]\\d|[01]?\\d\\d?)\\.){3}(?:25[0-5]|2[0-4]\\d|[01]?\\d\\d?)"
local IPV6_IN_URI = "(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|" .. IPV4 .. ")|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\\.[a-z0-9\\-._~!$&'()*+,;=:]+)"

local uri_re = lazy_re("^(?:[a-z][a-z0-9+\\-.]*:)(?:\\/?\\/(?:(?:[a-z0-9\\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\\[" .. IPV6_IN_URI .. "\\]|" .. IPV4 .. "|(?:[a-z0-9\\-._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\\d*)?(?:\\/(?:[a-z0-9\\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\\/(?:(?:[a-z0-9\\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\\/(?:[a-z0-9\\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\\/(?:[a-z0-9\\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)(?:\\?(?:[a-z0-9\\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$", true)
formats.uri = function(s)
  return (find(s, "[/:]") ~= nil) and uri_re(s)
end
formats["uri-reference"] = lazy_re("^(?:[a-z][a-z0-9+\\-.]*:)?(?:\\/?\\/(?:(?:[a-z0-9\\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\\[" .. IPV6_IN_URI .. "\\]|" .. IPV4 .. "|(?:[a-z0-9\\-._~!$&'\"()*+,;=]|%[0-9a-f]{2})*)(?::\\d*)?(?:\\/(?:[a-z0-9\\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})*)*|\\/(?:(?:[a-z0-9\\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})+(?:\\/(?:[a-z0-9\\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})+(?:\\/(?:[a-z0-9\\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\\?(?:[a-z0-9\\-._~!$&'\"()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\\-._~!$&'\"()*+,;=:@/?]|%[0-9a-f]{2})*)?$", true)
formats["uri-template"] = lazy_re("^(?:(?:[^\\x00-\\x20\"'<>%\\\\^`{|}]|%[0-9a-f]{2})|\\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\\*)?)*\\})*$", true)
formats.url = lazy_re("^(?:https?|ftp):\\/\\/(?:\\S+(?::\\S*)?@)?(?:(?!(?:10|127)(?:\\.\\d{1,3}){3})(?!(?:169\\.254|192\\.168)(?:\\.\\d{1,3}){2})(?!172\\.(?:1[6-9]|2\\d|3[0-1])(?:\\.\\d{1,3}){2})(?:[1-9]\\d?|1\\d\\d|2[01]\\d|22[0-3])(?:\\.(?:1?\\d{1,2}|2[0-4]\\d|25[0-5])){2}(?:\\.(?:[1-9]\\d?|1\\d\\d|2[0-4]\\d|25[0-4]))|(?:(?:[a-z0-9\\u00a1-\\uffff]+-)*[a-z0-9\\u00a1-\\uffff]+)(?:\\.(?:[a-z0-9\\u00a1-\\uffff]+-)*[a-z0-9\\u00a1-\\uffff]+)*(?:\\.(?:[a-z\\u00a1-\\uffff]{2,})))(?::\\d{2,5})?(?:\\/[^\\s]*)?$", true)
formats.email = lazy_re("^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$", true)
formats.hostname = lazy_re("^(?=.{1,253}\\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\\.?$", true)
formats.ipv4 = lazy_re("^" .. IPV4 .. "$")
formats.ipv6 = lazy_re("^((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3})|:))|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3})|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}))|:))|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}))|:))|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}))|:))|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}))|:)))$", true)
formats.uuid = lazy_re("^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$", true)
formats["json-pointer"] = lazy_re("^(?:\\/(?:[^~/]|~0|~1)*)*$")
formats["json-pointer-uri-fragment"] = lazy_re("^#(?:\\/(?:[a-z0-9_\\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$", true)
formats["relative-json-pointer"] = lazy_re("^(?:0|[1-9][0-9]*)(?:#|(?:\\/(?:[^~/]|~0|~1)*)*)$")
-- ajv-formats' BYTE has /gm: a line of the string that is base64 will do.
formats.byte = lazy_re("^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$", false, true)
-- A pattern JavaScript would compile (approximated by PCRE2; compiling
-- allocates, so this format is the one that does on valid values).
formats.regex = function(s)
  if find(s, "[^\\]\\Z") then return false end
  local c = re_compile(js_source(s), JS_FLAGS - RE.j)
  if c then regex.re_free(c) return true end
  return false
end
formats.password = function() return true end
formats.binary = formats.password

-- Formats of numbers (ajv-formats' `type: "number"` ones).
local number_formats = {
  int32 = function(n) return n % 1 == 0 and n <= 2147483647 and n >= -2147483648 end,
  int64 = function(n) return is_integer(n) end,
  float = function() return true end,
  double = function() return true end,
}

--- The format names opts.formats asserts (strings, then numbers).
-- @usage if jsonschema.formats.uuid then ... end
jsonschema.formats = {}
for name in pairs(formats) do jsonschema.formats[name] = "string" end
for name in pairs(number_formats) do jsonschema.formats[name] = "number" end

-- OpenAPI's number formats as @stoplight/http-spec turns them into bounds.
local FORMAT_RANGES = {
  int32 = { -2147483648, 2147483647 },
  int64 = { -9007199254740991, 9007199254740991 },
  float = { -(2 ^ 128), 2 ^ 128 - 1 },
  double = { -1.7976931348623157e308, 1.7976931348623157e308 },
}
local BYTE_PATTERN = "^[\\w\\d+\\/=]*$"

-- Compiling ---------------------------------------------------------------

local function pointer_unescape(s)
  s = gsub(s, "%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
  return (gsub(gsub(s, "~1", "/"), "~0", "~"))
end

local function child(path, key)
  return path .. "/" .. gsub(gsub(tostring(key), "~", "~0"), "/", "~1")
end

-- Appends AJV's error for the value at c's path.
local function report(c, code, message, params)
  local path, src = {}, c.path
  for i = 1, c.n do path[i] = src[i] end
  local out = c.out
  out[#out + 1] = { path = path, code = code, message = message, params = params or {} }
end

-- Runs check on value at key below the current path.
local function at(check, value, key, c)
  if c == nil then return check(value) end
  local n = c.n + 1
  c.n, c.path[n] = n, key
  local ok = check(value, c)
  c.n = n - 1
  return ok
end

-- The keys of an object of the schema, in the order errors should follow:
-- opts.order(t) when it knows it (the document's order), else sorted.
local function keys_of(t, cx)
  local list = cx.merged_order[t] or cx.order and cx.order(t)
  if list then return list end
  list = {}
  for k in pairs(t) do list[#list + 1] = k end
  sort(list, function(a, b) return tostring(a) < tostring(b) end)
  return list
end

local function always() return true end

local compile_schema

-- The schema a $ref string names, from cx.root.
local function resolve(ref, cx)
  local target = cx.root
  for part in ref:sub(2):gmatch("[^/]+") do
    if type(target) ~= "table" then return nil end
    local key = pointer_unescape(part)
    local v = target[key]
    if v == nil and is_array(target) and key:match("^%d+$") then v = target[tonumber(key) + 1] end
    target = v
  end
  return target
end

-- The schema behind a reference, for looking at readOnly and type (one
-- level, as a property's `$ref` usually is).
local function deref(s, cx)
  if type(s) == "table" and type(s["$ref"]) == "string" and sub(s["$ref"], 1, 1) == "#" then
    local t = resolve(s["$ref"], cx)
    if type(t) == "table" then return t end
  end
  return s
end

-- The types a schema allows, as AJV reads them (after OpenAPI's
-- nullable); nil when it has no type.
local function types_of(schema, cx)
  local t = schema.type
  if t == nil then return nil end
  local list = type(t) == "string" and { t } or t
  if cx.oas and schema.nullable == true and type(t) == "string" and TYPES[t] then
    list = { t, "null" }
  end
  return list
end

-- allOf merged into its schema, as Prism does to bodies before validating
-- them (json-schema-merge-allof, deep): properties united (one both
-- branches name becomes the allOf of the two, merged in turn), required
-- lists joined, types intersected, lower bounds raised and upper ones
-- lowered, annotations from the first; the merged schema then reports its
-- errors in one schema's order. nil when the branches conflict (a keyword
-- two of them set differently, no type left) or a branch is the schema
-- itself: Prism then validates the schema as it was, and so does this.
local MERGE_MAX = { minimum = true, minLength = true, minItems = true, minProperties = true }
local MERGE_MIN = { maximum = true, maxLength = true, maxItems = true, maxProperties = true }
local MERGE_FIRST = { title = true, description = true, example = true, examples = true, default = true,
                      deprecated = true, ["$comment"] = true, xml = true, externalDocs = true }

local function merge_allof(schema, cx, busy)
  if busy[schema] then return nil end
  busy[schema] = true
  local out, names, seen = {}, {}, {}
  local function note_props(p)
    for _, k in ipairs(keys_of(p, cx)) do
      if not seen[k] then seen[k] = true names[#names + 1] = k end
    end
  end
  local function take(k, val)
    local have = out[k]
    if k == "properties" then
      if type(val) ~= "table" then return false end
      out.properties = out.properties or {}
      for name, sub_s in pairs(val) do
        local old = out.properties[name]
        out.properties[name] = old == nil and sub_s or { allOf = { old, sub_s } }
      end
      note_props(val)
    elseif k == "required" then
      if type(val) ~= "table" then return false end
      local list = out.required or setmetatable({}, array_mt)
      for _, name in ipairs(val) do
        local dup = false
        for _, h in ipairs(list) do if h == name then dup = true break end end
        if not dup then list[#list + 1] = name end
      end
      out.required = list
    elseif have == nil then
      out[k] = val
    elseif k == "type" then
      local a = type(have) == "string" and { have } or have
      local b = type(val) == "string" and { val } or val
      local both = {}
      for _, x in ipairs(a) do
        for _, y in ipairs(b) do
          if x == y or x == "integer" and y == "number" or x == "number" and y == "integer" then
            both[#both + 1] = (x == "integer" or y == "integer") and "integer" or x
          end
        end
      end
      if #both == 0 then return false end
      out.type = #both == 1 and both[1] or both
    elseif MERGE_MAX[k] and type(have) == "number" and type(val) == "number" then
      out[k] = have > val and have or val
    elseif MERGE_MIN[k] and type(have) == "number" and type(val) == "number" then
      out[k] = have < val and have or val
    elseif not MERGE_FIRST[k] and not equal(have, val) then
      return false
    end
    return true
  end
  local ok = true
  for k, val in pairs(schema) do
    if k ~= "allOf" and not take(k, val) then ok = false end
  end
  for _, branch in ipairs(type(schema.allOf) == "table" and schema.allOf or {}) do
    local b = deref(branch, cx)
    if type(b) == "table" and type(b["$ref"]) == "table" then b = b["$ref"] end
    if b == false or type(b) ~= "table" and b ~= true then ok = false break end
    if b ~= true then
      if b.allOf ~= nil then b = merge_allof(b, cx, busy) end
      if b == nil then ok = false break end
      for k, val in pairs(b) do
        if k ~= "$ref" and not take(k, val) then ok = false break end
      end
    end
    if not ok then break end
  end
  busy[schema] = nil
  if not ok then return nil end
  if out.properties then cx.merged_order[out.properties] = names end
  return out
end

-- Keywords of AJV's rule groups, to decide where a type error goes.
local GROUP_KEYWORDS = {
  number = { "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "format" },
  string = { "maxLength", "minLength", "pattern", "format" },
  array = { "maxItems", "minItems", "uniqueItems", "additionalItems", "items", "prefixItems", "contains",
            "unevaluatedItems" },
  object = { "maxProperties", "minProperties", "required", "propertyNames", "additionalProperties",
             "dependencies", "properties", "patternProperties", "dependentRequired", "dependentSchemas",
             "unevaluatedProperties" },
}

local function has_group(schema, group)
  for _, k in ipairs(GROUP_KEYWORDS[group]) do if schema[k] ~= nil then return true end end
  return false
end

-- Compiles schema (found at `where`, a JSON pointer, for messages) in
-- context cx; returns check(value, c) -> boolean, or nil and why.
function compile_schema(schema, where, cx)
  if schema == true then return always end
  if schema == false then
    return function(_, c)
      if c then report(c, "false schema", "boolean schema is false") end
      return false
    end
  end
  if type(schema) ~= "table" or is_array(schema) and next(schema) ~= nil then
    return nil, where .. ": a schema is an object or a boolean"
  end
  local memo = cx.memo[schema]
  if memo then
    if memo.check then return memo.check end
    -- Still compiling: a cycle. Call through the entry, filled in below.
    return function(v, c) return memo.check(v, c) end
  end
  memo = {}
  cx.memo[schema] = memo
  if cx.merge and schema.allOf ~= nil then
    local merged = merge_allof(schema, cx, {})
    if merged then
      local check, err = compile_schema(merged, where, cx)
      if not check then return nil, err end
      memo.check = check
      return check
    end
  end

  local draft, oas = cx.draft, cx.oas
  local ks = {}
  local function add(k) ks[#ks + 1] = k end
  local function sub_schema(s, path) return compile_schema(s, path, cx) end
  local function bad(key, what) return nil, ("%s/%s: %s"):format(where, key, what) end
  local function number_of(key)
    local v = num(schema[key])
    if v == nil then return nil end
    if type(v) ~= "number" then return bad(key, "is not a number") end
    return v
  end
  local function count_of(key)
    local v = num(schema[key])
    if v == nil then return nil end
    if type(v) ~= "number" or v < 0 or v % 1 ~= 0 then return bad(key, "is not a non-negative integer") end
    return v
  end
  local function list_of_schemas(key)
    local list = schema[key]
    if type(list) ~= "table" or not is_array(list) or #list == 0 then
      return bad(key, "is not a non-empty array of schemas")
    end
    local out = {}
    for i, s in ipairs(list) do
      local c, err = sub_schema(s, where .. "/" .. key .. "/" .. (i - 1))
      if not c then return nil, err end
      out[i] = c
    end
    return out
  end
  local err

  -- $ref: before 2019-09 (and not in OpenAPI, where AJV evaluates the
  -- siblings), it replaces them.
  if schema["$ref"] ~= nil then
    local ref = schema["$ref"]
    local target
    if type(ref) == "table" then
      target = ref -- resolved by the caller
    elseif type(ref) ~= "string" or sub(ref, 1, 1) ~= "#" then
      return bad("$ref", "only references within the schema (#...) are supported")
    else
      target = resolve(ref, cx)
      if target == nil then return bad("$ref", ref .. " names nothing in the schema") end
    end
    local check
    check, err = compile_schema(target, type(ref) == "string" and ref or where .. "/$ref", cx)
    if not check then return nil, err end
    if draft < 2019 and not oas then
      memo.check = check
      return check
    end
    add(function(v, _, c) return check(v, c) end)
  end

  -- The type, and where its error goes (see AJV's coerceAndCheckDataType).
  local types = types_of(schema, cx)
  local allowed, type_group, type_params, type_else
  if types ~= nil then
    if type(types) ~= "table" then return bad("type", "is not a type name or a list of them") end
    allowed = {}
    for _, name in ipairs(types) do
      if not TYPES[name] then return bad("type", tostring(name) .. " is not a JSON Schema type") end
      allowed[name] = true
    end
    local type_message = "must be " .. concat(types, ",")
    type_params = { type = #types == 1 and types[1] or types }
    local type_first
    if cx.coerce then
      type_first = true
    else
      type_first = not (#types == 1 and GROUP_KEYWORDS[types[1]] and has_group(schema, types[1]))
    end
    local function type_ok(v, jt)
      return allowed[jt] or (jt == "number" and allowed.integer and is_integer(num(v)))
    end
    if type_first then
      add(function(v, jt, c)
        if type_ok(v, jt) then return true end
        if c then report(c, "type", type_message, type_params) end
        return false
      end)
    else
      -- Reported after the keywords of its group, as AJV's `else`.
      type_group = types[1]
      type_else = function(_, jt, c)
        if jt == type_group then return true end
        if c then report(c, "type", type_message, type_params) end
        return false
      end
    end
  end

  -- Any type: const, enum.
  if schema.const ~= nil and draft >= 6 then
    local want = schema.const
    local params = { allowedValue = want }
    add(function(v, _, c)
      if equal(v, want) then return true end
      if c then report(c, "const", "must be equal to constant", params) end
      return false
    end)
  end
  if schema.enum ~= nil then
    local enum = schema.enum
    if type(enum) ~= "table" then return bad("enum", "is not an array") end
    if oas and schema.nullable == true and types and #types == 2 and types[2] == "null" then
      local copy = {}
      for i, e in ipairs(enum) do copy[i] = e end
      copy[#copy + 1] = null
      enum = setmetatable(copy, array_mt)
    end
    local n = #enum
    local params = { allowedValues = enum }
    add(function(v, _, c)
      for i = 1, n do if equal(v, enum[i]) then return true end end
      if c then report(c, "enum", "must be equal to one of the allowed values", params) end
      return false
    end)
  end

  -- Any type: not, anyOf, oneOf, allOf, if.
  if schema["not"] ~= nil then
    local check
    check, err = sub_schema(schema["not"], where .. "/not")
    if not check then return nil, err end
    add(function(v, _, c)
      if not check(v) then return true end
      if c then report(c, "not", "must NOT be valid") end
      return false
    end)
  end
  if schema.anyOf ~= nil then
    local list
    list, err = list_of_schemas("anyOf")
    if not list then return nil, err end
    local n = #list
    add(function(v, _, c)
      if c == nil then
        for i = 1, n do if list[i](v) then return true end end
        return false
      end
      local mark = #c.out
      for i = 1, n do
        if list[i](v, c) then
          for k = #c.out, mark + 1, -1 do c.out[k] = nil end
          return true
        end
      end
      report(c, "anyOf", "must match a schema in anyOf")
      return false
    end)
  end
  if schema.oneOf ~= nil then
    local list
    list, err = list_of_schemas("oneOf")
    if not list then return nil, err end
    local n = #list
    add(function(v, _, c)
      if c == nil then
        local hits = 0
        for i = 1, n do
          if list[i](v) then
            hits = hits + 1
            if hits > 1 then return false end
          end
        end
        return hits == 1
      end
      local mark, first, second = #c.out, nil, nil
      for i = 1, n do
        if list[i](v, c) then
          if first == nil then first = i - 1 elseif second == nil then second = i - 1 end
        end
      end
      if first ~= nil and second == nil then
        for k = #c.out, mark + 1, -1 do c.out[k] = nil end
        return true
      end
      report(c, "oneOf", "must match exactly one schema in oneOf",
        { passingSchemas = second and setmetatable({ first, second }, array_mt) or null })
      return false
    end)
  end
  if schema.allOf ~= nil then
    local list
    list, err = list_of_schemas("allOf")
    if not list then return nil, err end
    local n = #list
    add(function(v, _, c)
      local ok = true
      for i = 1, n do
        if not list[i](v, c) then
          if c == nil then return false end
          ok = false
        end
      end
      return ok
    end)
  end
  if schema["if"] ~= nil and draft >= 7 and (schema["then"] ~= nil or schema["else"] ~= nil) then
    local cif, cthen, celse
    cif, err = sub_schema(schema["if"], where .. "/if")
    if not cif then return nil, err end
    if schema["then"] ~= nil then
      cthen, err = sub_schema(schema["then"], where .. "/then")
      if not cthen then return nil, err end
    end
    if schema["else"] ~= nil then
      celse, err = sub_schema(schema["else"], where .. "/else")
      if not celse then return nil, err end
    end
    local then_params, else_params = { failingKeyword = "then" }, { failingKeyword = "else" }
    add(function(v, _, c)
      local passed = cif(v)
      local check = passed and cthen or not passed and celse
      if not check then return true end
      if check(v, c) then return true end
      if c then
        report(c, "if", passed and 'must match "then" schema' or 'must match "else" schema',
          passed and then_params or else_params)
      end
      return false
    end)
  end

  -- Numbers: maximum, minimum, exclusiveMaximum, exclusiveMinimum,
  -- multipleOf, format.
  local minimum, maximum, xmin, xmax, multiple
  minimum, err = number_of("minimum") if err then return nil, err end
  maximum, err = number_of("maximum") if err then return nil, err end
  multiple, err = number_of("multipleOf") if err then return nil, err end
  if multiple ~= nil and multiple <= 0 then return bad("multipleOf", "is not above 0") end
  local fmt = schema.format
  if oas and type(fmt) == "string" and FORMAT_RANGES[fmt] then
    local r = FORMAT_RANGES[fmt]
    minimum = minimum and (minimum > r[1] and minimum or r[1]) or r[1]
    maximum = maximum and (maximum < r[2] and maximum or r[2]) or r[2]
  end
  if draft == 4 or oas then
    -- Booleans (draft 4, OpenAPI 3.0): the bound becomes exclusive.
    local xn, xx = schema.exclusiveMinimum, schema.exclusiveMaximum
    if xn == true and minimum then xmin, minimum = minimum, nil end
    if xx == true and maximum then xmax, maximum = maximum, nil end
    if type(num(xn)) == "number" then xmin = num(xn) end
    if type(num(xx)) == "number" then xmax = num(xx) end
  else
    xmin, err = number_of("exclusiveMinimum") if err then return nil, err end
    xmax, err = number_of("exclusiveMaximum") if err then return nil, err end
  end
  local function bound(limit, code, cmp, fails)
    if limit == nil then return end
    local message, params = "must be " .. cmp .. " " .. jsnum(limit), { comparison = cmp, limit = limit }
    add(function(v, jt, c)
      if jt ~= "number" or not fails(num(v), limit) then return true end
      if c then report(c, code, message, params) end
      return false
    end)
  end
  bound(maximum, "maximum", "<=", function(v, l) return v > l end)
  bound(minimum, "minimum", ">=", function(v, l) return v < l end)
  bound(xmax, "exclusiveMaximum", "<", function(v, l) return v >= l end)
  bound(xmin, "exclusiveMinimum", ">", function(v, l) return v <= l end)
  if multiple then
    local message, params = "must be multiple of " .. jsnum(multiple), { multipleOf = multiple }
    add(function(v, jt, c)
      if jt ~= "number" then return true end
      local q = num(v) / multiple
      if q == floor(q) then return true end
      if c then report(c, "multipleOf", message, params) end
      return false
    end)
  end
  local format_message, format_params
  if type(fmt) == "string" then
    format_message, format_params = 'must match format "' .. fmt .. '"', { format = fmt }
  end
  if cx.formats and format_message and number_formats[fmt] then
    local test = number_formats[fmt]
    add(function(v, jt, c)
      if jt ~= "number" or test(num(v)) then return true end
      if c then report(c, "format", format_message, format_params) end
      return false
    end)
  end
  if type_group == "number" then add(type_else) end

  -- Strings: maxLength, minLength, pattern, format.
  local min_len, max_len
  min_len, err = count_of("minLength") if err then return nil, err end
  max_len, err = count_of("maxLength") if err then return nil, err end
  if max_len then
    local message, params = ("must NOT have more than %d characters"):format(max_len), { limit = max_len }
    add(function(v, jt, c)
      if jt ~= "string" or #v <= max_len or length(v) <= max_len then return true end
      if c then report(c, "maxLength", message, params) end
      return false
    end)
  end
  if min_len then
    local message, params = ("must NOT have fewer than %d characters"):format(min_len), { limit = min_len }
    add(function(v, jt, c)
      if jt ~= "string" or #v >= min_len * 4 or length(v) >= min_len then return true end
      if c then report(c, "minLength", message, params) end
      return false
    end)
  end
  local pattern = schema.pattern
  if oas and fmt == "byte" then pattern = BYTE_PATTERN end
  if pattern ~= nil then
    if type(pattern) ~= "string" then return bad("pattern", "is not a string") end
    local test
    test, err = js_regex(pattern)
    if not test then return bad("pattern", "bad regular expression: " .. err) end
    local message, params = 'must match pattern "' .. pattern .. '"', { pattern = pattern }
    add(function(v, jt, c)
      if jt ~= "string" or test(v) then return true end
      if c then report(c, "pattern", message, params) end
      return false
    end)
  end
  if cx.formats and format_message and formats[fmt] then
    local test = formats[fmt]
    add(function(v, jt, c)
      if jt ~= "string" or test(v) then return true end
      if c then report(c, "format", format_message, format_params) end
      return false
    end)
  end
  if type_group == "string" then add(type_else) end

  -- Arrays: maxItems, minItems, uniqueItems, items (prefixItems,
  -- additionalItems), contains.
  local min_items, max_items
  min_items, err = count_of("minItems") if err then return nil, err end
  max_items, err = count_of("maxItems") if err then return nil, err end
  if max_items then
    local message, params = ("must NOT have more than %d items"):format(max_items), { limit = max_items }
    add(function(v, jt, c)
      if jt ~= "array" or #v <= max_items then return true end
      if c then report(c, "maxItems", message, params) end
      return false
    end)
  end
  if min_items then
    local message, params = ("must NOT have fewer than %d items"):format(min_items), { limit = min_items }
    add(function(v, jt, c)
      if jt ~= "array" or #v >= min_items then return true end
      if c then report(c, "minItems", message, params) end
      return false
    end)
  end
  if schema.uniqueItems == true then
    -- Which pair AJV names: scanning down from the end, with a map of the
    -- items seen when the items' type is known and scalar, else pairwise.
    local item_types = type(schema.items) == "table" and not is_array(schema.items)
      and types_of(deref(schema.items, cx), cx)
    local scalar = item_types and #item_types > 0
    if scalar then
      for _, t in ipairs(item_types) do if t == "object" or t == "array" then scalar = false end end
    end
    local item_allowed = {}
    for _, t in ipairs(scalar and item_types or {}) do item_allowed[t] = true end
    local function of_type(x)
      local jt = json_type(x)
      return item_allowed[jt] or (jt == "number" and item_allowed.integer and is_integer(num(x)))
    end
    add(function(v, jt, c)
      if jt ~= "array" then return true end
      local n = #v
      if c == nil then
        for i = 1, n - 1 do
          local a = v[i]
          for j = i + 1, n do if equal(a, v[j]) then return false end end
        end
        return true
      end
      local i_at, j_at
      if scalar then
        for i = n - 1, 0, -1 do
          local a = v[i + 1]
          if of_type(a) then
            for j = i + 1, n - 1 do
              if of_type(v[j + 1]) and equal(a, v[j + 1]) then i_at, j_at = i, j break end
            end
          end
          if i_at then break end
        end
      else
        for i = n - 1, 1, -1 do
          for j = i - 1, 0, -1 do
            if equal(v[i + 1], v[j + 1]) then i_at, j_at = i, j break end
          end
          if i_at then break end
        end
      end
      if not i_at then return true end
      report(c, "uniqueItems", ("must NOT have duplicate items (items ## %d and %d are identical)"):format(j_at, i_at),
        { i = i_at, j = j_at })
      return false
    end)
  end
  local items, prefix, extra, extra_key
  local item_list = draft >= 2020 and schema.prefixItems or nil
  if draft < 2020 and type(schema.items) == "table" and is_array(schema.items) then item_list = schema.items end
  if item_list ~= nil then
    local key = draft < 2020 and "items" or "prefixItems"
    prefix, err = list_of_schemas(key)
    if not prefix then return nil, err end
    extra_key = draft < 2020 and "additionalItems" or "items"
    local rest = schema[extra_key]
    if rest ~= nil then
      extra, err = sub_schema(rest, where .. "/" .. extra_key)
      if not extra then return nil, err end
    end
  elseif schema.items ~= nil then
    items, err = sub_schema(schema.items, where .. "/items")
    if not items then return nil, err end
  end
  if items then
    add(function(v, jt, c)
      if jt ~= "array" then return true end
      local ok = true
      for i = 1, #v do
        if not at(items, v[i], i - 1, c) then
          if c == nil then return false end
          ok = false
        end
      end
      return ok
    end)
  elseif prefix then
    local np = #prefix
    local too_many = ("must NOT have more than %d items"):format(np)
    local limit_params = { limit = np }
    add(function(v, jt, c)
      if jt ~= "array" then return true end
      local ok = true
      local n = #v
      for i = 1, (n < np and n or np) do
        if not at(prefix[i], v[i], i - 1, c) then
          if c == nil then return false end
          ok = false
        end
      end
      if extra and n > np then
        if schema[extra_key] == false then
          if c == nil then return false end
          report(c, extra_key, too_many, limit_params)
          return false
        end
        for i = np + 1, n do
          if not at(extra, v[i], i - 1, c) then
            if c == nil then return false end
            ok = false
          end
        end
      end
      return ok
    end)
  end
  if schema.contains ~= nil and draft >= 6 then
    local contains
    contains, err = sub_schema(schema.contains, where .. "/contains")
    if not contains then return nil, err end
    local min_c, max_c = 1, nil
    if draft >= 2019 then
      local v
      v, err = count_of("minContains") if err then return nil, err end
      if v then min_c = v end
      max_c, err = count_of("maxContains") if err then return nil, err end
    end
    local message, params
    if max_c == nil then
      message, params = ("must contain at least %d valid item(s)"):format(min_c), { minContains = min_c }
    else
      message = ("must contain at least %d and no more than %d valid item(s)"):format(min_c, max_c)
      params = { minContains = min_c, maxContains = max_c }
    end
    add(function(v, jt, c)
      if jt ~= "array" then return true end
      local mark = c and #c.out
      local hits = 0
      for i = 1, #v do
        if at(contains, v[i], i - 1, c) then hits = hits + 1 end
      end
      if hits >= min_c and (max_c == nil or hits <= max_c) then
        if c then for k = #c.out, mark + 1, -1 do c.out[k] = nil end end
        return true
      end
      if c then report(c, "contains", message, params) end
      return false
    end)
  end
  if type_group == "array" then add(type_else) end

  -- Objects: maxProperties, minProperties, required, propertyNames,
  -- additionalProperties, dependencies, properties, patternProperties,
  -- dependentRequired, dependentSchemas.
  local min_props, max_props
  min_props, err = count_of("minProperties") if err then return nil, err end
  max_props, err = count_of("maxProperties") if err then return nil, err end
  local function count(v)
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    return n
  end
  if max_props then
    local message, params = ("must NOT have more than %d properties"):format(max_props), { limit = max_props }
    add(function(v, jt, c)
      if jt ~= "object" or count(v) <= max_props then return true end
      if c then report(c, "maxProperties", message, params) end
      return false
    end)
  end
  if min_props then
    local message, params = ("must NOT have fewer than %d properties"):format(min_props), { limit = min_props }
    add(function(v, jt, c)
      if jt ~= "object" or count(v) >= min_props then return true end
      if c then report(c, "minProperties", message, params) end
      return false
    end)
  end

  -- Properties left out by direction, as Prism strips them: readOnly ones
  -- in requests, writeOnly ones in responses (neither validated, nor
  -- required, nor declared: additionalProperties sees them).
  local strip = cx.direction == "request" and "readOnly" or cx.direction == "response" and "writeOnly" or nil
  local props_src = schema.properties
  if props_src ~= nil and type(props_src) ~= "table" then return bad("properties", "is not an object") end
  local stripped = {}
  if strip and props_src then
    for name, s in pairs(props_src) do
      local d = deref(s, cx)
      if type(d) == "table" and d[strip] == true then stripped[name] = true end
    end
  end

  local required = schema.required
  if required ~= nil and (type(required) ~= "table" or not (is_array(required) or next(required) == nil)) then
    if not (draft < 4 and type(required) == "boolean") then return bad("required", "is not an array of names") end
  end
  if type(required) == "table" and #required > 0 then
    local names, messages, params = {}, {}, {}
    for _, name in ipairs(required) do
      if not stripped[name] then
        names[#names + 1] = name
        messages[#names] = "must have required property '" .. tostring(name) .. "'"
        params[#names] = { missingProperty = name }
      end
    end
    local n = #names
    if n > 0 then
      add(function(v, jt, c)
        if jt ~= "object" then return true end
        local ok = true
        for i = 1, n do
          if v[names[i]] == nil then
            if c == nil then return false end
            report(c, "required", messages[i], params[i])
            ok = false
          end
        end
        return ok
      end)
    end
  end

  local props, prop_names = nil, nil
  if props_src then
    props, prop_names = {}, {}
    for _, name in ipairs(keys_of(props_src, cx)) do
      if not stripped[name] then
        local check
        check, err = sub_schema(props_src[name], child(where .. "/properties", name))
        if not check then return nil, err end
        props[name] = check
        prop_names[#prop_names + 1] = name
      end
    end
  end
  local patterns
  if schema.patternProperties ~= nil then
    if type(schema.patternProperties) ~= "table" then return bad("patternProperties", "is not an object") end
    patterns = {}
    for _, src in ipairs(keys_of(schema.patternProperties, cx)) do
      local test
      test, err = js_regex(src)
      if not test then return bad("patternProperties", "bad regular expression " .. src .. ": " .. err) end
      local check
      check, err = sub_schema(schema.patternProperties[src], child(where .. "/patternProperties", src))
      if not check then return nil, err end
      patterns[#patterns + 1] = { test = test, check = check }
    end
  end
  local np = patterns and #patterns or 0

  -- The value's keys, sorted, when errors are being collected (the order
  -- AJV would follow is the JSON text's, which decoding lost).
  local function value_keys(v)
    local list = {}
    for k in pairs(v) do list[#list + 1] = k end
    sort(list, function(a, b) return tostring(a) < tostring(b) end)
    return list
  end

  if schema.propertyNames ~= nil and draft >= 6 then
    local names
    names, err = sub_schema(schema.propertyNames, where .. "/propertyNames")
    if not names then return nil, err end
    add(function(v, jt, c)
      if jt ~= "object" then return true end
      if c == nil then
        for k in pairs(v) do if not names(tostring(k)) then return false end end
        return true
      end
      local ok = true
      for _, k in ipairs(value_keys(v)) do
        if not names(tostring(k), c) then
          report(c, "propertyNames", "property name must be valid", { propertyName = tostring(k) })
          ok = false
        end
      end
      return ok
    end)
  end

  local additional = schema.additionalProperties
  if additional ~= nil then
    local check
    check, err = sub_schema(additional, where .. "/additionalProperties")
    if not check then return nil, err end
    local function declared(k)
      if props and props[k] then return true end
      if type(k) == "string" then
        for i = 1, np do if patterns[i].test(k) then return true end end
      end
      return false
    end
    local refuse = additional == false
    add(function(v, jt, c)
      if jt ~= "object" then return true end
      if c == nil then
        for k, val in pairs(v) do
          if not declared(k) and not check(val) then return false end
        end
        return true
      end
      local ok = true
      for _, k in ipairs(value_keys(v)) do
        if not declared(k) then
          if refuse then
            report(c, "additionalProperties", "must NOT have additional properties", { additionalProperty = k })
            ok = false
          elseif not at(check, v[k], k, c) then
            ok = false
          end
        end
      end
      return ok
    end)
  end

  -- dependencies (before 2019-09), dependentRequired, dependentSchemas.
  -- kind: "both" (dependencies: a list of names or a schema), "required"
  -- (lists), "schemas".
  local function dependencies(key, kind)
    local map = schema[key]
    if map == nil then return true end
    if type(map) ~= "table" then return bad(key, "is not an object") end
    for _, name in ipairs(keys_of(map, cx)) do
      local d = map[name]
      local is_list = type(d) == "table" and (is_array(d) or next(d) == nil)
      if kind == "required" or kind == "both" and is_list then
        if not is_list then return bad(key, "is not an object of lists of names") end
        local n = #d
        if n > 0 then
          local message = ("must have propert%s %s when property %s is present"):format(
            n == 1 and "y" or "ies", concat(d, ", "), tostring(name))
          add(function(v, jt, c)
            if jt ~= "object" or v[name] == nil then return true end
            local ok = true
            for i = 1, n do
              if v[d[i]] == nil then
                if c == nil then return false end
                report(c, key, message, { property = name, missingProperty = d[i], depsCount = n,
                                          deps = concat(d, ", ") })
                ok = false
              end
            end
            return ok
          end)
        end
      else
        local check
        check, err = sub_schema(d, child(where .. "/" .. key, name))
        if not check then return nil, err end
        add(function(v, jt, c)
          if jt ~= "object" or v[name] == nil then return true end
          return check(v, c)
        end)
      end
    end
    return true
  end
  if draft < 2019 then
    local ok
    ok, err = dependencies("dependencies", "both")
    if not ok then return nil, err end
  end

  if props then
    local n = #prop_names
    add(function(v, jt, c)
      if jt ~= "object" then return true end
      local ok = true
      for i = 1, n do
        local name = prop_names[i]
        local val = v[name]
        if val ~= nil and not at(props[name], val, name, c) then
          if c == nil then return false end
          ok = false
        end
      end
      return ok
    end)
  end
  if patterns then
    add(function(v, jt, c)
      if jt ~= "object" then return true end
      local ok = true
      for i = 1, np do
        local p = patterns[i]
        if c == nil then
          for k, val in pairs(v) do
            if type(k) == "string" and p.test(k) and not p.check(val) then return false end
          end
        else
          for _, k in ipairs(value_keys(v)) do
            if type(k) == "string" and p.test(k) and not at(p.check, v[k], k, c) then ok = false end
          end
        end
      end
      return ok
    end)
  end
  if draft >= 2019 then
    local ok
    ok, err = dependencies("dependentRequired", "required")
    if not ok then return nil, err end
    ok, err = dependencies("dependentSchemas", "schemas")
    if not ok then return nil, err end
  end
  if type_group == "object" then add(type_else) end

  -- The check: every keyword, stopping at the first failure unless errors
  -- are being collected.
  local n = #ks
  local check
  if n == 0 then
    check = always
  elseif n == 1 then
    local k1 = ks[1]
    check = function(v, c) return k1(v, json_type(v), c) end
  else
    check = function(v, c)
      local jt = json_type(v)
      if c == nil then
        for i = 1, n do if not ks[i](v, jt) then return false end end
        return true
      end
      local ok = true
      for i = 1, n do if not ks[i](v, jt, c) then ok = false end end
      return ok
    end
  end
  memo.check = check
  return check
end

--- Compiles a schema (a decoded JSON value, or JSON text). opts:
-- `dialect` ("oas3.0", "oas3.1", 4, 6, 7, 2019, 2020; 2020 when nil),
-- `formats` (true: assert formats as ajv-formats does for Prism),
-- `direction` ("request": readOnly properties are left out, as Prism
-- strips them; "response": writeOnly ones), `merge_allof` (false: keep
-- allOf as it is in the OpenAPI dialects, where it is merged into its
-- schema as Prism merges bodies' schemas), `coerce` (true: a type error
-- is reported first, as AJV with coerceTypes does; for parameters that
-- went through jsonschema.coerce), `root` (what "#/..." $refs point
-- into; the schema when nil), `order` (function(object) -> its keys in
-- document order, or nil; errors follow it; sorted otherwise), `memo` (a
-- table to share between compiles with the same other opts: schemas
-- compiled by identity). Returns v = { valid = function(value) ->
-- boolean (allocates nothing), errors = function(value) -> list of
-- { path, code, message, params } in AJV 8's order }, or nil and what is
-- wrong with the schema.
-- @usage local v = assert(jsonschema.compile(schema, { dialect = "oas3.0", formats = true }))
function jsonschema.compile(schema, opts)
  opts = opts or {}
  local dialect = opts.dialect
  if dialect == nil then dialect = 2020 end
  local draft = DIALECTS[dialect]
  if draft == nil then return nil, ("dialect %s is not one of oas3.0, oas3.1, 4, 6, 7, 2019, 2020"):format(tostring(dialect)) end
  if type(schema) == "string" then
    local v, err = json.decode(schema)
    if v == nil then return nil, "the schema is not JSON: " .. tostring(err) end
    schema = v
  end
  local cx = { root = opts.root or schema, draft = draft, oas = type(dialect) == "string",
               formats = opts.formats == true, direction = opts.direction, coerce = opts.coerce == true,
               order = opts.order, memo = opts.memo or {}, merged_order = setmetatable({}, { __mode = "k" }) }
  cx.merge = cx.oas and opts.merge_allof ~= false
  local check, err = compile_schema(schema, "#", cx)
  if not check then return nil, err end
  local v = {}
  function v.valid(value) return check(value) end
  function v.errors(value)
    local c = { out = {}, path = {}, n = 0 }
    check(value, c)
    return c.out
  end
  return v
end

--- The JSON pointer of an error's path ("/list/1/id"; "" for the whole
-- value), as AJV's instancePath.
-- @usage jsonschema.pointer({ "list", 1 }) -- "/list/1"
function jsonschema.pointer(path)
  local s = ""
  for _, key in ipairs(path) do s = child(s, key) end
  return s
end

-- Coercion (AJV's coerceTypes, which Prism turns on for parameters) ------

-- JavaScript's Number(text), or nil for NaN.
local function js_number(s)
  s = match(s, "^%s*(.-)%s*$")
  if s == "" then return 0 end
  if match(s, "^[+-]?%d+%.?%d*[eE]?[+-]?%d*$") or match(s, "^[+-]?%.%d+[eE]?[+-]?%d*$") then
    if match(s, "[eE]$") or match(s, "[eE][+-]$") then return nil end
    return tonumber(s)
  end
  local sign, rest = match(s, "^([+-]?)(.*)$")
  if rest == "Infinity" then return sign == "-" and -huge or huge end
  if sign ~= "" then return nil end
  local base, d = match(s, "^0([xXoObB])(%w+)$")
  if base then
    local b = (base == "x" or base == "X") and 16 or (base == "o" or base == "O") and 8 or 2
    return tonumber(d, b)
  end
  return nil
end

local function coerce_to(value, t)
  if t == "number" or t == "integer" then
    local n
    if type(value) == "string" then
      if value ~= "" then
        n = js_number(value)
      end
    elseif value == true then n = 1
    elseif value == false or value == null then n = 0
    end
    if n ~= nil and (t == "number" or is_integer(n)) then return n end
  elseif t == "string" then
    if type(value) == "number" then return jsnum(value) end
    if type(value) == "boolean" then return tostring(value) end
    if value == null then return "" end
  elseif t == "boolean" then
    if value == "true" or value == 1 then return true end
    if value == "false" or value == 0 or value == null then return false end
  elseif t == "null" then
    if value == "" or value == 0 or value == false then return null end
  end
  return nil
end

--- A parameter's value to the type its schema wants, as AJV's coerceTypes
-- (Prism's parameter validation) does: "5" -> 5 for a number or integer
-- ("5.5" stays text for an integer), "true"/"false" -> booleans, "" ->
-- null for a null type; a list or an object (already split by the
-- parameter's style) item by item through items/properties. A value that
-- does not convert is returned as it was, for validation to refuse.
-- @usage jsonschema.coerce("5", { type = "integer" }) -- 5
function jsonschema.coerce(value, schema, opts)
  if type(schema) ~= "table" then return value end
  local root = opts and opts.root
  if type(schema["$ref"]) == "string" and root then
    local s = resolve(schema["$ref"], { root = root })
    if type(s) == "table" then schema = s end
  end
  local t = schema.type
  local types = type(t) == "string" and { t } or type(t) == "table" and t or nil
  if types and schema.nullable == true and type(t) == "string" then types = { t, "null" } end
  local jt = json_type(value)
  if types then
    local fits = false
    for _, name in ipairs(types) do
      if name == jt or name == "integer" and jt == "number" and is_integer(value) then fits = true end
    end
    if not fits then
      for _, name in ipairs(types) do
        local v = coerce_to(value, name)
        if v ~= nil then value, jt = v, json_type(v) break end
      end
    end
  end
  if jt == "array" and type(schema.items) == "table" and not is_array(schema.items) then
    for i = 1, #value do value[i] = jsonschema.coerce(value[i], schema.items, opts) end
  elseif jt == "object" and type(schema.properties) == "table" then
    for k, s in pairs(schema.properties) do
      if value[k] ~= nil then value[k] = jsonschema.coerce(value[k], s, opts) end
    end
  end
  return value
end

--- How many keywords a schema holds, counted through its subschemas
-- (WireMock's measure of how far a value is: failures over this).
-- @usage local n = jsonschema.size(schema)
function jsonschema.size(schema, seen)
  if type(schema) ~= "table" then return 0 end
  seen = seen or {}
  if seen[schema] then return 0 end
  seen[schema] = true
  local n = 0
  for k, v in pairs(schema) do
    if type(k) == "string" then n = n + 1 end
    if type(v) == "table" then n = n + jsonschema.size(v, seen) end
  end
  return n
end

return jsonschema
