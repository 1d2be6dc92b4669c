--- URI escaping and query strings as OpenResty has them: ngx.escape_uri,
-- ngx.unescape_uri, ngx.encode_args and ngx.decode_args. Plain Lua.
-- @module moonport.ngx.args

local type, error, tostring, pairs, ipairs = type, error, tostring, pairs, ipairs
local byte, char, format, gsub, find, sub = string.byte, string.char, string.format, string.gsub, string.find, string.sub
local tonumber, sort, concat = tonumber, table.sort, table.concat

local args = {}

-- Escaped forms by byte, for type 2 (a URI component: all but ALPHA,
-- DIGIT, "-", ".", "_" and "~") and type 0 (a whole URI: space, "#",
-- "%", "?", controls and bytes past 0x7e), lua-nginx-module's tables.
local component, uri = {}, {}
for b = 0, 255 do
  local c = char(b)
  local escaped = format("%%%02X", b)
  if not c:find("^[%w%-%._~]$") then component[c] = escaped end
  if b <= 0x20 or b >= 0x7f or c == "#" or c == "%" or c == "?" then uri[c] = escaped end
end

--- Escapes s as a URI component (type 2, the default: every byte but
-- ALPHA, DIGIT, "-", ".", "_" and "~" as %XX) or as a URI (type 0: space,
-- "#", "%", "?", control bytes and bytes past 0x7e).
-- @usage args.escape_uri("a b&c") --> "a%20b%26c"
function args.escape_uri(s, kind)
  if type(s) ~= "string" then
    if s == nil then return "" end
    s = tostring(s)
  end
  local map = component
  if kind ~= nil and kind ~= 2 then
    if kind ~= 0 then error("ngx.escape_uri: type must be 0 or 2", 2) end
    map = uri
  end
  return (gsub(s, "[^%w%-%._~]", map))
end

local function hex_byte(h) return char(tonumber(h, 16)) end

--- Unescapes a URI component: %XX sequences become their bytes and "+" a
-- space; a "%" not followed by two hex digits stays as it is.
-- @usage args.unescape_uri("b%20r56+7") --> "b r56 7"
function args.unescape_uri(s)
  if type(s) ~= "string" then
    if s == nil then return "" end
    s = tostring(s)
  end
  if not find(s, "[%%+]") then return s end
  return (gsub(gsub(s, "+", " "), "%%(%x%x)", hex_byte))
end
local unescape = args.unescape_uri

local function escape(s) return (gsub(s, "[^%w%-%._~]", component)) end

-- Adds key's value v (a string, number or boolean) to parts.
local function add(parts, key, v)
  local t = type(v)
  if t == "string" then
    parts[#parts + 1] = key .. "=" .. escape(v)
  elseif t == "number" then
    parts[#parts + 1] = key .. "=" .. escape(tostring(v))
  elseif v == true then
    parts[#parts + 1] = key
  elseif v ~= false then
    error("ngx.encode_args: attempt to use " .. t .. " as query arg value", 4)
  end
end

--- A query string from a table: string and number values as key=value,
-- true as the key alone, false left out, an array as the key repeated;
-- keys and values escaped as URI components, keys in sorted order.
-- @usage args.encode_args({foo = 3, ["b r"] = "hello world"}) --> "b%20r=hello%20world&foo=3"
function args.encode_args(t)
  if type(t) ~= "table" then error("ngx.encode_args: table expected", 2) end
  local keys = {}
  for k in pairs(t) do
    local kt = type(k)
    if kt ~= "string" and kt ~= "number" then
      error("ngx.encode_args: attempt to use " .. kt .. " as query arg key", 2)
    end
    keys[#keys + 1] = tostring(k)
  end
  sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = t[k]
    if v == nil then v = t[tonumber(k)] end
    local key = escape(k)
    if type(v) == "table" then
      for _, item in ipairs(v) do add(parts, key, item) end
    else
      add(parts, key, v)
    end
  end
  return concat(parts, "&")
end

--- A table from a query string: key=value pairs unescaped (with "+" as a
-- space), a key without "=" as true, repeated keys as an array of their
-- values in order; pairs with an empty key are left out. At most max_args
-- pairs (default 100; 0 for all) are read: past them the table comes with
-- a second result, "truncated".
-- @usage args.decode_args("a=1&b&a=2") --> {a = {"1", "2"}, b = true}
function args.decode_args(s, max_args)
  if type(s) ~= "string" then error("ngx.decode_args: string expected", 2) end
  max_args = max_args or 100
  local t, n = {}, 0
  local pos, len = 1, #s
  while pos <= len do
    local amp = find(s, "&", pos, true) or len + 1
    if amp > pos then
      if max_args > 0 and n >= max_args then return t, "truncated" end
      n = n + 1
      local piece = sub(s, pos, amp - 1)
      local eq = find(piece, "=", 1, true)
      local key, value
      if eq then
        key, value = unescape(sub(piece, 1, eq - 1)), unescape(sub(piece, eq + 1))
      else
        key, value = unescape(piece), true
      end
      if key ~= "" then
        local seen = t[key]
        if seen == nil then
          t[key] = value
        elseif type(seen) == "table" then
          seen[#seen + 1] = value
        else
          t[key] = { seen, value }
        end
      end
    end
    pos = amp + 1
  end
  return t
end

-- What MySQL's string literals escape.
local sql_escapes = { ["\0"] = "\\0", ["\b"] = "\\b", ["\n"] = "\\n", ["\r"] = "\\r",
                      ["\t"] = "\\t", ["\26"] = "\\Z", ["\\"] = "\\\\", ["'"] = "\\'",
                      ['"'] = '\\"' }

--- s quoted as a MySQL string literal (ngx.quote_sql_str).
-- @usage args.quote_sql_str("it's") --> "'it\\'s'"
function args.quote_sql_str(s)
  if type(s) ~= "string" then s = tostring(s) end
  return "'" .. gsub(s, "[%z\b\n\r\t\26\\'\"]", sql_escapes) .. "'"
end

return args
