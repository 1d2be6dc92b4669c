--- Cookies: reading a Cookie header (RFC 6265 section 5.4's syntax, read
-- leniently, as browsers send it), writing Set-Cookie fields (section 4.1's
-- syntax, strictly), and signing values with HMAC-SHA256 so that a
-- client cannot forge or alter them. req:cookie, req:cookies and
-- res:cookie are made of these.
--
--     local cookie = require("moonport").cookie
--     local signed = cookie.sign("user=42", secret)
--     res:cookie("session", signed, {http_only = true, same_site = "Lax"})
--     local value = cookie.verify(req:cookie("session"), secret) -- nil if forged
--
-- @module moonport.cookie

local bit = require("bit")
local crypto = require("moonport.core.crypto")
local unescape = require("moonport.core.url").unescape

local type, error, tostring, pairs = type, error, tostring, pairs
local floor = math.floor
local byte, find, format, gsub, sub, lower, match =
  string.byte, string.find, string.format, string.gsub, string.sub, string.lower, string.match
local concat, date = table.concat, os.date
local bxor, bor = bit.bxor, bit.bor
local hmac, base64_encode = crypto.hmac, crypto.base64_encode

local cookie = {}

-- Reading -----------------------------------------------------------------

--- The cookies of a Cookie header value as a table of names to values:
-- pairs split on ";", spaces and tabs around them trimmed, each split at
-- its first "="; a value in double quotes loses them, then is
-- percent-decoded (res:cookie's encoding; "+" stays "+"). The first of
-- a repeated name wins (browsers send the most specific path first). A
-- pair without "=" counts as a name with the value "", and a pair with
-- an empty name is skipped.
-- @usage cookie.parse('a=1; b="x y"; a=2') --> {a = "1", b = "x y"}
function cookie.parse(header)
  local t = {}
  if header == nil then return t end
  if type(header) ~= "string" then error("moonport.cookie.parse: header must be a string", 2) end
  local len = #header
  local i = 1
  while i <= len do
    local j = find(header, ";", i, true) or len + 1
    local pair = match(sub(header, i, j - 1), "^[ \t]*(.-)[ \t]*$")
    local eq = find(pair, "=", 1, true)
    local name, value
    if eq then
      name = match(sub(pair, 1, eq - 1), "^(.-)[ \t]*$")
      value = match(sub(pair, eq + 1), "^[ \t]*(.*)$")
    else
      name, value = pair, ""
    end
    if name ~= "" and t[name] == nil then
      local n = #value
      if n >= 2 and byte(value, 1) == 34 and byte(value, n) == 34 then
        value = sub(value, 2, n - 1)
      end
      t[name] = unescape(value)
    end
    i = j + 1
  end
  return t
end

-- Writing -----------------------------------------------------------------

-- A token (RFC 9110 section 5.6.2): what a cookie's name must be.
local TOKEN = "^[A-Za-z0-9!#%$%%&'%*%+%-%.%^_`|~]+$"

-- Bytes that are no cookie-octet (RFC 6265 section 4.1.1: controls,
-- space, '"', ',', ';', '\' and bytes past 0x7e), and '%' itself, so
-- that cookie.parse gives back exactly what was written.
local NOT_OCTET = "[^A-Za-z0-9!#%$&'%(%)%*%+%-%./:<=>%?@%[%]%^_`{|}~]"

local function pct(c) return format("%%%02X", byte(c)) end

--- value encoded as a cookie-value: every byte that is no cookie-octet,
-- and "%", as %XX; cookie.parse decodes it back.
-- @usage cookie.encode("a b;c") --> "a%20b%3Bc"
function cookie.encode(value)
  return (gsub(value, NOT_OCTET, pct))
end

local DAYS = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" }
local MONTHS = { "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug",
                 "Sep", "Oct", "Nov", "Dec" }

--- The IMF-fixdate (RFC 9110 section 5.6.7) of t, seconds since the
-- epoch, in English whatever the locale.
-- @usage cookie.http_date(0) --> "Thu, 01 Jan 1970 00:00:00 GMT"
function cookie.http_date(t)
  local d = date("!*t", floor(t))
  return format("%s, %02d %s %04d %02d:%02d:%02d GMT", DAYS[d.wday], d.day,
                MONTHS[d.month], d.year, d.hour, d.min, d.sec)
end

local SAME_SITE = { strict = "Strict", lax = "Lax", none = "None" }
local OPTIONS = { path = true, domain = true, max_age = true, expires = true,
                  secure = true, http_only = true, same_site = true }

-- An attribute value (path, domain) with no control byte and no ';':
-- either would end the attribute, or the field, early.
local function attribute(v, what, option)
  if type(v) ~= "string" or find(v, "[%z\1-\31\127;]") then
    error(what .. ": " .. option .. " must be a string without ';' or control bytes", 4)
  end
  return v
end

-- The Set-Cookie value; what names the public function for errors, which
-- blame that function's caller (level 3: this, the public function, its
-- caller).
local function serialize(what, name, value, opts)
  if type(name) ~= "string" or not find(name, TOKEN) then
    error(what .. ": name must be a token (letters, digits and !#$%&'*+-.^_`|~)", 3)
  end
  if type(value) == "number" then value = tostring(value) end
  if type(value) ~= "string" then error(what .. ": value must be a string", 3) end
  local parts = { name .. "=" .. cookie.encode(value) }
  if opts ~= nil then
    if type(opts) ~= "table" then error(what .. ": opts must be a table", 3) end
    for k in pairs(opts) do
      if not OPTIONS[k] then error(what .. ": unknown option '" .. tostring(k) .. "'", 3) end
    end
    if opts.domain ~= nil then
      parts[#parts + 1] = "Domain=" .. attribute(opts.domain, what, "domain")
    end
    if opts.path ~= nil then
      parts[#parts + 1] = "Path=" .. attribute(opts.path, what, "path")
    end
    local expires = opts.expires
    if expires ~= nil then
      if type(expires) ~= "number" or expires ~= expires or expires < 0 or expires >= 253402300800 then
        error(what .. ": expires must be seconds since the epoch, before the year 10000", 3)
      end
      parts[#parts + 1] = "Expires=" .. cookie.http_date(expires)
    end
    local max_age = opts.max_age
    if max_age ~= nil then
      if type(max_age) ~= "number" or max_age % 1 ~= 0 or max_age > 2 ^ 53 or max_age < -2 ^ 53 then
        error(what .. ": max_age must be an integer number of seconds", 3)
      end
      parts[#parts + 1] = format("Max-Age=%d", max_age)
    end
    if opts.secure then parts[#parts + 1] = "Secure" end
    if opts.http_only then parts[#parts + 1] = "HttpOnly" end
    local same_site = opts.same_site
    if same_site ~= nil then
      local v = type(same_site) == "string" and SAME_SITE[lower(same_site)]
      if not v then error(what .. ": same_site must be 'Strict', 'Lax' or 'None'", 3) end
      if v == "None" and not opts.secure then
        error(what .. ": same_site = 'None' needs secure = true (browsers drop it otherwise)", 3)
      end
      parts[#parts + 1] = "SameSite=" .. v
    end
  end
  return concat(parts, "; ")
end

--- The value of a Set-Cookie field for name=value with attributes opts:
-- path, domain (strings), max_age (seconds, an integer), expires (seconds
-- since the epoch, written as an IMF-fixdate), secure, http_only
-- (booleans), same_site ("Strict", "Lax" or "None", which needs secure).
-- The name must be a token; the value (a string or a number) is encoded
-- by cookie.encode. Raises for anything else.
-- @usage cookie.serialize("id", "a b", {path = "/", max_age = 3600}) --> "id=a%20b; Path=/; Max-Age=3600"
function cookie.serialize(name, value, opts)
  local text = serialize("moonport.cookie.serialize", name, value, opts)
  return text
end

-- For res:cookie, which calls it directly, so that its errors blame the
-- handler's line.
cookie._serialize = serialize

-- Signing -----------------------------------------------------------------

local function check_secret(secret, what)
  if type(secret) ~= "string" or secret == "" then
    error(what .. ": secret must be a non-empty string", 3)
  end
end

-- The signature of value: HMAC-SHA256 under secret, base64url without
-- padding (43 bytes, all of them cookie-octets).
local function signature(value, secret)
  return base64_encode(hmac("sha256", secret, value), true, true)
end

--- value signed with secret: value .. "." .. its HMAC-SHA256 under secret
-- (base64url, 43 bytes). The value stays readable: signing proves it came
-- from the server unaltered, it does not hide it.
-- @usage res:cookie("uid", cookie.sign("42", secret), {http_only = true})
function cookie.sign(value, secret)
  if type(value) == "number" then value = tostring(value) end
  if type(value) ~= "string" then error("moonport.cookie.sign: value must be a string", 2) end
  check_secret(secret, "moonport.cookie.sign")
  return value .. "." .. signature(value, secret)
end

-- Whether a and b, strings of the same length, are equal, in a time that
-- depends on their length only (not on where they first differ).
local function equal(a, b)
  local diff = 0
  for i = 1, #a do diff = bor(diff, bxor(byte(a, i), byte(b, i))) end
  return diff == 0
end

--- The value signed is cookie.sign(value, secret), or nil when signed
-- is nil, is not signed or its signature is wrong (a forged or altered
-- value). secret may be a list of secrets, newest first, so that values
-- signed before a change of secret still verify; the signatures are
-- compared in constant time.
-- @usage local uid = cookie.verify(req:cookie("uid"), secret)
function cookie.verify(signed, secret)
  if type(secret) == "table" then
    for i = 1, #secret do check_secret(secret[i], "moonport.cookie.verify") end
    if secret[1] == nil then error("moonport.cookie.verify: no secret given", 2) end
  else
    check_secret(secret, "moonport.cookie.verify")
  end
  if type(signed) ~= "string" then return nil end
  local dot = match(signed, "^.*()%.")
  if dot == nil then return nil end
  local value, mac = sub(signed, 1, dot - 1), sub(signed, dot + 1)
  if #mac ~= 43 then return nil end
  if type(secret) == "string" then
    if equal(mac, signature(value, secret)) then return value end
    return nil
  end
  local ok = false
  for i = 1, #secret do
    if equal(mac, signature(value, secret[i])) then ok = true end
  end
  if ok then return value end
  return nil
end

return cookie
