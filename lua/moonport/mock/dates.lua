--- WireMock's date and time matchers: `before`, `after` and
-- `equalToDateTime`, with `actualFormat`, `expectedOffset` and
-- `expectedOffsetUnit`, `truncateExpected` and `truncateActual`, as
-- WireMock 3 reads them.
--
--     local dates = require("moonport.mock.dates")
--     local m = assert(dates.matcher({ before = "now +1 days" }))
--     m.test("2021-06-14T12:13:14Z") -- true
--
-- A value is a zoned date-time (an instant: ISO-8601 with an offset, RFC
-- 1123, RFC 1036, asctime, or an `actualFormat` with a zone, "unix"
-- seconds or "epoch" milliseconds) or a local one (ISO-8601 without an
-- offset, a date alone at the start of its day, or an `actualFormat`
-- without a zone). A zoned value and a local one compare by the zoned
-- one's own wall clock; "now" is in UTC.
--
-- @module moonport.mock.dates

local type, tostring, tonumber, pairs = type, tostring, tonumber, pairs
local floor, abs, min = math.floor, math.abs, math.min
local match, lower, upper, sub, find = string.match, string.lower, string.upper, string.sub, string.find

local dates = {}

-- Calendar -----------------------------------------------------------------

local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = floor(y / 400)
  local yoe = y - era * 400
  local doy = floor((153 * (m + (m > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m = mp + (mp < 10 and 3 or -9)
  return m <= 2 and y + 1 or y, m, d
end

--- Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
-- algorithm), with no time zone involved; and back, as y, m, d.
dates.days_from_civil, dates.civil_from_days = days_from_civil, civil_from_days

local function leap(y) return y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0) end
local MONTH_DAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }
local function month_length(y, m) return m == 2 and leap(y) and 29 or MONTH_DAYS[m] end

-- A wall-clock time as seconds from 1970-01-01T00:00 (as if in UTC).
local function wall(y, mo, d, h, mi, s)
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s
end

local function fields(t)
  local days = floor(t / 86400)
  local secs = t - days * 86400
  local y, mo, d = civil_from_days(days)
  return y, mo, d, floor(secs / 3600), floor(secs % 3600 / 60), secs % 60
end

local MONTHS = { jan = 1, feb = 2, mar = 3, apr = 4, may = 5, jun = 6, jul = 7, aug = 8,
                 sep = 9, oct = 10, nov = 11, dec = 12 }
local MONTH_NAMES = { january = 1, february = 2, march = 3, april = 4, may = 5, june = 6,
                      july = 7, august = 8, september = 9, october = 10, november = 11,
                      december = 12 }
local DAYS = { mon = true, tue = true, wed = true, thu = true, fri = true, sat = true, sun = true }
local DAY_NAMES = { monday = true, tuesday = true, wednesday = true, thursday = true,
                    friday = true, saturday = true, sunday = true }

-- Whether a date is one the calendar has.
local function valid(y, mo, d, h, mi, s)
  return mo >= 1 and mo <= 12 and d >= 1 and d <= month_length(y, mo)
    and h >= 0 and h <= 23 and mi >= 0 and mi <= 59 and s >= 0 and s < 60
end

-- A value: { at = seconds, offset = seconds } for a zoned one (at is the
-- instant), { at = wall seconds } for a local one.

-- Parsers of WireMock's defaults -------------------------------------------

local function zone_offset(z)
  if z == "Z" or z == "GMT" or z == "UTC" or z == "UT" then return 0 end
  local sign, hh, mm, ss = match(z, "^([+-])(%d%d):(%d%d)$")
  if not sign then sign, hh, mm, ss = match(z, "^([+-])(%d%d):(%d%d):(%d%d)$") end
  if not sign then return nil end
  local o = tonumber(hh) * 3600 + tonumber(mm) * 60 + (tonumber(ss) or 0)
  if tonumber(hh) > 18 or tonumber(mm) > 59 then return nil end
  return sign == "-" and -o or o
end

-- ISO_LOCAL_DATE_TIME's date and time parts: the rest of s after them.
local function iso_local(s)
  local y, mo, d, rest = match(s, "^(%d%d%d%d)%-(%d%d)%-(%d%d)(.*)$")
  if not y then return nil end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  local h, mi, tail = match(rest, "^T(%d%d):(%d%d)(.*)$")
  if not h then return nil, y, mo, d, rest end
  local sec, frac = 0, 0
  local ss, after = match(tail, "^:(%d%d)(.*)$")
  if ss then
    sec, tail = tonumber(ss), after
    local f, after2 = match(tail, "^%.(%d+)(.*)$")
    if f and #f <= 9 then frac, tail = tonumber("0." .. f), after2 end
  end
  if not valid(y, mo, d, tonumber(h), tonumber(mi), sec) then return nil end
  return wall(y, mo, d, tonumber(h), tonumber(mi), sec) + frac, nil, nil, nil, tail
end

local function parse_iso_zoned(s)
  local t, _, _, _, rest = iso_local(s)
  if not t then return nil end
  local z, region = match(rest, "^([Z+-][%d:]*)(.*)$")
  if not z then return nil end
  local o = zone_offset(z)
  if o == nil or not (region == "" or match(region, "^%[[%w/_+%-]+%]$")) then return nil end
  return { at = t - o, offset = o }
end

-- RFC 1123 ("Tue, 3 Jun 2008 11:05:30 GMT", the day name optional).
local function parse_rfc1123(s)
  local rest = match(s, "^%a%a%a, (.*)$") or s
  local day = match(s, "^(%a%a%a), ")
  if day and not DAYS[lower(day)] then return nil end
  local d, mon, y, h, mi, tail = match(rest, "^(%d%d?) (%a%a%a) (%d%d%d%d) (%d%d):(%d%d)(.*)$")
  if not d then return nil end
  local sec = 0
  local ss, after = match(tail, "^:(%d%d)(.*)$")
  if ss then sec, tail = tonumber(ss), after end
  local z = match(tail, "^ (%S+)$")
  local mo = MONTHS[lower(mon)]
  if not z or not mo or mon ~= upper(sub(mon, 1, 1)) .. lower(sub(mon, 2)) then return nil end
  local o
  if z == "GMT" then o = 0 else
    local sign, hh, mm = match(z, "^([+-])(%d%d)(%d%d)$")
    if not sign then return nil end
    o = (tonumber(hh) * 3600 + tonumber(mm) * 60) * (sign == "-" and -1 or 1)
  end
  y, d, h, mi = tonumber(y), tonumber(d), tonumber(h), tonumber(mi)
  if not valid(y, mo, d, h, mi, sec) then return nil end
  return { at = wall(y, mo, d, h, mi, sec) - o, offset = o }
end

-- RFC 1036 ("Sunday, 06-Nov-94 08:49:37 GMT").
local function parse_rfc1036(s)
  local day, d, mon, y, h, mi, sec, z = match(s, "^(%a+), (%d%d)%-(%a%a%a)%-(%d%d) (%d%d):(%d%d):(%d%d) (%a+)$")
  if not day or not DAY_NAMES[lower(day)] then return nil end
  local mo, o = MONTHS[lower(mon)], zone_offset(z)
  if not mo or not o then return nil end
  y, d, h, mi, sec = 2000 + tonumber(y), tonumber(d), tonumber(h), tonumber(mi), tonumber(sec)
  if not valid(y, mo, d, h, mi, sec) then return nil end
  return { at = wall(y, mo, d, h, mi, sec) - o, offset = o }
end

-- asctime ("Sun Nov  6 08:49:37 1994"), in GMT.
local function parse_asctime(s)
  local day, mon, d, h, mi, sec, y = match(s, "^(%a%a%a) (%a%a%a) ([ %d]%d) (%d%d):(%d%d):(%d%d) (%d%d%d%d)$")
  if not day or not DAYS[lower(day)] then return nil end
  local mo = MONTHS[lower(mon)]
  if not mo then return nil end
  d = tonumber(match(d, "%d+"))
  y, h, mi, sec = tonumber(y), tonumber(h), tonumber(mi), tonumber(sec)
  if not valid(y, mo, d, h, mi, sec) then return nil end
  return { at = wall(y, mo, d, h, mi, sec), offset = 0 }
end

local function parse_zoned_default(s)
  return parse_iso_zoned(s) or parse_rfc1123(s) or parse_rfc1036(s) or parse_asctime(s)
end

local function parse_local_default(s)
  local t, y, mo, d, rest = iso_local(s)
  if t then return rest == "" and { at = t } or nil end
  if y and rest == "" and valid(y, mo, d, 0, 0, 0) then return { at = wall(y, mo, d, 0, 0, 0) } end
  return nil
end

-- actualFormat: Java's DateTimeFormatter patterns ----------------------------

-- Compiles a pattern into function(s) -> the fields it read, or nil.
local function compile_format(fmt)
  local steps = {}
  local i, n = 1, #fmt
  while i <= n do
    local c = sub(fmt, i, i)
    if c == "'" then
      local j = find(fmt, "'", i + 1, true)
      if not j then return nil, "unterminated quote in date format " .. fmt end
      local lit = j == i + 1 and "'" or sub(fmt, i + 1, j - 1)
      steps[#steps + 1] = { lit = lit }
      i = j + 1
    elseif match(c, "%a") then
      local j = i
      while sub(fmt, j + 1, j + 1) == c do j = j + 1 end
      local count = j - i + 1
      if not find("yuMLdHhmsSaEzZXx", c, 1, true) then
        return nil, ("date format %s: pattern letter '%s' is not supported"):format(fmt, c)
      end
      steps[#steps + 1] = { letter = c, count = count }
      i = j + 1
    else
      steps[#steps + 1] = { lit = c }
      i = i + 1
    end
  end
  return function(s)
    local pos, f = 1, {}
    for k = 1, #steps do
      local st = steps[k]
      if st.lit then
        if sub(s, pos, pos + #st.lit - 1) ~= st.lit then return nil end
        pos = pos + #st.lit
      else
        local c, count = st.letter, st.count
        local nxt = steps[k + 1]
        local adjacent = nxt and nxt.letter and find("yuMLdHhmsS", nxt.letter, 1, true)
        if c == "M" and count >= 3 or c == "L" and count >= 3 then
          local word = match(s, "^%a+", pos)
          local mo = word and (count == 3 and MONTHS[lower(word)] or MONTH_NAMES[lower(word)])
          if not mo then return nil end
          f.M, pos = mo, pos + #word
        elseif c == "E" then
          local word = match(s, "^%a+", pos)
          if not word or not (count <= 3 and DAYS[lower(word)] or count >= 4 and DAY_NAMES[lower(word)]) then
            return nil
          end
          pos = pos + #word
        elseif c == "a" then
          local ap = match(s, "^[AaPp][Mm]", pos)
          if not ap then return nil end
          f.a, pos = lower(ap), pos + 2
        elseif c == "z" or c == "Z" or c == "X" or c == "x" then
          local z = match(s, "^Z", pos) and (c == "X" or c == "z") and "Z"
            or match(s, "^[+-]%d%d:%d%d", pos) or match(s, "^[+-]%d%d%d%d", pos)
            or match(s, "^[+-]%d%d", pos) or (c == "z" and match(s, "^%a+", pos))
            or (c == "Z" and count == 4 and match(s, "^GMT[+-]%d%d:%d%d", pos))
          if not z then return nil end
          pos = pos + #z
          local zz = z:gsub("^GMT([+-])", "%1")
          local o
          if zz == "Z" or zz == "GMT" or zz == "UTC" or zz == "UT" then o = 0
          else
            local sign, hh, mm = match(zz, "^([+-])(%d%d):?(%d?%d?)$")
            if not sign then return nil end
            o = (tonumber(hh) * 3600 + (tonumber(mm) or 0) * 60) * (sign == "-" and -1 or 1)
          end
          f.offset = o
        else
          local digits
          if c == "S" then
            digits = match(s, "^" .. ("%d"):rep(count), pos)
          elseif count >= 2 and not (c == "y" or c == "u") or adjacent or count == 2 then
            digits = match(s, "^" .. ("%d"):rep(count), pos)
          else
            digits = match(s, "^%d+", pos)
            if digits and #digits > 19 then return nil end
          end
          if not digits then return nil end
          pos = pos + #digits
          local v = tonumber(digits)
          if c == "y" or c == "u" then
            f.y = count == 2 and 2000 + v or v
          elseif c == "L" then f.M = v
          elseif c == "S" then f.S = tonumber("0." .. digits)
          else f[c] = v end
        end
      end
    end
    if pos <= #s then return nil end
    return f
  end
end

-- The zoned and local values a format's fields make.
local function from_fields(f)
  if not (f.y and f.M and f.d) then return nil, nil end
  local y, mo, d = f.y, f.M, f.d
  if mo < 1 or mo > 12 or d < 1 or d > 31 then return nil, nil end
  -- Java's default (smart) resolver takes the 31st of a shorter month as
  -- its last day.
  if d > month_length(y, mo) then d = month_length(y, mo) end
  local h = f.H
  if h == nil and f.h then
    if f.h < 1 or f.h > 12 then return nil, nil end
    h = f.h % 12 + (f.a == "pm" and 12 or 0)
  end
  local date_only = wall(y, mo, d, 0, 0, 0)
  if h == nil then return nil, { at = date_only } end
  local mi, s = f.m or 0, f.s or 0
  if not valid(y, mo, d, h, mi, s) then return nil, nil end
  local t = wall(y, mo, d, h, mi, s) + (f.S or 0)
  local zoned = f.offset and { at = t - f.offset, offset = f.offset } or nil
  return zoned, { at = t }
end

-- Returns parse(s) -> zoned, local for actualFormat, or nil and an error.
local function actual_parser(format)
  local lf = lower(format)
  if lf == "unix" or lf == "epoch" then
    local scale = lf == "unix" and 1 or 0.001
    return function(s)
      if not match(s, "^[+-]?%d+$") then return nil, nil end
      local t = tonumber(s) * scale
      return { at = t, offset = 0 }, { at = t }
    end
  end
  local parse, err = compile_format(format)
  if not parse then return nil, err end
  return function(s)
    local f = parse(s)
    if not f then return nil, nil end
    return from_fields(f)
  end
end

--- A parser of date-times: function(s) -> zoned, local (either may be
-- nil), with format (Java's DateTimeFormatter pattern, "unix" or "epoch")
-- or WireMock's defaults when it is nil. nil and a message for a pattern
-- it cannot read.
-- @usage local zoned, loc = dates.parser("dd/MM/yyyy")("14/06/2021")
function dates.parser(format)
  if format ~= nil then return actual_parser(format) end
  return function(s) return parse_zoned_default(s), parse_local_default(s) end
end

-- Offsets and truncation ---------------------------------------------------

local UNITS = { seconds = 1, minutes = 60, hours = 3600, days = 86400, months = "months",
                years = "years" }

-- v shifted by amount units, on its own wall clock.
local function shift(v, amount, unit)
  local size = UNITS[unit]
  if type(size) == "number" then return { at = v.at + amount * size, offset = v.offset } end
  local o = v.offset or 0
  local y, mo, d, h, mi, s = fields(v.at + o)
  local months = size == "years" and amount * 12 or amount
  local total = y * 12 + (mo - 1) + months
  y, mo = floor(total / 12), total % 12 + 1
  if d > month_length(y, mo) then d = month_length(y, mo) end
  return { at = wall(y, mo, d, h, mi, s) - o, offset = v.offset }
end

local TRUNCATIONS = {
  first_second_of_minute = function(y, mo, d, h, mi) return y, mo, d, h, mi end,
  first_minute_of_hour = function(y, mo, d, h) return y, mo, d, h, 0 end,
  first_hour_of_day = function(y, mo, d) return y, mo, d, 0, 0 end,
  first_day_of_month = function(y, mo) return y, mo, 1, 0, 0 end,
  first_day_of_next_month = function(y, mo)
    if mo == 12 then return y + 1, 1, 1, 0, 0 end
    return y, mo + 1, 1, 0, 0
  end,
  last_day_of_month = function(y, mo) return y, mo, month_length(y, mo), 0, 0 end,
  first_day_of_year = function(y) return y, 1, 1, 0, 0 end,
  first_day_of_next_year = function(y) return y + 1, 1, 1, 0, 0 end,
  last_day_of_year = function(y) return y, 12, 31, 0, 0 end,
}

local function truncation(name)
  if name == nil then return nil end
  local key = lower(tostring(name)):gsub("[ %-]", "_")
  local fn = TRUNCATIONS[key]
  if fn == nil then
    local known = {}
    for k in pairs(TRUNCATIONS) do known[#known + 1] = (k:gsub("_", " ")) end
    table.sort(known)
    return nil, ("%q is not a truncation (%s)"):format(tostring(name), table.concat(known, ", "))
  end
  return function(v)
    local o = v.offset or 0
    local y, mo, d, h, mi = fn(fields(v.at + o))
    return { at = wall(y, mo, d, h, mi, 0) - o, offset = v.offset }
  end
end

-- The matcher --------------------------------------------------------------

local COMPARE = {
  before = function(a, e) return a < e end,
  after = function(a, e) return a > e end,
  equal_to_date_time = function(a, e) return a == e end,
}
local NAMES = { before = "before", after = "after", equal_to_date_time = "equalToDateTime" }

--- Whether m (a matcher table) is a date matcher.
-- @usage if dates.is_matcher(m) then ... end
function dates.is_matcher(m)
  return m.before ~= nil or m.after ~= nil or m.equal_to_date_time ~= nil
end

--- Compiles a date matcher: { before | after | equal_to_date_time = spec,
-- actual_format, expected_offset, expected_offset_unit,
-- truncate_expected, truncate_actual }. spec is "now", "now +3 days",
-- "-1 months", or a date-time (zoned or local). Returns { test =
-- function(v) -> ok, explain = function(v) -> why, distance }, or nil
-- and what is wrong.
-- @usage local m = assert(dates.matcher({ after = "2024-01-01T00:00:00Z" }))
function dates.matcher(m, what)
  local kind = m.before ~= nil and "before" or m.after ~= nil and "after" or "equal_to_date_time"
  local spec = tostring(m[kind])
  local name = NAMES[kind]
  local err
  local offset_amount, offset_unit
  local zoned_expected, local_expected
  local rest = spec:gsub("[Nn][Oo][Ww] ", "")
  if lower(spec) == "now" or match(rest, "^[-+]?%d+ %a+$") then
    if m.expected_offset ~= nil and m.expected_offset_unit ~= nil then
      offset_amount, offset_unit = tonumber(m.expected_offset), lower(tostring(m.expected_offset_unit))
      if offset_amount == nil then return nil, what .. ": expectedOffset is not a number" end
    elseif lower(spec) == "now" then
      offset_amount, offset_unit = 0, "seconds"
    else
      local a, u = match(rest, "^([-+]?%d+) (%a+)$")
      offset_amount, offset_unit = tonumber(a), lower(u)
    end
    if UNITS[offset_unit] == nil then
      return nil, ("%s: %s: %q is not a unit (seconds, minutes, hours, days, months, years)")
        :format(what, name, offset_unit)
    end
  else
    zoned_expected, local_expected = parse_zoned_default(spec), parse_local_default(spec)
    if not zoned_expected and not local_expected then
      return nil, ("%s: %s: %q is not a date-time WireMock reads (ISO-8601, RFC 1123, "
        .. "or now +/-N units)"):format(what, name, spec)
    end
  end
  local parse = nil
  if m.actual_format ~= nil then
    parse, err = actual_parser(tostring(m.actual_format))
    if not parse then return nil, what .. ": actualFormat: " .. err end
  end
  local trunc_expected, trunc_actual
  trunc_expected, err = truncation(m.truncate_expected)
  if err then return nil, what .. ": truncateExpected: " .. err end
  trunc_actual, err = truncation(m.truncate_actual)
  if err then return nil, what .. ": truncateActual: " .. err end
  local cmp = COMPARE[kind]

  -- The two values compared, or nil when the matcher has nothing to
  -- compare (a value it cannot read).
  local function operands(v)
    if v == nil then return nil end
    local za, la
    if parse then za, la = parse(v) else za, la = parse_zoned_default(v), parse_local_default(v) end
    if za and trunc_actual then za = trunc_actual(za) end
    local ze = zoned_expected
    if offset_amount then
      local now = { at = os.time(), offset = 0 }
      if trunc_expected then now = trunc_expected(now) end
      ze = shift(now, offset_amount, offset_unit)
    end
    if ze and za then return za.at, ze.at end
    if local_expected and la then return la.at, local_expected.at end
    if local_expected and za then return za.at + za.offset, local_expected.at end
    if ze and la then return la.at, ze.at end
    return nil
  end
  return {
    test = function(v)
      local a, e = operands(v)
      return a ~= nil and cmp(a, e)
    end,
    explain = function(v)
      local a, e = operands(v)
      if a == nil then
        return ("%s %s is not a date-time"):format(what, v and ("%q"):format(v) or "(absent)"), 1
      end
      local years = floor(abs(a - e) / (365.2425 * 86400))
      return ("%s %q is not %s %s"):format(what, v, name, spec), min(years / 100, 1)
    end,
  }
end

return dates
