-- JSON compared as JSON, for the compatibility specs: a decoder that
-- marks arrays (so that [] and {} differ, which the cjson here cannot
-- tell apart) and the first difference between two decoded values.
local cjson = require("cjson")

local M = {}

local ARRAY = {}
M.ARRAY = ARRAY

--- Whether t was a JSON array.
function M.is_array(t)
  return getmetatable(t) == ARRAY
end

--- Decodes text; raises with the byte offset when it is not JSON.
function M.decode(text)
  local pos = 1
  local function fail(msg) error(("%s at byte %d"):format(msg, pos), 0) end
  local function skip() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local value
  local function string_value()
    local out = {}
    pos = pos + 1
    while true do
      local c = text:sub(pos, pos)
      if c == "" then fail("unterminated string") end
      if c == '"' then pos = pos + 1 break end
      if c == "\\" then
        local e = text:sub(pos + 1, pos + 1)
        if e == "u" then
          out[#out + 1] = cjson.decode('"' .. text:sub(pos, pos + 5) .. '"')
          pos = pos + 6
        else
          out[#out + 1] = ({ b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" })[e] or e
          pos = pos + 2
        end
      else
        local j = text:find('["\\]', pos) or #text + 1
        out[#out + 1] = text:sub(pos, j - 1)
        pos = j
      end
    end
    return table.concat(out)
  end
  function value()
    skip()
    local c = text:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1
      skip()
      if text:sub(pos, pos) == "}" then pos = pos + 1 return t end
      while true do
        skip()
        if text:sub(pos, pos) ~= '"' then fail("expected a key") end
        local k = string_value()
        skip()
        if text:sub(pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        t[k] = value()
        skip()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return t end
        if d ~= "," then fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      local t = setmetatable({}, ARRAY)
      pos = pos + 1
      skip()
      if text:sub(pos, pos) == "]" then pos = pos + 1 return t end
      while true do
        t[#t + 1] = value()
        skip()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return t end
        if d ~= "," then fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return string_value()
    elseif text:find("^true", pos) then pos = pos + 4 return true
    elseif text:find("^false", pos) then pos = pos + 5 return false
    elseif text:find("^null", pos) then pos = pos + 4 return cjson.null
    else
      local num = text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" then fail("unexpected " .. c) end
      pos = pos + #num
      return tonumber(num)
    end
  end
  local v = value()
  skip()
  if pos <= #text then fail("text after the value") end
  return v
end

--- The decoded value, or nil when text is not JSON.
function M.try_decode(text)
  local ok, v = pcall(M.decode, text)
  if ok then return v end
end

local function encode(v)
  local ok, text = pcall(cjson.encode, v)
  return ok and text or tostring(v)
end
M.encode = encode

--- Where a and b (decoded JSON) first differ, as a path and the two
-- values (`a_name`'s and `b_name`'s); nil when they are equal.
function M.diff(a, b, a_name, b_name, path)
  path = path or "$"
  if type(a) ~= type(b) then
    return ("%s: %s vs %s"):format(path, encode(a), encode(b))
  end
  if type(a) ~= "table" then
    if a ~= b then return ("%s: %s vs %s"):format(path, encode(a), encode(b)) end
    return nil
  end
  if a == cjson.null or b == cjson.null then
    if a ~= b then return path .. ": null vs not null" end
    return nil
  end
  if M.is_array(a) ~= M.is_array(b) then
    return path .. (M.is_array(a) and ": array vs object" or ": object vs array")
  end
  for k, v in pairs(a) do
    local sub = type(k) == "number" and ("%s[%d]"):format(path, k - 1) or (path .. "." .. k)
    if b[k] == nil then return sub .. ": only in " .. a_name .. "'s" end
    local d = M.diff(v, b[k], a_name, b_name, sub)
    if d then return d end
  end
  for k in pairs(b) do
    if a[k] == nil then
      return (type(k) == "number" and ("%s[%d]"):format(path, k - 1) or (path .. "." .. k))
        .. ": only in " .. b_name .. "'s"
    end
  end
  return nil
end

return M
