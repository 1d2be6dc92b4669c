--- Percent-decoding through the core's own decoder (server/lua/ffi/url.c,
-- the one req:query uses), for moonport.url, forms and cookies.
-- @module moonport.core.url

local ffi = require("ffi")
require("moonport.core.base")

ffi.cdef[[
int mp_url_unescape(const char *src, size_t len, int plus_space, char *dst);
]]

local mp_url_unescape = ffi.C.mp_url_unescape

local error, find = error, string.find
local ffi_string, ffi_new = ffi.string, ffi.new

local url = {}

-- The output buffer, at least n bytes: one kept for texts up to KEEP
-- bytes, one of their own for longer ones (the garbage collector takes
-- it back), as core/crypto.lua does.
local KEEP = 64 * 1024
local kept = ffi_new("char[?]", 1024)
local kept_size = 1024
local function buffer(n)
  if n <= kept_size then return kept end
  if n > KEEP then return ffi_new("char[?]", n) end
  kept_size = KEEP
  kept = ffi_new("char[?]", KEEP)
  return kept
end

--- s percent-decoded as req:query decodes: %XX becomes its byte, a "%"
-- not followed by two hex digits stays as it is, and with plus_space "+"
-- becomes a space. A text with nothing to decode comes back as it is.
-- @usage url.unescape("a%20b+c", true) --> "a b c"
function url.unescape(s, plus_space)
  if not find(s, plus_space and "[%%+]" or "%", 1, not plus_space) then return s end
  local len = #s
  local out = buffer(len)
  local n = mp_url_unescape(s, len, plus_space and 1 or 0, out)
  if n < 0 then error("moonport.url.decode: text too long", 3) end
  return ffi_string(out, n)
end

return url
