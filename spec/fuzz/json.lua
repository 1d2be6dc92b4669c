-- fuzz_json (spec/fuzz/fuzz_lua.c): moonport.json (server/lua/json.c) on
-- arbitrary text. Returns the function each input is given to; an error
-- out of it is a failed invariant.
--
-- - decode never raises on a string: it gives a value, or nil and
--   "<what> at byte N" with N within the text;
-- - with literals, it accepts the same texts, and numbers past the range
--   of doubles, which it keeps as written; each literal reads back as the
--   number decoded without them;
-- - a decoded value encodes without raising, to a text that decodes to an
--   equal value (array markers, -0 and literals' text included), and
--   json._encode_buffer writes the same text as json.encode;
-- - lua-cjson, a decoder that shares no code with it and accepts more,
--   reads what it accepts as the same value (arrays aside, which cjson
--   does not mark).
-- Running out of the state's memory or instruction budget is a normal
-- outcome (the server's request limits).
local json = require("moonport.json")
local ffi = require("ffi")
local has_cjson, cjson = pcall(require, "cjson")

local array_mt, literal_mt = json.array_mt, json.literal_mt
local type, pairs, getmetatable, tostring, tonumber = type, pairs, getmetatable, tostring, tonumber

local function limit(err)
  err = tostring(err)
  return err:find("not enough memory", 1, true) or err:find("fuzz: instruction budget", 1, true)
end

-- A literal's number, as decode reads its text without literals (LuaJIT's
-- tonumber gives nil for an exponent of many digits, "1e-99999").
local function number_of(lit)
  return (json.decode(tostring(lit)))
end

-- Equal values; `loose` ignores array markers and reads literals as numbers.
local function same(a, b, loose)
  if loose then
    if getmetatable(a) == literal_mt then a = number_of(a) end
    if getmetatable(b) == literal_mt then b = number_of(b) end
  end
  local ta = type(a)
  if ta ~= type(b) then return false end
  if ta == "number" then
    if a ~= a then return b ~= b end
    return a == b and (a ~= 0 or 1 / a == 1 / b)
  end
  if ta == "userdata" then
    if getmetatable(a) == literal_mt or getmetatable(b) == literal_mt then
      return getmetatable(a) == getmetatable(b) and tostring(a) == tostring(b)
    end
    return a == b
  end
  if ta ~= "table" then return a == b end
  if not loose and (getmetatable(a) == array_mt) ~= (getmetatable(b) == array_mt) then
    return false
  end
  for k, v in pairs(a) do
    if not same(v, b[k], loose) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local function check_error(text, err)
  assert(type(err) == "string", "decode failed without a message")
  local at = tonumber(err:match(" at byte (%d+)"))
  assert(at and at <= #text, "a decode error without its byte within the text: " .. err)
end

local function round_trip(v, opts)
  local ok, text = pcall(json.encode, v)
  if not ok then
    if limit(text) then return end
    error("a decoded value does not encode: " .. tostring(text))
  end
  local ok2, ptr, n = pcall(json._encode_buffer, v)
  if ok2 then
    local again = type(ptr) == "string" and ptr or ffi.string(ptr, n)
    assert(again == text, "json._encode_buffer and json.encode differ")
  elseif not limit(ptr) then
    error(ptr)
  end
  local back, err = json.decode(text, opts)
  if back == nil and limit(err) then return end
  assert(back ~= nil, "json.encode wrote what json.decode refuses: " .. tostring(err))
  assert(same(v, back), "the value changed through encode and decode: " .. text)
end

return function(text)
  local ok, v, err = pcall(json.decode, text)
  if not ok then
    if limit(v) then return end
    error("json.decode raised: " .. tostring(v))
  end
  local okl, lv, lerr = pcall(json.decode, text, { literals = true })
  if not okl then
    if limit(lv) then return end
    error("json.decode with literals raised: " .. tostring(lv))
  end
  if v == nil then
    if limit(err) then return end
    check_error(text, err)
    if lv ~= nil then
      -- Literals keep a number's text, so one past the range of doubles
      -- is kept, not refused (README.md, "moonport.json").
      assert(err:find("^number out of range"), "only the literal mode accepts the text: " .. err)
      round_trip(lv, { literals = true })
    end
    return
  end
  if lv == nil and limit(lerr) then return end
  assert(lv ~= nil, "only the number mode accepts the text: " .. tostring(lerr))
  assert(same(lv, v, true), "the literals do not read as the numbers")
  round_trip(v)
  round_trip(lv, { literals = true })
  if has_cjson then
    local cok, c = pcall(cjson.decode, text)
    if not cok then
      if tostring(c):find("nested", 1, true) or limit(c) then return end
      error("lua-cjson refuses what moonport.json accepts: " .. tostring(c))
    end
    assert(same(v, c, true), "lua-cjson reads the text as another value")
  end
end
