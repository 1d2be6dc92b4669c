--- Hashes, HMAC, base64, hex and CRC-32 (server/lua/ffi/crypto.c): MD5
-- and the SHA family from OpenSSL 3, CRC-32 from zlib, base64 with nginx's
-- rules. The ngx compatibility module and resty.md5/sha1/sha256 are made
-- of these.
-- @module moonport.core.crypto

local ffi = require("ffi")
local base = require("moonport.core.base")

ffi.cdef[[
int mp_digest(int alg, const char *data, size_t len, unsigned char *out);
int mp_hmac(int alg, const char *key, size_t klen, const char *data,
            size_t len, unsigned char *out);
void *mp_digest_new(int alg);
int mp_digest_update(void *d, const char *data, size_t len);
int mp_digest_final(void *d, unsigned char *out);
int mp_digest_reset(void *d);
void mp_digest_free(void *d);
int mp_base64_encode(const char *in, size_t len, int flags, char *out,
                     size_t cap);
int mp_base64_decode(const char *in, size_t len, int flags, char *out,
                     size_t cap);
int mp_hex_encode(const char *in, size_t len, char *out, size_t cap);
int mp_crc32(const char *data, size_t len, uint32_t *out);
]]

local C = ffi.C
local mp_digest = C.mp_digest
local mp_hmac = C.mp_hmac
local mp_digest_new = C.mp_digest_new
local mp_digest_update = C.mp_digest_update
local mp_digest_final = C.mp_digest_final
local mp_digest_reset = C.mp_digest_reset
local mp_digest_free = C.mp_digest_free
local mp_base64_encode = C.mp_base64_encode
local mp_base64_decode = C.mp_base64_decode
local mp_hex_encode = C.mp_hex_encode
local mp_crc32 = C.mp_crc32

local NO_PADDING = C.MP_BASE64_NO_PADDING
local URL = C.MP_BASE64_URL

local type, error, setmetatable = type, error, setmetatable
local floor = math.floor
local ffi_string, ffi_new, ffi_gc = ffi.string, ffi.new, ffi.gc

local crypto = {}

--- The algorithms, by name: md5, sha1, sha224, sha256, sha384, sha512.
crypto.algorithms = {
  md5 = C.MP_DIGEST_MD5, sha1 = C.MP_DIGEST_SHA1,
  sha224 = C.MP_DIGEST_SHA224, sha256 = C.MP_DIGEST_SHA256,
  sha384 = C.MP_DIGEST_SHA384, sha512 = C.MP_DIGEST_SHA512,
}
local algorithms = crypto.algorithms

local digest_out = ffi_new("unsigned char[?]", C.MP_DIGEST_MAX)
local crc_out = ffi_new("uint32_t[1]")

local buffer = base.out_buffer

local function alg_of(name, what)
  local alg = algorithms[name]
  if alg == nil then error(what .. ": unknown algorithm '" .. tostring(name) .. "'", 3) end
  return alg
end

--- The binary digest of s with algorithm name ("md5", "sha1", ...).
-- @usage local bin = crypto.digest("sha256", body)
function crypto.digest(name, s)
  local n = mp_digest(alg_of(name, "digest"), s, #s, digest_out)
  if n < 0 then error("digest: failed (" .. n .. ")", 2) end
  return ffi_string(digest_out, n)
end

--- The binary HMAC of s under key with algorithm name.
-- @usage local mac = crypto.hmac("sha1", secret, message)
function crypto.hmac(name, key, s)
  local n = mp_hmac(alg_of(name, "hmac"), key, #key, s, #s, digest_out)
  if n < 0 then error("hmac: failed (" .. n .. ")", 2) end
  return ffi_string(digest_out, n)
end

--- Base64 of s; no_padding leaves out the '='s, url uses '-' and '_'.
-- @usage crypto.base64_encode("hello") --> "aGVsbG8="
function crypto.base64_encode(s, no_padding, url)
  local len = #s
  local cap = floor((len + 2) / 3) * 4
  local out = buffer(cap)
  local flags = (no_padding and NO_PADDING or 0) + (url and URL or 0)
  local n = mp_base64_encode(s, len, flags, out, cap)
  if n < 0 then error("base64: input too long", 2) end
  return ffi_string(out, n)
end

--- The bytes base64 text s stands for, or nil when it is not base64
-- (nginx's rules: padding optional, nothing after the first '=' read).
-- @usage crypto.base64_decode("aGVsbG8=") --> "hello"
function crypto.base64_decode(s, url)
  local len = #s
  local cap = floor(len / 4) * 3 + 3
  local out = buffer(cap)
  local n = mp_base64_decode(s, len, url and URL or 0, out, cap)
  if n < 0 then return nil end
  return ffi_string(out, n)
end

--- Lower-case hex of the bytes of s.
-- @usage crypto.hex("\255\1") --> "ff01"
function crypto.hex(s)
  local len = #s
  local out = buffer(len * 2)
  local n = mp_hex_encode(s, len, out, len * 2)
  if n < 0 then error("hex: input too long", 2) end
  return ffi_string(out, n)
end

--- The CRC-32 of s (zlib's), a number.
-- @usage crypto.crc32("hello") --> 907060870
function crypto.crc32(s)
  mp_crc32(s, #s, crc_out)
  return crc_out[0]
end

-- Running digests ---------------------------------------------------------

local Digest = {}
Digest.__index = Digest

--- A running digest with algorithm name, with :update(s), :final() and
-- :reset(); nil when it cannot be made.
-- @usage local d = crypto.new("sha1"); d:update("a"); local bin = d:final()
function crypto.new(name)
  local d = mp_digest_new(alg_of(name, "digest"))
  if d == nil then return nil end
  return setmetatable({ _ctx = ffi_gc(d, mp_digest_free) }, Digest)
end

--- Adds s to the digest. True, or false once final was called (until
-- reset).
-- @usage d:update(chunk)
function Digest:update(s)
  if type(s) ~= "string" then s = tostring(s) end
  return mp_digest_update(self._ctx, s, #s) == 0
end

--- The binary digest of everything added; nil when it was taken already.
-- @usage local bin = d:final()
function Digest:final()
  local n = mp_digest_final(self._ctx, digest_out)
  if n < 0 then return nil end
  return ffi_string(digest_out, n)
end

--- Starts the digest again, empty. True.
-- @usage d:reset()
function Digest:reset()
  return mp_digest_reset(self._ctx) == 0
end

return crypto
