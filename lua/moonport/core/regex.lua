--- Regular expressions (server/lua/ffi/regex.c): PCRE2 patterns for the
-- mock library, matched against a whole subject as Java's String.matches
-- (WireMock's) does, and patterns for ngx.re (regex.re), matched anywhere
-- from an offset; both within PCRE2's match limits.
-- @module moonport.core.regex

local ffi = require("ffi")
require("moonport.core.base")

ffi.cdef[[
void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen);
int mp_regex_match(void *re, const char *subject, size_t len);
int mp_regex_prefix(void *re, const char *subject, size_t len);
void mp_regex_free(void *re);
void *mp_re_compile(const char *pattern, size_t len, int flags, char *err,
                    size_t errlen);
int mp_re_info(void *re, int *ncaptures, const unsigned char **names,
               int *entry_size);
int mp_re_exec(void *re, const char *subject, size_t len, size_t offset,
               int *ov, char *err, size_t errlen);
void mp_re_free(void *re);
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

-- Patterns for ngx.re --------------------------------------------------------

local mp_re_compile = C.mp_re_compile
local mp_re_info = C.mp_re_info
local mp_re_exec = C.mp_re_exec
local mp_re_free = C.mp_re_free

local ffi_gc, ffi_new = ffi.gc, ffi.new
local info_ncap = ffi.new("int[1]")
local info_names = ffi.new("const unsigned char *[1]")
local info_size = ffi.new("int[1]")

--- The MP_RE_* flags, by OpenResty's option letters (o, the compile
-- cache, is ngx.re's own and has none).
regex.flags = {
  i = C.MP_RE_CASELESS, m = C.MP_RE_MULTILINE, s = C.MP_RE_DOTALL,
  x = C.MP_RE_EXTENDED, a = C.MP_RE_ANCHORED, u = C.MP_RE_UTF,
  D = C.MP_RE_DUPNAMES, J = C.MP_RE_JAVASCRIPT, j = C.MP_RE_JIT,
  d = C.MP_RE_DFA,
}

--- Compiles pattern for ngx.re with flags (a sum of regex.flags values).
-- Returns { re, ncaptures, names = { {group, name}, ... }, ov } or nil and
-- the compiler's message. Free it with regex.re_free when done, or leave
-- it to the garbage collector.
-- @usage local c = assert(regex.re_compile("(\\d+)", 0))
function regex.re_compile(pattern, flags)
  local re = mp_re_compile(pattern, #pattern, flags, errbuf, 256)
  if re == nil then return nil, ffi_string(errbuf) end
  re = ffi_gc(re, mp_re_free)
  local count = mp_re_info(re, info_ncap, info_names, info_size)
  local ncap = info_ncap[0]
  local names = false
  if count > 0 then
    names = {}
    local p, size = info_names[0], info_size[0]
    for i = 0, count - 1 do
      local e = p + i * size
      names[i + 1] = { e[0] * 256 + e[1], ffi_string(e + 2) }
    end
  end
  return { re = re, ncaptures = ncap, names = names,
           ov = ffi_new("int[?]", 2 * (ncap + 1)) }
end

--- Looks for the compiled pattern c in subject from byte offset (0-based)
-- on. Returns true (c.ov holds the groups' offsets, -1 for those that took
-- no part), false, or nil and why.
-- @usage if regex.re_exec(c, s, 0) then local from = c.ov[0] end
function regex.re_exec(c, subject, offset)
  local rc = mp_re_exec(c.re, subject, #subject, offset, c.ov, errbuf, 256)
  if rc == MATCH then return true end
  if rc == NOMATCH then return false end
  if rc == LIMIT then return nil, "pcre2_match() failed: " .. REGEX_LIMIT end
  return nil, ffi_string(errbuf)
end

--- Frees a compiled pattern now rather than when it is collected.
-- @usage regex.re_free(c)
function regex.re_free(c)
  mp_re_free(ffi_gc(c.re, nil))
  c.re = nil
end

return regex
