--- Percent-encoding and query strings: moonport.url.decode, encode,
-- parse_query and build_query. Decoding is the core's own (the decoder
-- req:query uses, through core/url.lua), so a value decodes the same
-- whichever of them reads it.
--
--     local url = require("moonport").url
--     url.parse_query("tag=a&tag=b&q=x+y")  --> {tag = {"a", "b"}, q = "x y"}
--     url.build_query({q = "x y", page = 2}) --> "page=2&q=x%20y"
--
-- @module moonport.url

local unescape = require("moonport.core.url").unescape

local type, error, tostring, pairs, ipairs = type, error, tostring, pairs, ipairs
local byte, format, gsub, find, sub = string.byte, string.format, string.gsub, string.find, string.sub
local sort, concat = table.sort, table.concat

local url = {}

--- s percent-decoded: %XX becomes its byte, and a "%" not followed by two
-- hex digits stays as it is. With plus_space, "+" becomes a space too (as
-- in query strings and form bodies: url.parse_query decodes so).
-- @usage url.decode("caf%C3%A9%20au+lait")       --> "café au+lait"
-- @usage url.decode("caf%C3%A9%20au+lait", true) --> "café au lait"
function url.decode(s, plus_space)
  if type(s) ~= "string" then
    if type(s) ~= "number" then error("moonport.url.decode: s must be a string", 2) end
    s = tostring(s)
  end
  return unescape(s, plus_space)
end

-- %XX for the byte of c.
local function pct(c) return format("%%%02X", byte(c)) end

--- s percent-encoded as a URI component: every byte but ALPHA, DIGIT,
-- "-", ".", "_" and "~" (RFC 3986's unreserved characters) as %XX, a
-- space too (as %20, or as "+" with plus_space, the form encoding).
-- @usage url.encode("a b&c=d/é") --> "a%20b%26c%3Dd%2F%C3%A9"
function url.encode(s, plus_space)
  if type(s) ~= "string" then
    if type(s) ~= "number" then error("moonport.url.encode: s must be a string", 2) end
    s = tostring(s)
  end
  if plus_space then
    return (gsub(gsub(s, "[^A-Za-z0-9%-%._~ ]", pct), " ", "+"))
  end
  return (gsub(s, "[^A-Za-z0-9%-%._~]", pct))
end

--- A query string (or an application/x-www-form-urlencoded body) as a
-- table: pairs split on "&", each name and value percent-decoded with "+"
-- as a space. A name given once has its value as a string; a name
-- repeated has the list of its values, in order; a pair without "=" has
-- the value "" (as req:query). Empty pairs and pairs with an empty name
-- are skipped.
-- @usage url.parse_query("a=1&b=x+y&a=2&flag") --> {a = {"1", "2"}, b = "x y", flag = ""}
function url.parse_query(s)
  if type(s) ~= "string" then error("moonport.url.parse_query: s must be a string", 2) end
  local t = {}
  local len = #s
  local i = 1
  while i <= len do
    local j = find(s, "&", i, true) or len + 1
    if j > i then
      local eq = find(s, "=", i, true)
      local name, value
      if eq and eq < j then
        name, value = sub(s, i, eq - 1), unescape(sub(s, eq + 1, j - 1), true)
      else
        name, value = sub(s, i, j - 1), ""
      end
      if name ~= "" then
        name = unescape(name, true)
        local seen = t[name]
        if seen == nil then
          t[name] = value
        elseif type(seen) == "table" then
          seen[#seen + 1] = value
        else
          t[name] = { seen, value }
        end
      end
    end
    i = j + 1
  end
  return t
end

-- Adds name=value for value (a string, number or boolean) to parts.
local function add(parts, name, value)
  local t = type(value)
  if t == "string" or t == "number" then
    parts[#parts + 1] = name .. "=" .. url.encode(value)
  elseif value == true then
    parts[#parts + 1] = name
  elseif value ~= false then
    error("moonport.url.build_query: a value must be a string, number, "
          .. "boolean or list of them, not " .. t, 3)
  end
end

--- A query string from a table, names in sorted order: a string or
-- number value as name=value, true as the name alone, false left out, a
-- list as the name repeated; names and values encoded by url.encode (a
-- space as %20, which every decoder reads as a space).
-- @usage url.build_query({q = "x y", tag = {"a", "b"}}) --> "q=x%20y&tag=a&tag=b"
function url.build_query(t)
  if type(t) ~= "table" then error("moonport.url.build_query: t must be a table", 2) end
  local names = {}
  for name in pairs(t) do
    if type(name) ~= "string" then
      error("moonport.url.build_query: names must be strings, not " .. type(name), 2)
    end
    names[#names + 1] = name
  end
  sort(names)
  local parts = {}
  for _, name in ipairs(names) do
    local value = t[name]
    local encoded = url.encode(name)
    if type(value) == "table" then
      for i = 1, #value do add(parts, encoded, value[i]) end
    else
      add(parts, encoded, value)
    end
  end
  return concat(parts, "&")
end

return url
