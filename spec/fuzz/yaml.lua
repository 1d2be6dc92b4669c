-- fuzz_yaml (spec/fuzz/fuzz_lua.c): moonport.yaml (server/lua/yaml_module.c)
-- on arbitrary text. Returns the function each input is given to; an
-- error out of it is a failed invariant.
--
-- - decode never raises on a string: it gives a value, or nil and
--   "line L column C: <what>" with L within the text's lines (and one
--   past them, where the text ends);
-- - a value is made of strings, numbers, booleans, json.null and tables;
--   a table is a sequence carrying json.array_mt with items 1..n and no
--   other key, or a mapping whose keys are all strings;
-- - a value without cycles, NaN or infinities encodes as JSON, and the
--   JSON reads back as the same value.
-- Running out of the state's memory or instruction budget is a normal
-- outcome (the server's request limits).
local yaml = require("moonport.yaml")
local json = require("moonport.json")

local array_mt, null = json.array_mt, json.null
local type, pairs, getmetatable, tostring = type, pairs, getmetatable, tostring

local function limit(err)
  err = tostring(err)
  return err:find("not enough memory", 1, true) or err:find("fuzz: instruction budget", 1, true)
end

-- Checks the shape of v; returns whether JSON can hold it (no cycle, no
-- NaN or infinity).
local function check(v, seen)
  local t = type(v)
  if t == "string" or t == "boolean" or v == null then return true end
  if t == "number" then return v == v and v ~= math.huge and v ~= -math.huge end
  assert(t == "table", "a value of type " .. t)
  if seen[v] then return false end
  seen[v] = true
  local plain = true
  if getmetatable(v) == array_mt then
    local n = #v
    for k, item in pairs(v) do
      assert(type(k) == "number" and k >= 1 and k <= n and k % 1 == 0, "a sequence with the key " .. tostring(k))
      plain = check(item, seen) and plain
    end
  else
    assert(getmetatable(v) == nil, "a mapping with a metatable")
    for k, item in pairs(v) do
      assert(type(k) == "string", "a mapping key of type " .. type(k))
      plain = check(item, seen) and plain
    end
  end
  seen[v] = nil
  return plain
end

local function same(a, b)
  if type(a) ~= "table" then return a == b end
  if type(b) ~= "table" or getmetatable(a) ~= getmetatable(b) then return false end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

return function(text)
  local ok, v, err = pcall(yaml.decode, text)
  if not ok then
    if limit(v) then return end
    error("yaml.decode raised: " .. tostring(v))
  end
  if v == nil then
    if limit(err) then return end
    assert(type(err) == "string", "decode failed without a message")
    local line = tonumber(err:match("^line (%d+) column %d+: ."))
    assert(line, "a decode error without its line and column: " .. err)
    local _, lines = text:gsub("[\n\r]", "")
    assert(line <= lines + 2, "a decode error past the text's lines: " .. err)
    return
  end
  if not check(v, {}) then return end
  local eok, encoded = pcall(json.encode, v)
  if not eok then
    if limit(encoded) or tostring(encoded):find("nested", 1, true) then return end
    error("a decoded value does not encode: " .. tostring(encoded))
  end
  local back = json.decode(encoded)
  if back == nil then return end
  assert(same(v, back), "the value changed through JSON: " .. encoded)
end
