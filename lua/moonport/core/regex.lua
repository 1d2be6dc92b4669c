--- Regular expressions: PCRE2 patterns for the mock library
-- (server/lua/ffi/regex.c), matched against a whole subject as Java's
-- String.matches (WireMock's) does, within PCRE2's match limits.
-- @module moonport.core.regex

local ffi = require("ffi")
require("moonport.core.base")

ffi.cdef[[
void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen);
int mp_regex_match(void *re, const char *subject, size_t len);
int mp_regex_prefix(void *re, const char *subject, size_t len);
void mp_regex_free(void *re);
]]

local C = ffi.C
local mp_regex_compile = C.mp_regex_compile
local mp_regex_match = C.mp_regex_match
local mp_regex_prefix = C.mp_regex_prefix
local mp_regex_free = C.mp_regex_free

local CASELESS = C.MP_REGEX_CASELESS
local PARTIAL = C.MP_REGEX_PARTIAL
local MATCH = C.MP_REGEX_MATCH
local NOMATCH = C.MP_REGEX_NOMATCH
local LIMIT = C.MP_REGEX_LIMIT

local tostring, setmetatable = tostring, setmetatable
local ffi_string = ffi.string

local Regex = {}
Regex.__index = Regex
local errbuf = ffi.new("char[256]")

local regex = {}

--- Compiles a PCRE2 regular expression that must match a whole subject
-- (as Java's String.matches, which WireMock uses). Returns an object with
-- :match(subject) and :prefix(subject), or nil and the compiler's message.
-- @usage local re = assert(core.regex("/users/[0-9]+"))
function regex.new(pattern, caseless)
  local re = mp_regex_compile(pattern, #pattern, caseless and CASELESS or 0,
                              errbuf, 256)
  if re == nil then return nil, ffi_string(errbuf) end
  return setmetatable({ re = ffi.gc(re, mp_regex_free), source = pattern,
                        caseless = caseless }, Regex)
end

local REGEX_LIMIT = "gave up at PCRE2's match limit (the pattern backtracks too much)"

--- True when the whole of subject matches, false when it does not; nil
-- and a message when the match was given up at PCRE2's limits, which is
-- neither.
-- @usage if re:match(path) then ... end
function Regex:match(subject)
  local rc = mp_regex_match(self.re, subject, #subject)
  if rc == MATCH then return true end
  if rc == NOMATCH then return false end
  if rc == LIMIT then return nil, REGEX_LIMIT end
  return nil, "the match failed (" .. tostring(rc) .. ")"
end

--- How many leading bytes of subject the pattern matches or could match
-- were more to follow (how near subject came); nil when that hit a limit.
-- @usage local near = re:prefix("/users/abc") -- 7 for "/users/[0-9]+"
function Regex:prefix(subject)
  local partial = self.partial
  if partial == nil then
    -- Compiled when first asked: most patterns never are.
    local src = self.source
    partial = mp_regex_compile(src, #src,
                               PARTIAL + (self.caseless and CASELESS or 0),
                               errbuf, 256)
    partial = partial ~= nil and ffi.gc(partial, mp_regex_free) or false
    self.partial = partial
  end
  if not partial then return nil end
  local n = mp_regex_prefix(partial, subject, #subject)
  if n < 0 then return nil end
  return n
end

return regex
