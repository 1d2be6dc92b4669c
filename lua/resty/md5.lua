--- resty.md5 (lua-resty-string's): a running MD5 digest on OpenSSL.
--
--     local md5 = require("resty.md5"):new()
--     md5:update("hello")
--     local digest = md5:final()   -- binary; resty.string's to_hex for hex
--
-- @module resty.md5

local crypto = require("moonport.core.crypto")

local _M = { _VERSION = "0.16" }

--- A new digest (called with ':' or '.'), or nil when it cannot be made:
-- update(s) returns true, final() the binary digest, reset() starts again.
-- @usage local d = require("resty.md5"):new()
function _M.new()
  return crypto.new("md5")
end

return _M
