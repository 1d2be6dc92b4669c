--- Percent-decoding through the core's own decoder (server/lua/ffi/url.c,
-- the one req:query uses), for moonport.url, forms and cookies.
-- @module moonport.core.url

local ffi = require("ffi")
local base = require("moonport.core.base")

ffi.cdef[[
int mp_url_unescape(const char *src, size_t len, int plus_space, char *dst);
]]

local mp_url_unescape = ffi.C.mp_url_unescape

local error, find = error, string.find
local ffi_string = ffi.string

local url = {}

local buffer = base.out_buffer

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
